"""Text-only A2A messages that the offline NL mapping cannot complete: the task asks for the missing keys.

Against a live agent (real MiniLM model, both faces), with our a2a-sdk based client: the text's missing
required keys come back as ``input-required`` (A2A status message and NETCONF state), answers by data
part, by text, partial and invalid ones, over A2A and over NETCONF; then the task runs to its end with
the merged payload. Held-out style phrasings per shipped input schema are in `test_text_phrasings`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2asupport import energy_profile, verify

from an_agent.a2a.client import A2AAgentClient
from an_agent.agents.default import DefaultBehaviour
from an_agent.errors import RpcError
from an_agent.model import AgentProfile, DataParam, DataType, Task, TaskResult, TaskStatus, parse_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.runtime.behaviour import TaskRun
from an_agent.server import AgentServer, ServerConfig

pytestmark = pytest.mark.slow


class EchoPayload(DefaultBehaviour):
    """Finishes every task with the payload the operation layer validated for it (None: a prompt task)."""

    def execute(self, task: Task, run: TaskRun) -> None:
        admitted = self.agent.payload(task.task_id)
        data = {"payload": admitted.values if admitted is not None else None, "content": task.content}
        run.finish(TaskResult(summary="done", format="application/json", data=json.dumps(data)))


def _profile(modes: list[str]) -> AgentProfile:
    document = energy_profile().to_dict()
    for skill in document["irtf-agent:agent"]["skills"]["skill"]:
        skill["input-modes"] = modes
    return AgentProfile.from_dict(document)


def _config(state_dir: Path) -> ServerConfig:
    return ServerConfig(
        state_dir=state_dir,
        port=0,
        a2a_port=0,
        a2a_tls=True,
        users={"admin": "admin"},
        profile=_profile(["text", "application/json;schema=energy_saving_adjust"]),
        behaviour=EchoPayload(),
        schemas="validate",  # the shared MiniLM model, no learning in the background
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    with AgentServer(_config(tmp_path_factory.mktemp("textinput") / "state")) as running:
        yield running


def _connect(server: AgentServer) -> A2AAgentClient:
    assert server.a2a is not None
    return A2AAgentClient.connect(server.a2a.url, "admin", "admin", timeout=120, trust=server.a2a.certificate)


@pytest.fixture
def client(server: AgentServer) -> Iterator[A2AAgentClient]:
    with _connect(server) as running:
        yield running


def _asked(task: Task) -> list[str]:
    """The keys a waiting task asks for (target objects of its input-required list)."""
    return [parse_prompt(item.required).target_object or "" for item in task.input_required]


def _payload(client: A2AAgentClient, task_id: str) -> dict[str, Any]:
    task = client.get_task(task_id)
    assert task.status == TaskStatus.FINISHED, (task.status, task.result)
    assert task.result is not None
    payload: dict[str, Any] = json.loads(task.result.data or "")["payload"]
    return payload


def _finish(events: Iterator[object]) -> None:
    for _ in events:
        pass


def test_text_that_maps_completely_runs_with_that_payload(client: A2AAgentClient) -> None:
    task = client.send_and_wait(text="Suspend the sleep mode of cells CELL-0201 and CELL-0202 for 2 hours")
    assert task.status == TaskStatus.FINISHED and not task.input_required
    payload = _payload(client, task.task_id)
    assert payload["cell_ids"] == ["CELL-0201", "CELL-0202"] and payload["action"] == "suspend"
    assert payload["duration_minutes"] == 120 and payload["reason"] == "operator_request"  # default applied


def test_missing_keys_are_asked_for_then_answered_by_a_data_part(server: AgentServer, client: A2AAgentClient) -> None:
    waiting = client.send_and_wait(text="switch off energy saving for 3 hours")
    assert waiting.status == TaskStatus.INPUT_REQUIRED
    assert _asked(waiting) == ["cell_ids"]  # exactly the required key the text does not give
    asked = waiting.input_required[0].required
    assert "CELL-<digits>" in asked and "energy_saving_adjust_v1" in asked  # its description and format
    assert waiting.result is not None and "cell_ids" in (waiting.result.reason or "")

    # The same task over NETCONF: input-required with the list, the mapped keys in its msg-data.
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin", timeout=30) as nc:
        task = nc.get_task(waiting.task_id)
    assert task.status == TaskStatus.INPUT_REQUIRED
    assert [parse_prompt(i.required).target_object for i in task.input_required] == ["cell_ids"]
    assert task.msg_data == [f"{waiting.task_id}-mapped"]

    # Numbers arrive as doubles from the protobuf client (90 -> 90.0): an integer key takes them.
    _finish(client.provide_input(waiting.task_id, keys={"cell_ids": ["CELL-0101"], "duration_minutes": 90}))
    payload = _payload(client, waiting.task_id)
    assert payload["cell_ids"] == ["CELL-0101"] and payload["action"] == "suspend"
    assert payload["duration_minutes"] == 90
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin", timeout=30) as nc:
        result = nc.get_task(waiting.task_id).result  # the result's JSON as the behaviour wrote it (A2A: doubles)
    assert result is not None and json.loads(result.data or "")["payload"]["duration_minutes"] == 90
    assert isinstance(json.loads(result.data or "")["payload"]["duration_minutes"], int)  # integral: an integer


def test_answer_by_text_is_mapped(client: A2AAgentClient) -> None:
    waiting = client.send_and_wait(text="switch off energy saving")
    assert _asked(waiting) == ["cell_ids"]
    _finish(client.provide_input(waiting.task_id, text="on CELL-0102 and CELL-0103 please"))
    payload = _payload(client, waiting.task_id)
    assert payload["cell_ids"] == ["CELL-0102", "CELL-0103"] and payload["action"] == "suspend"


def test_partial_and_invalid_answers(client: A2AAgentClient) -> None:
    waiting = client.send_and_wait(text="Hello there, could you have a look at this for me?")
    assert waiting.status == TaskStatus.INPUT_REQUIRED
    assert _asked(waiting) == ["cell_ids", "action"]
    action = waiting.input_required[1].required
    assert "suspend, resume, reduce" in action  # the allowed values, from the template
    # An invalid value is refused naming the key; the task still waits for the same keys.
    with pytest.raises(RpcError) as refused:
        _finish(client.provide_input(waiting.task_id, keys={"cell_ids": ["CELL-0104"], "action": "explode"}))
    assert "action" in refused.value.message and refused.value.error_tag == "invalid-value", refused.value
    still = client.get_task(waiting.task_id)
    assert still.status == TaskStatus.INPUT_REQUIRED and _asked(still) == ["cell_ids", "action"]
    # A partial answer: input-required again, with the rest only.
    _finish(client.provide_input(waiting.task_id, keys={"cell_ids": ["CELL-0104"]}))
    again = client.get_task(waiting.task_id)
    assert again.status == TaskStatus.INPUT_REQUIRED and _asked(again) == ["action"]
    _finish(client.provide_input(waiting.task_id, keys={"action": "reduce"}))
    payload = _payload(client, waiting.task_id)
    assert payload["cell_ids"] == ["CELL-0104"] and payload["action"] == "reduce"


def test_answer_over_netconf(server: AgentServer, client: A2AAgentClient) -> None:
    waiting = client.send_and_wait(text="go back to normal energy saving")
    assert _asked(waiting) == ["cell_ids"]
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin", timeout=30) as nc:
        bad = DataParam(
            id="answer-1",
            data_type=DataType.TEXT,
            format="application/json",
            data=json.dumps({"cell_ids": "CELL-9"}),
        )
        with pytest.raises(RpcError) as refused:
            nc.provide_input(waiting.task_id, [bad])
        assert "cell_ids" in refused.value.message
        good = DataParam(
            id="answer-2",
            data_type=DataType.TEXT,
            format="application/json;schema=energy_saving_adjust_v1",  # the keys asked for: merged, not whole
            data=json.dumps({"schema_id": "energy_saving_adjust_v1", "payload": {"cell_ids": ["CELL-0105"]}}),
        )
        nc.provide_input(waiting.task_id, [good])
    _finish(client.resubscribe(waiting.task_id))
    payload = _payload(client, waiting.task_id)
    assert payload["cell_ids"] == ["CELL-0105"] and payload["action"] == "resume"


def test_prompts_in_the_callers_language(server: AgentServer) -> None:
    assert server.a2a is not None
    message = {"messageId": "zh-1", "role": "ROLE_USER", "parts": [{"text": "switch off energy saving"}]}
    reply = httpx.post(
        f"{server.a2a.url}/",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {"message": message, "configuration": {"returnImmediately": False}},
        },
        auth=("admin", "admin"),
        headers={"A2A-Version": "1.0", "Accept-Language": "zh-CN,zh;q=0.9"},
        verify=verify(server),
        timeout=120,
    ).json()
    status = reply["result"]["task"]["status"]
    assert status["state"] == "TASK_STATE_INPUT_REQUIRED", status
    (data,) = [p["data"] for p in status["message"]["parts"] if "data" in p]
    (item,) = data["input-required"]
    assert item["target-object"] == "cell_ids" and "小区标识" in item["required"], item


def test_phrasings_per_input_schema(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Held-out style: phrasings written without the mapping's rules, for the shipped input schemas; each
    is either mapped completely or asks for exactly the keys it leaves open, never a prompt-only task."""
    modes = [
        "text",
        "application/json;schema=fault_diagnosis",
        "application/json;schema=trouble_ticket",
        "application/json;schema=coverage_compensation",
    ]
    config = ServerConfig(
        state_dir=tmp_path_factory.mktemp("phrasings") / "state",
        port=0,
        a2a_port=0,
        users={"admin": "admin"},
        profile=_profile(modes),
        behaviour=EchoPayload(),
        schemas="validate",
    )
    cases: list[tuple[str, dict[str, Any], list[str]]] = [
        ("SITE-12 lost power, please find out why", {"fault_type": "power_failure"}, []),
        ("The microwave transmission link to SITE-03 keeps failing", {"fault_type": "transmission_failure"}, []),
        ("There is heavy interference on CELL-0401 and CELL-0402", {"fault_type": "interference"}, []),
        ("Ticket TT-81: the port on LINK-A1 is faulty", {"ticket_id": "TT-81", "fault": "port_fault"}, []),
        ("TT-7000 SITE-33 lost its mains power, urgent", {"device": "SITE-33", "fault": "mains_power_lost"}, []),
        ("Open ticket TT-5521 for SITE-07: the fibre is cut", {"device": "SITE-07", "fault": "fibre_cut"}, []),
        (
            "compensate coverage for CELL-0302 using neighbours CELL-0304 for two hours",
            {"target_cell_ids": ["CELL-0302"], "duration_minutes": 120},
            [],
        ),
        ("users have no signal in this street, uptilt the neighbours by 2 degrees", {}, ["target_cell_ids"]),
    ]
    with AgentServer(config) as server:
        assert server.a2a is not None
        with A2AAgentClient.connect(server.a2a.url, "admin", "admin", timeout=120) as client:
            for text, expected, missing in cases:
                task = client.send_and_wait(text=text)
                if missing:
                    assert task.status == TaskStatus.INPUT_REQUIRED and _asked(task) == missing, (text, task)
                    client.cancel(task.task_id)
                    continue
                payload = _payload(client, task.task_id)
                assert {k: payload.get(k) for k in expected} == expected, (text, payload)


