"""The data both servers serve, and the requests the benchmarks send.

The benchmark profile is an agent profile of the size the draft's use cases
imply (three skills, two authentication methods); tasks are the draft's
taskAssign entries with a prompt content. Every optional leaf that has a
default is set explicitly, so the `<get-config>` answer does not depend on a
server's with-defaults mode.
"""

from __future__ import annotations

import json
from typing import TypeAlias
from xml.sax.saxutils import escape

from lxml import etree

BASE_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
IRTF_NS = "urn:ietf:params:xml:ns:yang:irtf-agent"
NOTIF_NS = "urn:ietf:params:xml:ns:netconf:notification:1.0"

GET_PROFILE = f'<get><filter type="subtree"><agent xmlns="{IRTF_NS}"/></filter></get>'
GET_CONFIG_TASKS = (
    f'<get-config><source><running/></source><filter type="subtree"><tasks xmlns="{IRTF_NS}"/></filter></get-config>'
)
CREATE_SUBSCRIPTION = f'<create-subscription xmlns="{NOTIF_NS}"/>'

_SKILLS = (
    (
        "fault-diagnosis",
        "Finds the root cause of RAN alarms and base-station outages.",
        ["fault", "RAN", "root-cause"],
        "Diagnose the outage of base stations in cluster 12",
    ),
    (
        "energy-saving",
        "Puts idle cells to sleep and wakes them on load.",
        ["energy", "RAN", "sleep"],
        "Reduce energy use of the cells in area 3 at night",
    ),
    (
        "coverage-optimization",
        "Tunes antenna tilt and power to restore coverage.",
        ["optimization", "coverage"],
        "Restore coverage around site 4411",
    ),
)

Json: TypeAlias = dict[str, "Json"] | list["Json"] | str | bool


def profile(name: str = "IRTF-an-agent-bench-1.0") -> dict[str, Json]:
    """The benchmark profile: the content of `/irtf-agent:agent` as RFC 7951 JSON (without module prefix)."""
    return {
        "name": name,
        "alias": "bench agent",
        "description": "Wireless-domain agent used by the an-agent benchmarks: diagnoses faults, "
        "saves energy and optimises coverage for the RAN it manages.",
        "type": "fault",
        "skills": {
            "skill": [
                {
                    "skill-name": skill,
                    "skill-description": text,
                    "skill-tags": list(tags),
                    "input-modes": ["text", "application/json;schema=ran-fault-v1"],
                    "output-modes": ["text", "application/json;schema=ran-fault-result-v1"],
                    "examples": [example],
                }
                for skill, text, tags, example in _SKILLS
            ]
        },
        "version": "1.0.0",
        "provider": "an-agent",
        "domain": "Wireless",
        "capability": {
            "streaming": False,
            "push-notifications": True,
            "negotiate": ["acp-task-feasibility-negotiation-v1.0", "acp-task-fulfillment-negotiation-v1.0"],
        },
        "management-object": "subnet 10.12.0.0/16",
        "authentication": {
            "authentication-methods": [
                {"accessinfo-id": "ssh-password", "scheme": "SSH password"},
                {"accessinfo-id": "ssh-key", "scheme": "SSH public key"},
            ]
        },
    }


def profile_json(name: str = "IRTF-an-agent-bench-1.0") -> str:
    """The benchmark profile as an RFC 7951 JSON document (what `an-agent serve --profile` reads)."""
    return json.dumps({"irtf-agent:agent": profile(name)}, indent=1)


def profile_xml(name: str = "IRTF-an-agent-bench-1.0") -> str:
    """The same profile as the XML element `/irtf-agent:agent`."""
    return _element("agent", profile(name), IRTF_NS)


def _element(tag: str, value: Json, namespace: str | None = None) -> str:
    attr = f' xmlns="{namespace}"' if namespace else ""
    if isinstance(value, list):
        return "".join(_element(tag, item) for item in value)
    if isinstance(value, dict):
        inner = "".join(_element(key, item) for key, item in value.items())
    elif isinstance(value, bool):
        inner = "true" if value else "false"
    else:
        inner = escape(value)
    return f"<{tag}{attr}>{inner}</{tag}>"


def task_id(index: int) -> str:
    """The id of the benchmark task number `index`."""
    return f"bench-task-{index:05d}"


def task_xml(index: int) -> str:
    """One `/tasks/task` entry as created by taskAssign."""
    content = (
        '<content namespace="prompt">\n##target object\n<object>base station gNB-'
        f"{index:05d}</object>\n##task description\n<description>Diagnose why gNB-{index:05d} "
        "went out of service and restore it.</description>\n##environmental information\n"
        "<environmentInput>alarm 29201 since 02:14, neighbours up</environmentInput>"
    )
    return (
        "<task>"
        f"<task-id>{task_id(index)}</task-id>"
        "<task-sendFrom>IRTF-cross-domain-1.0</task-sendFrom><task-sendTo>IRTF-an-agent-bench-1.0</task-sendTo>"
        "<commuType>taskAssign</commuType>"
        f"<content>{escape(content)}</content>"
        "<task-subscription><subscript-protocol>NETCONF</subscript-protocol>"
        "<subscript-method>create-subscription</subscript-method></task-subscription>"
        "<task-async>true</task-async>"
        "<expected-response>text</expected-response>"
        "</task>"
    )


def tasks_xml(count: int, start: int = 0) -> str:
    """The `/irtf-agent:tasks` element holding tasks `start` .. `start + count - 1`."""
    return f'<tasks xmlns="{IRTF_NS}">' + "".join(task_xml(i) for i in range(start, start + count)) + "</tasks>"


def edit_config(config_xml: str) -> str:
    """An `<edit-config>` on running that merges `config_xml`."""
    return f"<edit-config><target><running/></target><config>{config_xml}</config></edit-config>"


def same_data(reply_a: str, reply_b: str) -> bool:
    """True when two <rpc-reply> documents carry the same <data>.

    Sibling order is ignored (netconfd sorts system-ordered lists and puts a
    list's key where the grouping defines it) and so is whitespace-only text.
    """
    return _canonical_data(reply_a) == _canonical_data(reply_b)


Canonical: TypeAlias = tuple[str, str, tuple["Canonical", ...]]


def _canonical_data(reply: str) -> tuple[Canonical, ...]:
    root = etree.fromstring(reply.encode(), etree.XMLParser(remove_blank_text=True))
    data = root.find(f"{{{BASE_NS}}}data")
    return () if data is None else _canonical_children(data)


def _canonical_children(element: etree._Element) -> tuple[Canonical, ...]:
    return tuple(sorted(_canonical(child) for child in element if isinstance(child.tag, str)))


def _canonical(element: etree._Element) -> Canonical:
    return (str(element.tag), (element.text or "").strip(), _canonical_children(element))
