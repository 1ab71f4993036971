"""Section ``netconf``: NETCONF and YANG basics (RFC 6241, 6022, 7950, 8525), read-only."""

from __future__ import annotations

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.conformance.checks import Face, Findings, Level, check
from an_agent.conformance.netconf_side import (
    BASE_10,
    BASE_11,
    YANG_LIBRARY_CAPABILITY,
    NetconfSide,
    module_capabilities,
)
from an_agent.errors import RpcError, YangError
from an_agent.model.ns import NETCONF_BASE_NS, NETCONF_MONITORING_NS

_NC = Face.NETCONF
HELLO_BASE = check(
    "netconf.hello-base",
    "the server's hello advertises the base capability urn:ietf:params:netconf:base:1.1",
    "RFC 6241",
    "8.1",
    Level.MUST,
    _NC,
)
HELLO_SESSION = check(
    "netconf.hello-session-id",
    "the server's hello carries a session-id (a positive integer)",
    "RFC 6241",
    "8.1",
    Level.MUST,
    _NC,
)
HELLO_MODULES = check(
    "netconf.hello-modules",
    "every module capability in the hello names its module, and its revision as YYYY-MM-DD",
    "RFC 7950",
    "5.6.4",
    Level.MUST,
    _NC,
)
MONITORING = check(
    "netconf.monitoring",
    "the server implements ietf-netconf-monitoring (<get-schema>, /netconf-state/schemas)",
    "RFC 6022",
    "2",
    Level.SHOULD,
    _NC,
)
SCHEMAS_LIST = check(
    "netconf.schemas-list",
    "/netconf-state/schemas lists every module the hello advertises",
    "RFC 6022",
    "2.1.3",
    Level.SHOULD,
    _NC,
)
LIBRARY_CAPABILITY = check(
    "netconf.yang-library-capability",
    "a server of YANG 1.1 modules advertises the yang-library capability",
    "RFC 7950",
    "5.6.4 (RFC 8526 section 2 for yang-library:1.1)",
    Level.MUST,
    _NC,
)
LIBRARY_MODULES = check(
    "netconf.yang-library-modules",
    "/yang-library (or /modules-state) lists every module the hello advertises",
    "RFC 8525",
    "3 (RFC 7950 5.6.4)",
    Level.MUST,
    _NC,
)
GET_SCHEMA = check(
    "netconf.get-schema",
    "<get-schema> returns the text of every module the hello or the library names, at its revision",
    "RFC 6022",
    "3.1",
    Level.MUST,
    _NC,
)
GET_SCHEMA_UNKNOWN = check(
    "netconf.get-schema-unknown",
    "<get-schema> of a module the server does not have is refused with error-tag invalid-value",
    "RFC 6022",
    "3.1",
    Level.MUST,
    _NC,
)
COMPILE = check(
    "netconf.modules-compile",
    "the served modules compile together with libyang, every import served too",
    "RFC 7950",
    "5.1, 14",
    Level.MUST,
    _NC,
)
GET_VALID = check(
    "netconf.get-valid",
    "the <get> reply (whole datastore, state included) is valid against the served modules",
    "RFC 6241",
    "7.7 (RFC 7950 8)",
    Level.MUST,
    _NC,
)
RPC_ERROR = check(
    "netconf.rpc-error",
    "an unknown operation is answered with a well-formed <rpc-error> and the session goes on",
    "RFC 6241",
    "4.3, appendix A",
    Level.MUST,
    _NC,
)

ERROR_TYPES = ("transport", "rpc", "protocol", "application")
ERROR_TAGS = (
    "in-use",
    "invalid-value",
    "too-big",
    "missing-attribute",
    "bad-attribute",
    "unknown-attribute",
    "missing-element",
    "bad-element",
    "unknown-element",
    "unknown-namespace",
    "access-denied",
    "lock-denied",
    "resource-denied",
    "rollback-failed",
    "data-exists",
    "data-missing",
    "operation-not-supported",
    "operation-failed",
    "partial-operation",
    "malformed-message",
)
PROBE_NS = "urn:an-agent:conformance:no-such-module"
_E = f"{{{NETCONF_BASE_NS}}}"


