"""YangContext: module list, schema lookups, conversions, sharing between threads."""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from yangdocs import AGT, data_param, task

from an_agent.errors import RpcError, YangError
from an_agent.yang import MODULES_DIR, YangContext

NCM = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"


# ----------------------------------------------------------------- modules


def test_modules_lists_shipped_modules_and_their_imports(ctx: YangContext) -> None:
    by_name = {m.name: m for m in ctx.modules()}
    agent = by_name["irtf-agent"]
    assert (agent.revision, agent.namespace, agent.prefix, agent.implemented) == ("2025-06-01", AGT, "agtask", True)
    assert agent.capability == f"{AGT}?module=irtf-agent&revision=2025-06-01"
    msg = by_name["agent-message"]
    assert (msg.namespace, msg.prefix) == ("urn:ietf:params:xml:ns:yang:agent-message", "agtmsg")
    assert by_name["ietf-netconf-monitoring"].revision == "2010-10-04"
    features = ("writable-running", "candidate", "confirmed-commit", "rollback-on-error", "validate", "xpath")
    assert by_name["ietf-netconf"].features == features
    assert by_name["ietf-netconf"].capability.endswith("&features=" + ",".join(features))
    assert by_name["ietf-origin"].implemented is False  # imported by ietf-netconf-nmda, no origin metadata
    types = by_name["ietf-yang-types"]
    assert (types.implemented, types.path, types.revision) == (False, None, "2013-07-15")
    assert types.text.startswith("module ietf-yang-types")
    shipped = {p.name.split("@")[0] for p in MODULES_DIR.glob("*.yang")}
    assert {m.name for m in ctx.modules() if m.implemented} == shipped - {"ietf-origin"}


def test_module_text_is_the_shipped_file(ctx: YangContext) -> None:
    for info in ctx.modules():
        if info.path is not None:
            assert Path(info.path).parent == MODULES_DIR
            assert Path(info.path).name == f"{info.name}@{info.revision}.yang"
            assert info.text == Path(info.path).read_text(encoding="utf-8")
    assert ctx.module("irtf-agent", "2025-06-01") is not None
    assert ctx.module("irtf-agent", "1999-01-01") is None


def test_default_is_shared(ctx: YangContext) -> None:
    assert YangContext.default() is YangContext.default() is ctx


def test_environment_search_paths_are_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    newer = (MODULES_DIR / "agent-message@2025-06-01.yang").read_text(encoding="utf-8")
    (tmp_path / "agent-message@2099-01-01.yang").write_text(newer.replace("revision 2025-06-01", "revision 2099-01-01"))
    monkeypatch.setenv("YANGPATH", str(tmp_path))
    monkeypatch.setenv("YANG_MODPATH", str(tmp_path))
    assert YangContext().module("agent-message") == YangContext.default().module("agent-message")
    assert YangContext().module("agent-message", "2025-06-01") is not None


def test_a_broken_module_directory_is_a_yang_error(tmp_path: Path) -> None:
    with pytest.raises(YangError, match="no YANG modules"):
        YangContext(tmp_path)
    shutil.copy(MODULES_DIR / "irtf-agent@2025-06-01.yang", tmp_path)  # its import agent-message is missing
    with pytest.raises(YangError, match="irtf-agent"):
        YangContext(tmp_path)


# ------------------------------------------------------------- schema_node


def test_schema_node_list(ctx: YangContext) -> None:
    node = ctx.schema_node(((AGT, "tasks"), (AGT, "task")))
    assert node is not None
    assert (node.kind, node.keys, node.config, node.module, node.ordered_by_user) == (
        "list",
        ("task-id",),
        True,
        "irtf-agent",
        False,
    )
    key = ctx.schema_node(((AGT, "tasks"), (AGT, "task"), (AGT, "task-id")))
    assert key is not None and key.is_key and key.kind == "leaf"
    schema = ctx.schema_node(((NCM, "netconf-state"), (NCM, "schemas"), (NCM, "schema")))
    assert schema is not None and schema.keys == ("identifier", "version", "format") and not schema.config


def test_schema_node_leaf_list_and_leaf(ctx: YangContext) -> None:
    refs = ctx.schema_node(((AGT, "tasks"), (AGT, "task"), (AGT, "msg-data")))
    assert refs is not None and (refs.kind, refs.config) == ("leaf-list", True)
    negotiate = ctx.schema_node(((AGT, "agent"), (AGT, "capability"), (AGT, "negotiate")))
    assert negotiate is not None and (negotiate.kind, negotiate.config) == ("leaf-list", False)
    status = ctx.schema_node(((AGT, "tasks"), (AGT, "task"), (AGT, "task-status")))
    assert status is not None and (status.kind, status.config, status.default) == ("leaf", False, None)
    flag = ctx.schema_node(((AGT, "tasks"), (AGT, "task"), (AGT, "task-async")))
    assert flag is not None and flag.default == "false"
    content = ctx.schema_node(((AGT, "tasks"), (AGT, "task"), (AGT, "content")))
    assert content is not None and content.mandatory


def test_schema_node_containers(ctx: YangContext) -> None:
    agent = ctx.schema_node(((AGT, "agent"),))
    assert agent is not None and (agent.kind, agent.config, agent.presence) == ("container", False, False)
    response = ctx.schema_node(((AGT, "context"), (AGT, "response-info")))
    assert response is not None and response.presence
    # choice and case are transparent, as in instance documents
    lock = ctx.schema_node(
        ((NCM, "netconf-state"), (NCM, "datastores"), (NCM, "datastore"), (NCM, "locks"), (NCM, "global-lock"))
    )
    assert lock is not None and lock.kind == "container"


