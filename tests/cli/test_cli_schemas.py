"""The CLI's structured-payload and schema commands against a real agent over NETCONF."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from an_agent.cli import main
from an_agent.clock import ManualClock, from_rfc3339
from an_agent.model import IRTF_AGENT_NS, AgentProfile, DataParam, Task
from an_agent.model._xml import root
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder

USERS = {"admin": "admin", "bob": "bob"}


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    config = ServerConfig(
        state_dir=tmp_path / "state",
        port=0,
        users=USERS,
        profile=profile,
        embedder=FakeEmbedder(),
        clock=ManualClock(from_rfc3339("2026-10-05T00:00:00Z")),
        schema_admins=["admin"],
        schema_approval="manual",
    )
    with AgentServer(config) as running:
        yield running


def cli(
    capsys: pytest.CaptureFixture[str], server: AgentServer, *argv: str, user: str = "admin"
) -> tuple[int, str, str]:
    where = ["--port", str(server.port)] if argv[0] == "task" else ["--agent", f"127.0.0.1:{server.port}"]
    code = main([*argv, *where, "--user", user, "--password", USERS[user]])
    out, err = capsys.readouterr()
    return code, out, err


def test_task_assign_builds_validates_and_sends_a_payload(capsys, server: AgentServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base = tmp_path / "payload.json"
    base.write_text(json.dumps({"schema_id": "energy_saving_adjust_v1", "payload": {"reason": "operator_request"}}))
    code, out, err = cli(
        capsys, server, "task", "assign", "--id", "s1", "--schema", "energy_saving_adjust", "--schema-version", "1",
        "--payload", str(base), "--set", "cell_ids=CELL-0401,CELL-0402", "--set", "action=reduce",
        "--set", "duration_minutes=30", "--set", "other=only at night", "--wait", "--json",
    )  # fmt: skip
    assert code == 0, err
    task = json.loads(out)
    assert task["task-status"] == "finished" and task["msg-data"] == ["s1-payload"]
    assert task["schema_update_suggestion"] == []
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as client:
        data = client.netconf.get(filter=root("data-params"))
    (param,) = [DataParam.from_xml(e) for e in data.iter(f"{{{IRTF_AGENT_NS}}}data-params")]
    assert param.id == "s1-payload" and param.format == "application/json;schema=energy_saving_adjust_v1"
    sent = json.loads(param.data or "")["payload"]
    assert sent == {
        "reason": "operator_request",
        "cell_ids": ["CELL-0401", "CELL-0402"],
        "action": "reduce",
        "duration_minutes": 30,
        "other": "only at night",
    }


def test_a_bad_payload_is_refused_before_anything_is_sent(capsys, server: AgentServer) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli(
        capsys, server, "task", "assign", "--id", "s2", "--schema", "energy_saving_adjust",
        "--set", "cell_ids=CELL-0401", "--set", "action=explode", "--set", "duration_minutes=soon", "--set", "colour=red",
    )  # fmt: skip
    assert code == 1
    assert "action:" in err and "duration_minutes:" in err and "colour:" in err, err
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as client:
        assert client.list_tasks() == []
    assert main(["task", "assign", "--port", "1", "--set", "a=b", "--description", "x"]) == 2
    assert "need --schema" in capsys.readouterr().err


def test_schema_get_lists_live_templates_and_negotiates(capsys, server: AgentServer) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli(capsys, server, "schema", "get")
    assert code == 0 and "energy_saving_adjust_v1" in out and "SCHEMA_ID" in out
    code, out, _ = cli(capsys, server, "schema", "get", "--json")
    assert sorted(t["schema_id"] for t in json.loads(out))[:2] == ["agent_query_v1", "complaint_ticket_v1"]
    code, out, _ = cli(capsys, server, "schema", "get", "fault_diagnosis", "--schema-version", "v1", "--json")
    assert code == 0 and json.loads(out)["schema_id"] == "fault_diagnosis_v1"
    code, out, _ = cli(capsys, server, "schema", "get", "fault_diagnosis")
    assert code == 0 and "fault_type: string, required" in out
    code, _, err = cli(capsys, server, "schema", "get", "fault_diagnosis", "--schema-version", "2")
    assert code == 1 and "no common version" in err and "fault_diagnosis_v1" in err
    assert main(["schema", "get", "--agent", "nowhere"]) == 2
    assert "expected HOST:PORT" in capsys.readouterr().err


def test_patch_decisions_need_a_schema_admin(capsys, server: AgentServer) -> None:  # type: ignore[no-untyped-def]
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as client:
        for n in range(6):
            client.schemas.assign(
                Task(f"h{n}", send_from=f"site-{n}"),
                "energy_saving_adjust",
                {"cell_ids": ["CELL-0401"], "action": "reduce", "other": "cooling fan failure in the shelter"},
            )
    assert server.operations.schemas is not None
    server.operations.schemas.drain()
    # The pending patch shows over NETCONF, so an administrator can find it.
    code, out, _ = cli(capsys, server, "schema", "patches", "list", "--json")
    (pending,) = json.loads(out)
    assert pending["state"] == "proposed" and pending["schema_id"] == "energy_saving_adjust_v1"
    patch_id = pending["patch_id"]

    code, _, err = cli(capsys, server, "schema", "patches", "approve", patch_id, user="bob")
    assert code == 1 and "access-denied" in err, err
    code, out, err = cli(capsys, server, "schema", "patches", "approve", patch_id, "--json")
    assert code == 0, err
    assert json.loads(out) == {"patch_id": patch_id, "key_name": None, "decision": "approve", "state": "active"}
    code, out, _ = cli(capsys, server, "schema", "patches", "list", "--json")
    (row,) = json.loads(out)
    assert row["patch_id"] == patch_id and row["state"] == "active" and row["schema_id"] == "energy_saving_adjust_v1"
    code, out, _ = cli(capsys, server, "schema", "patches", "list")
    assert patch_id in out and "active" in out
    code, _, err = cli(capsys, server, "schema", "patches", "reject", "no-such-patch")
    assert code == 1 and "no-such-patch" in err


def test_schema_card_offline_and_operator_templates(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ops = tmp_path / "ops"
    ops.mkdir()
    (ops / "probe_v1.json").write_text(json.dumps({"schema_id": "probe_v1", "scenario": "probe", "keys": [
        {"key_name": "probe_id", "key_type": "string", "required": True, "semantic_description": "Probe. Format: P-<digits>."},
    ]}))  # fmt: skip
    assert main(["schema", "card", "--templates", str(ops), "--url", "http://127.0.0.1:9/"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["name"] == "IRTF-AnLab-Wireless-1.0.0"  # the built-in example profile
    assert card["schemas"]["probe_v1"]["examples"] == [{"probe_id": "P-1"}]
    assert "application/json;schema=probe_v1" in card["defaultInputModes"]
    # The example profile (the quick-tour agent's) claims only the template its behaviour takes.
    modes = {m for skill in card["skills"] for m in skill["inputModes"]}
    assert modes == {
        "text/plain",
        "application/json;schema=fault_diagnosis_v1",
        "application/json;schema=intent_task_v1",  # the RAN role's fault-management share of a service intent
    }
    assert main(["schema", "show", "probe", "--templates", str(ops), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["schema_id"] == "probe_v1"
    (ops / "bad.json").write_text("[]")
    assert main(["schema", "list", "--templates", str(ops)]) == 2
    assert f"{ops / 'bad.json'}: (top level): not an object" in capsys.readouterr().err