def run(side: NetconfSide, found: Findings) -> None:
    """Every check of the section, in order (transport failures propagate: the runner closes the face)."""
    caps = side.capabilities
    found.judge(
        HELLO_BASE,
        BASE_11 in caps,
        "base:1.1 advertised"
        if BASE_11 in caps
        else "base:1.1 missing" + (" (only base:1.0: a NETCONF 1.0 server)" if BASE_10 in caps else ""),
        received="\n".join(caps),
        expected=BASE_11,
    )
    try:
        session_id = side.nc.session_id
    except (TypeError, ValueError):
        found.failed(HELLO_SESSION, "the hello carries no session-id, or one that is not a number")
    else:
        found.judge(HELLO_SESSION, session_id > 0, f"session-id {session_id}")
    modules, problems = module_capabilities(caps)
    found.judge(
        HELLO_MODULES,
        bool(modules) and not problems,
        f"{len(modules)} module capabilities, all well formed"
        if modules and not problems
        else ("; ".join(problems) or "the hello advertises no YANG module"),
        received="\n".join(m.source for m in modules),
    )
    monitoring = side.advertises(NETCONF_MONITORING_NS)
    found.judge(
        MONITORING,
        monitoring,
        "ietf-netconf-monitoring advertised" if monitoring else "ietf-netconf-monitoring is not advertised",
    )
    _schemas_list(side, found, monitoring)
    _library(side, found)
    _get_schema(side, found, monitoring)
    _compile_and_get(side, found)
    _rpc_error(side, found)


def _schemas_list(side: NetconfSide, found: Findings, monitoring: bool) -> None:
    if not monitoring:
        found.skipped(SCHEMAS_LIST, "the server does not implement ietf-netconf-monitoring")
        return
    listed = side.schemas_list()
    if isinstance(listed, RpcError):
        found.failed(SCHEMAS_LIST, f"<get> of /netconf-state/schemas refused: {listed}")
        return
    names = {(m.name, m.revision) for m in listed} | {(m.name, None) for m in listed}
    missing = [m.label for m in side.hello_modules if (m.name, m.revision) not in names]
    found.judge(
        SCHEMAS_LIST,
        not missing,
        f"{len(listed)} schemas listed, every advertised module among them"
        if not missing
        else f"advertised but not listed: {', '.join(missing)}",
        received=", ".join(m.label for m in listed),
    )


def _library(side: NetconfSide, found: Findings) -> None:
    yang_11 = side.yang_11() if side.advertises(NETCONF_MONITORING_NS) else []
    library_caps = [c for c in side.capabilities if c.startswith(YANG_LIBRARY_CAPABILITY)]
    if library_caps:
        found.passed(LIBRARY_CAPABILITY, f"advertised: {library_caps[0]}")
    elif yang_11:
        found.failed(
            LIBRARY_CAPABILITY,
            f"the server serves YANG 1.1 modules ({', '.join(yang_11)}) but advertises no yang-library capability",
            received="\n".join(side.capabilities),
            expected=f"{YANG_LIBRARY_CAPABILITY}1.0?revision=...&module-set-id=... or "
            f"{YANG_LIBRARY_CAPABILITY}1.1?revision=...&content-id=...",
        )
    else:
        found.skipped(LIBRARY_CAPABILITY, "every served module is YANG 1.0 (no yang-library needed)")
    library = side.library()
    if library.where is None:
        if yang_11 or library_caps:
            found.failed(LIBRARY_MODULES, f"no module list could be read: {library.why_not}")
        else:
            found.skipped(LIBRARY_MODULES, "YANG 1.0 server without a yang-library")
        return
    listed = {(m.name, m.revision) for m in library.modules}
    missing = [m.label for m in side.hello_modules if (m.name, m.revision) not in listed]
    found.judge(
        LIBRARY_MODULES,
        not missing,
        f"{library.where} lists {len(library.modules)} modules, every advertised one among them"
        if not missing
        else f"{library.where} does not list: {', '.join(missing)}",
        received=", ".join(m.label for m in library.modules),
    )