def test_schema_node_unknown(ctx: YangContext) -> None:
    assert ctx.schema_node(((AGT, "tasks"), (AGT, "nope"))) is None
    assert ctx.schema_node(((NCM, "tasks"),)) is None  # right name, wrong namespace
    assert ctx.schema_node(((AGT, "task-negotiate"),)) is None  # RPCs are not data nodes
    assert ctx.schema_node(()) is None


def test_schema_node_by_path(ctx: YangContext) -> None:
    node = ctx.schema_node_by_path("/irtf-agent:tasks/task")
    assert node is ctx.schema_node(((AGT, "tasks"), (AGT, "task")))
    assert ctx.schema_node_by_path("/irtf-agent:tasks/irtf-agent:task") is None


# -------------------------------------------------------------- conversion


def test_example_profile_round_trip(
    ctx: YangContext, example_profile: dict[str, object], example_profile_xml: str
) -> None:
    assert example_profile_xml.startswith(f'<agent xmlns="{AGT}"><name>')
    ctx.validate_data(example_profile_xml)
    assert ctx.xml_to_json(example_profile_xml) == example_profile


def test_example_profile_follows_the_draft(example_profile: dict[str, object]) -> None:
    agent = example_profile["irtf-agent:agent"]
    assert isinstance(agent, dict)
    # {Standard Organization}-{Provider}-{Transmit}-{Version Number}
    assert re.fullmatch(r"[A-Za-z0-9]+-[A-Za-z0-9]+-[A-Za-z]+-\d+(\.\d+)*", agent["name"])
    assert set(agent["capability"]["negotiate"]) == {
        "acp-task-feasibility-negotiation-v1.0",
        "acp-task-fulfillment-negotiation-v1.0",
    }
    assert all(s["skill-tags"] and s["input-modes"] and s["examples"] for s in agent["skills"]["skill"])
    assert agent["authentication"]["authentication-methods"]


def test_config_round_trip_keeps_explicit_defaults(ctx: YangContext) -> None:
    data = {
        "irtf-agent:tasks": {
            "task": [{"task-id": "t1", "content": "##task description\nx", "task-async": False, "msg-data": ["d1"]}]
        },
        "irtf-agent:data-params": [{"id": "d1", "dataType": "text", "chunked": True}],
    }
    xml = ctx.json_to_xml(data, kind="config")
    assert "<task-async>false</task-async>" in xml
    assert "netconf-state" not in xml  # state defaults libyang adds are not output
    assert ctx.xml_to_json(xml, kind="config") == data
    bare = {"irtf-agent:tasks": {"task": [{"task-id": "t1", "content": "##task description\nx"}]}}
    assert "task-async" not in ctx.json_to_xml(bare, kind="config")


def test_conversion_validates(ctx: YangContext) -> None:
    dangling = {
        "irtf-agent:tasks": {"task": [{"task-id": "t1", "content": "##task description x", "msg-data": ["d9"]}]}
    }
    with pytest.raises(RpcError) as info:
        ctx.json_to_xml(dangling, kind="config")
    assert info.value.error_tag == "data-missing"
    assert "<msg-data>d9</msg-data>" in ctx.json_to_xml(dangling, kind="config", partial=True)
    with pytest.raises(RpcError) as info:
        ctx.json_to_xml({"irtf-agent:tasks": {"task": [{"task-id": "t1", "content": "no section"}]}}, partial=True)
    assert info.value.app_tag == "task-description-missing"
    with pytest.raises(RpcError) as info:
        ctx.json_to_xml({"irtf-agent:bogus": 1})
    assert info.value.error_tag == "unknown-element"


def test_rpc_and_notification_round_trip(ctx: YangContext) -> None:
    rpc = {
        "irtf-agent:task-negotiate": {
            "task-id": "t1",
            "content": ["##target object\ncell 12\n##task description\nrestore it"],
            "type": "FULFILLMENT",
        }
    }
    xml = ctx.json_to_xml(rpc, kind="rpc")
    assert xml.startswith(f'<task-negotiate xmlns="{AGT}">')
    ctx.validate_rpc(xml)
    assert ctx.xml_to_json(xml, kind="rpc") == rpc
    reply = {"irtf-agent:task-negotiate": {"feasible": True, "reason": "ok"}}
    assert ctx.xml_to_json(ctx.json_to_xml(reply, kind="reply"), kind="reply") == reply
    notif = {"irtf-agent:condition-notifications": {"task-id": "t1", "task-status": "finished"}}
    xml = ctx.json_to_xml(notif, kind="notification")
    ctx.validate_notification(xml)
    assert ctx.xml_to_json(xml, kind="notification") == notif


def test_empty_documents(ctx: YangContext) -> None:
    assert ctx.json_to_xml({}, kind="config") == ""
    assert ctx.xml_to_json("", kind="config") == {}


# ----------------------------------------------------------------- threads


def test_concurrent_validation_keeps_errors_apart(ctx: YangContext) -> None:
    good = task() + data_param()
    bad = task(extra="<msg-data>zz</msg-data>")

    def run(i: int) -> str:
        try:
            ctx.validate_config(good if i % 2 else bad)
        except RpcError as err:
            return f"{err.error_tag} {err.path}"
        return "ok"

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(run, range(400)))
    assert results[1::2] == ["ok"] * 200
    assert set(results[0::2]) == {"data-missing /irtf-agent:tasks/task[task-id='t1']/msg-data[.='zz']"}
