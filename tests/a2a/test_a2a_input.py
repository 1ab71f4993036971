"""Input over A2A: a task in ``input-required`` shows what is missing as ``TASK_STATE_INPUT_REQUIRED``, and a
message on the task (A2A task id = task-id) answers it through `Operations.provide_input`; the task resumes.

draft-wang 5.4 (Figure 9): the assigner supplies what the executor asks for; the same task is read over
NETCONF with the answer in its ``msg-data``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from a2asupport import energy_agent_config, verify

from an_agent.a2a.client import A2AAgentClient
from an_agent.agents.default import DefaultBehaviour
from an_agent.errors import RpcError
from an_agent.model import ConditionNotification, Task, TaskResult, TaskStatus, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.runtime.behaviour import TaskRun
from an_agent.server import AgentServer

ENERGY = "energy_saving_adjust"
MEDIA = f"application/json;schema={ENERGY}"
CELLS = build_prompt("the cells to adjust", "send an energy_saving_adjust payload naming the cells")
PROMPT = "## target object\nSITE-07\n## task description\nsave energy at night"


class AskingForCells(DefaultBehaviour):
    """processing -> input-required (the cells) -> processing -> finished, echoing what the answer held."""

    def execute(self, task: Task, run: TaskRun) -> None:
        run.set_status(TaskStatus.PROCESSING)
        provided = run.request_input([CELLS], "no cells were named", timeout=60)
        if provided is None:
            if not run.cancelled:
                run.fail("no cells came")
            return
        data = {
            "params": [p.format for p in provided.data_params],
            "payloads": {k: v.values for k, v in provided.payloads.items()},
            "text": [p.data for p in provided.data_params if p.format == "text/plain"],
            "by": provided.provided_by,
        }
        run.finish(TaskResult(summary="adjusted", format="application/json", data=json.dumps(data)))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[AgentServer]:
    config = energy_agent_config(tmp_path / "state", 0.05)
    config.behaviour = AskingForCells()
    with AgentServer(config) as running:
        yield running


@pytest.fixture
def client(server: AgentServer) -> Iterator[A2AAgentClient]:
    assert server.a2a is not None
    with A2AAgentClient.connect(server.a2a.url, "admin", "admin", timeout=30, trust=server.a2a.certificate) as running:
        yield running


def test_input_required_over_a2a_then_answered_by_a_message(server: AgentServer, client: A2AAgentClient) -> None:
    waiting = client.send_and_wait(text=PROMPT)  # returns once the task is interrupted
    assert waiting.status == TaskStatus.INPUT_REQUIRED
    # What is missing, read back from the A2A status message (text parts and the data part).
    assert [item.required for item in waiting.input_required] == [CELLS]
    assert waiting.input_required[0].start_time is not None
    assert waiting.result is not None and waiting.result.reason == "no cells were named"

    events = list(
        client.provide_input(
            waiting.task_id, scenario=ENERGY, payload={"cell_ids": ["CELL-0401"], "action": "reduce"}, text="CELL-0401"
        )
    )
    # The answered task first (resumed: processing), then what follows, to its end; the question is not
    # replayed.
    assert isinstance(events[0], Task) and events[0].status == TaskStatus.PROCESSING, events
    statuses = [e.status for e in events[1:] if isinstance(e, ConditionNotification)]
    assert TaskStatus.INPUT_REQUIRED not in statuses, statuses
    assert statuses == [TaskStatus.FINISHED], statuses
    done = client.get_task(waiting.task_id)
    assert done.result is not None
    data = json.loads(done.result.data or "")
    assert data["params"] == ["application/json;schema=energy_saving_adjust_v1", "text/plain"]
    (payload,) = data["payloads"].values()  # validated once by the operation layer, defaults applied
    assert payload["cell_ids"] == ["CELL-0401"] and payload["action"] == "reduce"
    assert data["text"] == ["CELL-0401"] and data["by"] == "admin"

    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin", timeout=10) as nc:
        task = nc.get_task(waiting.task_id)  # the same task over NETCONF: the answer is in its msg-data
        assert task.status == TaskStatus.FINISHED and len(task.msg_data) == 2
        assert not task.input_required


def test_answers_are_validated_and_only_for_tasks_that_ask(server: AgentServer, client: A2AAgentClient) -> None:
    waiting = client.send_and_wait(text=PROMPT)
    assert waiting.status == TaskStatus.INPUT_REQUIRED
    # The answer's payload goes through the same validation as an assignment (sent raw: our client checks first).
    assert server.a2a is not None
    part = {"data": {"cell_ids": ["C"], "action": "explode"}, "metadata": {"mimeType": f"{MEDIA}_v1"}}
    message = {"messageId": "m1", "role": "ROLE_USER", "taskId": waiting.task_id, "parts": [part]}
    reply = httpx.post(
        f"{server.a2a.url}/",
        json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}},
        auth=("admin", "admin"),
        headers={"A2A-Version": "1.0"},
        verify=verify(server),
        timeout=30,
    ).json()
    assert "action" in reply["error"]["message"], reply
    assert client.get_task(waiting.task_id).status == TaskStatus.INPUT_REQUIRED  # nothing changed
    list(client.provide_input(waiting.task_id, text="CELL-7"))
    assert client.get_task(waiting.task_id).status == TaskStatus.FINISHED
    with pytest.raises(RpcError) as ended:  # a finished task takes no more messages (A2A UnsupportedOperation)
        next(client.provide_input(waiting.task_id, text="CELL-8"))
    assert ended.value.error_tag == "operation-failed" and ended.value.app_tag == "task-ended", ended.value
    with pytest.raises(RpcError) as missing:
        next(client.provide_input("no-such-task", text="x"))
    assert missing.value.error_tag == "data-missing", missing.value