def _get_schema(side: NetconfSide, found: Findings, monitoring: bool) -> None:
    if not monitoring:
        found.skipped(GET_SCHEMA, "the server does not implement ietf-netconf-monitoring")
        found.skipped(GET_SCHEMA_UNKNOWN, "the server does not implement ietf-netconf-monitoring")
        return
    fetched = side.fetched()
    found.judge(
        GET_SCHEMA,
        bool(fetched.texts) and not fetched.problems,
        f"{len(fetched.texts)} modules and {len(fetched.submodules)} submodules fetched"
        if not fetched.problems
        else "; ".join(fetched.problems),
        sent="<get-schema> of " + ", ".join(fetched.asked),
    )
    probe = etree.Element(f"{{{NETCONF_MONITORING_NS}}}get-schema", nsmap=default_ns(NETCONF_MONITORING_NS))
    etree.SubElement(probe, f"{{{NETCONF_MONITORING_NS}}}identifier").text = "an-agent-conformance-no-such-module"
    reply = side.step("<get-schema> of a module that does not exist", lambda: side.nc.exchange(probe))
    errors = reply.findall(_E + "rpc-error")
    tags = [e.findtext(_E + "error-tag") for e in errors]
    found.judge(
        GET_SCHEMA_UNKNOWN,
        "invalid-value" in tags,
        "refused with invalid-value" if "invalid-value" in tags else f"answered with error-tags {tags or 'none'}",
        sent=_xml(probe),
        received=_xml(reply),
        expected="<rpc-error> with <error-tag>invalid-value</error-tag>",
    )


def _compile_and_get(side: NetconfSide, found: Findings) -> None:
    fetched = side.fetched()
    if not fetched.texts:
        found.failed(COMPILE, "no module text could be fetched to compile")
        found.skipped(GET_VALID, "no compiled modules to validate against")
        return
    compiled = side.compiled()
    if isinstance(compiled, YangError):
        found.failed(COMPILE, str(compiled), sent="modules: " + ", ".join(sorted(fetched.texts)))
        found.skipped(GET_VALID, "the served modules do not compile")
        return
    found.passed(COMPILE, f"{len(fetched.texts)} modules compile together: {', '.join(sorted(fetched.texts))}")
    data = side.step("<get> (whole datastore)", lambda: side.nc.get())
    text = etree.tostring(data, encoding="unicode")
    try:
        compiled.validate_data(text)
    except RpcError as exc:
        found.failed(
            GET_VALID,
            f"libyang rejects the reply: {exc}",
            received=text,
            expected="data valid against the modules fetched with <get-schema>",
        )
        return
    found.passed(GET_VALID, f"the reply ({len(text)} characters) is valid against the served modules")


def _rpc_error(side: NetconfSide, found: Findings) -> None:
    probe = etree.Element(f"{{{PROBE_NS}}}no-such-operation", nsmap=default_ns(PROBE_NS))
    reply = side.step("an unknown operation", lambda: side.nc.exchange(probe))
    problems = rpc_error_problems(reply, ("unknown-element", "unknown-namespace", "operation-not-supported"))
    # Any reply to the next request, even a refusal, shows the session survived; a dead one raises.
    follow_up = etree.Element(_E + "get-config", nsmap=default_ns(NETCONF_BASE_NS))
    etree.SubElement(etree.SubElement(follow_up, _E + "source"), _E + "running")
    etree.SubElement(follow_up, _E + "filter", type="subtree").append(etree.Element(f"{{{PROBE_NS}}}nothing"))
    side.step("<get-config> after the error", lambda: side.nc.exchange(follow_up))
    found.judge(
        RPC_ERROR,
        not problems,
        "well-formed rpc-error; the session answers the next request" if not problems else "; ".join(problems),
        sent=_xml(probe),
        received=_xml(reply),
        expected="<rpc-error> with error-type rpc or protocol or application, error-tag unknown-element, "
        "unknown-namespace or operation-not-supported, error-severity error",
    )


def rpc_error_problems(reply: etree._Element, tags: tuple[str, ...]) -> list[str]:
    """What is wrong with ``reply`` as an rpc-error with one of ``tags`` (empty: nothing)."""
    errors = reply.findall(_E + "rpc-error")
    if not errors:
        return ["the reply holds no <rpc-error>"]
    problems = []
    for error in errors:
        error_type = (error.findtext(_E + "error-type") or "").strip()
        tag = (error.findtext(_E + "error-tag") or "").strip()
        severity = (error.findtext(_E + "error-severity") or "").strip()
        if error_type not in ERROR_TYPES:
            problems.append(f"error-type {error_type or '(missing)'} is not one of {', '.join(ERROR_TYPES)}")
        if tag not in ERROR_TAGS:
            problems.append(f"error-tag {tag or '(missing)'} is not an RFC 6241 appendix A tag")
        elif tag not in tags:
            problems.append(f"error-tag {tag}, expected one of {', '.join(tags)}")
        if severity not in ("error", "warning"):
            problems.append(f"error-severity {severity or '(missing)'} is not error or warning")
    return problems


def _xml(element: etree._Element) -> str:
    return etree.tostring(element, encoding="unicode")