def test_skill_without_an_input_schema_takes_text_as_its_prompt(tmp_path_factory: pytest.TempPathFactory) -> None:
    config = ServerConfig(
        state_dir=tmp_path_factory.mktemp("prompt") / "state",
        port=0,
        a2a_port=0,
        users={"admin": "admin"},
        profile=_profile(["text"]),
        behaviour=EchoPayload(),
        schemas="validate",
    )
    with AgentServer(config) as server:
        assert server.a2a is not None
        with A2AAgentClient.connect(server.a2a.url, "admin", "admin", timeout=120) as client:
            task = client.send_and_wait(text="switch off energy saving")
            assert task.status == TaskStatus.FINISHED and not task.input_required
            assert task.result is not None
            data = json.loads(task.result.data or "")
            assert data["payload"] is None and "switch off energy saving" in data["content"]


def test_a_task_waiting_for_keys_survives_a_restart(tmp_path: Path) -> None:
    """What a waiting task knows (mapped keys, answers, client, language) is in the datastore: after a
    restart it asks again for exactly what is still missing, and the next answer completes it."""
    config = _config(tmp_path / "state")
    with AgentServer(config) as first, _connect(first) as client:
        waiting = client.send_and_wait(text="Hello there, could you have a look at this for 45 minutes?")
        assert _asked(waiting) == ["cell_ids", "action"]
        _finish(client.provide_input(waiting.task_id, keys={"cell_ids": ["CELL-0109"]}))
        assert _asked(client.get_task(waiting.task_id)) == ["action"]
    with AgentServer(config) as second, _connect(second) as client:
        deadline = time.monotonic() + 60
        task = client.get_task(waiting.task_id)
        while _asked(task) != ["action"] and time.monotonic() < deadline:
            time.sleep(0.1)
            task = client.get_task(waiting.task_id)
        assert task.status == TaskStatus.INPUT_REQUIRED and _asked(task) == ["action"], (task.status, _asked(task))
        _finish(client.provide_input(waiting.task_id, keys={"action": "resume"}))
        payload = _payload(client, waiting.task_id)
    assert payload["cell_ids"] == ["CELL-0109"] and payload["action"] == "resume"
    assert payload["duration_minutes"] == 45  # mapped from the first text, before the restart
