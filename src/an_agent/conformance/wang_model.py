"""Section ``wang``, part one: draft-wang-nmrg-magent-im-00's data model, read over NETCONF.

The module the server implements, the nodes its irtf-agent has, and the profile it answers. Levels:
the draft has no RFC 2119 keyword outside its boilerplate, so a check is MUST where its model requires
something (a leaf it marks mandatory, the Appendix A module) and SHOULD where it says "should".
"""

from __future__ import annotations

import re

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.conformance.checks import Face, Findings, Level, check
from an_agent.conformance.netconf_side import NOTIFICATION_CAPABILITY, NetconfSide
from an_agent.errors import RpcError, YangError
from an_agent.model import IRTF_AGENT_NS
from an_agent.model.ns import NETCONF_BASE_NS

DRAFT = "draft-wang-nmrg-magent-im-00"
_NC = Face.NETCONF
MODULE = check("wang.module", "the server implements module irtf-agent", DRAFT, "appendix A", Level.MUST, _NC)
MODEL = check(
    "wang.model",
    "the served irtf-agent has the draft's nodes: /agent, /tasks/task (key task-id) with content, task-async, "
    "task-status (config false), the task-negotiate RPC and the condition-notifications notification",
    DRAFT,
    "5.1-5.4, appendix A",
    Level.MUST,
    _NC,
)
PROFILE = check(
    "wang.profile", "<get> of /agent answers the profile (CapabilityRequest)", DRAFT, "5.1", Level.MUST, _NC
)
PROFILE_MANDATORY = check(
    "wang.profile-mandatory",
    "the profile has the leaves the draft marks mandatory: name, version, provider",
    DRAFT,
    "5.1",
    Level.MUST,
    _NC,
)
PROFILE_READ_ONLY = check(
    "wang.profile-read-only",
    "the profile is read-only: <get-config> of running does not return /agent",
    DRAFT,
    "5.1",
    Level.SHOULD,
    _NC,
)
SKILLS = check(
    "wang.skills",
    "the profile lists skills, each with a name, input modes and output modes",
    DRAFT,
    "5.1",
    Level.SHOULD,
    _NC,
)
PUSH = check(
    "wang.push-notifications",
    "a profile claiming push-notifications advertises the NETCONF notification capability",
    DRAFT,
    "5.1 (RFC 5277 3.1)",
    Level.MUST,
    _NC,
)
_A = f"{{{IRTF_AGENT_NS}}}"
_E = f"{{{NETCONF_BASE_NS}}}"
MANDATORY = ("name", "version", "provider")


def read(side: NetconfSide, found: Findings) -> etree._Element | None:
    """The data-model checks; returns the profile (None when there is none to read).

    A server without irtf-agent fails `MODULE` and has the rest of the section skipped.
    """
    if not side.serves_module("irtf-agent"):
        found.failed(MODULE, "neither the hello nor the yang-library names irtf-agent")
        found.skip_pending("the server does not implement irtf-agent", section="wang")
        return None
    found.passed(MODULE, "irtf-agent is advertised")
    _model(side, found)
    return _profile(side, found)


def _model(side: NetconfSide, found: Findings) -> None:
    compiled = side.compiled()
    text = side.fetched().texts.get("irtf-agent")
    if isinstance(compiled, YangError) or text is None:
        why = compiled if isinstance(compiled, YangError) else "<get-schema> did not return irtf-agent"
        found.failed(MODEL, f"cannot inspect the served irtf-agent: {why}")
        return
    have: list[str] = []
    missing: list[str] = []
    for path, what in (
        ("/irtf-agent:agent", "container agent"),
        ("/irtf-agent:tasks/task", "list tasks/task"),
        ("/irtf-agent:tasks/task/content", "leaf content"),
        ("/irtf-agent:tasks/task/task-async", "leaf task-async"),
        ("/irtf-agent:tasks/task/task-status", "leaf task-status"),
    ):
        node = compiled.schema_node_by_path(path)
        (have if node is not None else missing).append(what)
        if path.endswith("/task") and node is not None and list(node.keys) != ["task-id"]:
            missing.append(f"key task-id (the list's keys are {list(node.keys)})")
        if path.endswith("task-status") and node is not None and node.config:
            missing.append("task-status config false (it is config true)")
        if path.endswith("agent") and node is not None and node.config:
            have.append("(agent is config true here)")
    for pattern, what in (
        (r"\brpc\s+task-negotiate\b", "rpc task-negotiate"),
        (r"\bnotification\s+condition-notifications\b", "notification condition-notifications"),
    ):
        (have if re.search(pattern, text) else missing).append(what)
    found.judge(
        MODEL,
        not missing,
        ("serves " + ", ".join(have)) + (f"; missing: {', '.join(missing)}" if missing else ""),
    )


def _profile(side: NetconfSide, found: Findings) -> etree._Element | None:
    filter_ = etree.Element(_A + "agent")
    try:
        data = side.step("<get> /agent", lambda: side.nc.get(filter=filter_))
    except RpcError as exc:
        found.failed(PROFILE, f"<get> of /agent refused: {exc}")
        found.skip_pending("no profile to inspect", section="wang")
        return None
    agent = data.find(_A + "agent")
    if not found.judge(
        PROFILE,
        agent is not None,
        "the profile came back" if agent is not None else "the reply has no /agent",
        received=etree.tostring(data, encoding="unicode"),
    ):
        for c in (PROFILE_MANDATORY, PROFILE_READ_ONLY, SKILLS, PUSH):
            found.skipped(c, "no profile to inspect")
        return None
    assert agent is not None
    absent = [leaf for leaf in MANDATORY if not (agent.findtext(_A + leaf) or "").strip()]
    found.judge(
        PROFILE_MANDATORY,
        not absent,
        "name, version and provider present" if not absent else f"missing or empty: {', '.join(absent)}",
    )
    config = side.step("<get-config> /agent", lambda: side.nc.exchange(_get_config(_A + "agent")))
    in_config = config.find(f"{_E}data/{_A}agent") is not None
    found.judge(
        PROFILE_READ_ONLY,
        not in_config and config.find(_E + "rpc-error") is None,
        "/agent is not configuration" if not in_config else "<get-config> returns /agent: it is configuration",
        received=etree.tostring(config, encoding="unicode"),
    )
    skills = agent.findall(f"{_A}skills/{_A}skill")
    lacking = [
        (s.findtext(_A + "skill-name") or "(unnamed)")
        for s in skills
        if not s.findtext(_A + "skill-name")
        or s.find(_A + "input-modes") is None
        or s.find(_A + "output-modes") is None
    ]
    found.judge(
        SKILLS,
        bool(skills) and not lacking,
        f"{len(skills)} skills, each with name and modes"
        if skills and not lacking
        else ("no skills" if not skills else f"skills without a name or modes: {', '.join(lacking)}"),
    )
    push = agent.findtext(f"{_A}capability/{_A}push-notifications")
    if push != "true":
        found.skipped(PUSH, "the profile does not claim push-notifications")
    else:
        found.judge(
            PUSH,
            side.advertises(NOTIFICATION_CAPABILITY),
            "notification capability advertised"
            if side.advertises(NOTIFICATION_CAPABILITY)
            else f"push-notifications true but {NOTIFICATION_CAPABILITY} is not advertised",
        )
    return agent


def _get_config(tag: str) -> etree._Element:
    rpc = etree.Element(_E + "get-config", nsmap=default_ns(NETCONF_BASE_NS))
    etree.SubElement(etree.SubElement(rpc, _E + "source"), _E + "running")
    etree.SubElement(rpc, _E + "filter", type="subtree").append(etree.Element(tag))
    return rpc
