"""Our A2A client (`A2AAgentClient`) against a live agent over real HTTP: card, negotiation from the card's
schemas, client-side validation, structured and text messages, streaming, resubscription, cancel, errors
translated to ours, and a card that follows published schema patches."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a2asupport import energy_agent_config

from an_agent.a2a.client import A2AAgentClient, scenario_version
from an_agent.errors import AnAgentError, AuthError, ConnectError, RpcError, SchemaError, TransportError
from an_agent.model import ConditionNotification, Task, TaskStatus
from an_agent.nc.agent_client import AgentClient
from an_agent.schemas.suggestion import schema_update_suggestions
from an_agent.server import AgentServer

ENERGY = "energy_saving_adjust"
PROMPT = "## target object\nSITE-07\n## task description\ndiagnose the outage"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[AgentServer]:
    with AgentServer(
        energy_agent_config(tmp_path / "state", 1.0)
    ) as running:  # long enough to cancel a running task on a loaded machine
        yield running


def _url(server: AgentServer) -> str:
    assert server.a2a is not None
    return server.a2a.url


def _trust(server: AgentServer) -> Path | None:
    assert server.a2a is not None
    return server.a2a.certificate


@pytest.fixture
def client(server: AgentServer) -> Iterator[A2AAgentClient]:
    with A2AAgentClient.connect(_url(server), "admin", "admin", timeout=10, trust=_trust(server)) as running:
        yield running


def _netconf(server: AgentServer) -> AgentClient:
    return AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin", timeout=10)


def test_scenario_version() -> None:
    assert scenario_version("fault_diagnosis_v2") == ("fault_diagnosis", 2)
    assert scenario_version("fault_diagnosis") == ("fault_diagnosis", None)


def test_negotiation_from_the_card(client: A2AAgentClient) -> None:
    assert client.card["name"] == "IETF-TestLab-RAN-1.0"
    chosen = client.negotiate(ENERGY, ["v1", "3"])
    assert (chosen.schema_id, chosen.offered) == ("energy_saving_adjust_v1", ("energy_saving_adjust_v1",))
    assert chosen.json_schema["title"] == "energy_saving_adjust_v1"
    assert client.negotiate("energy_saving_adjust_v1") == chosen
    with pytest.raises(SchemaError) as none_common:
        client.negotiate(ENERGY, ["2", "3"])
    assert "no common version" in str(none_common.value)
    assert none_common.value.problems == ["schemas: the agent has energy_saving_adjust_v1"]
    with pytest.raises(SchemaError) as unknown:
        client.negotiate("teleport")
    assert "energy_saving_adjust_v1" in unknown.value.problems[0]


def test_a_payload_refused_client_side_sends_nothing(server: AgentServer, client: A2AAgentClient) -> None:
    with pytest.raises(SchemaError) as refused:
        client.stream(scenario=ENERGY, payload={"cell_ids": "CELL-1", "action": "explode", "duration_minutes": 1.5})
    keys = [problem.split(":")[0] for problem in refused.value.problems]
    assert keys == ["action", "cell_ids", "duration_minutes"], refused.value.problems
    with _netconf(server) as nc:
        assert nc.list_tasks() == []


def test_structured_message_streams_and_is_the_netconf_task(server: AgentServer, client: A2AAgentClient) -> None:
    events = list(
        client.stream(scenario=ENERGY, payload={"cell_ids": ["CELL-0401"], "action": "reduce"}, sender="site-agent-9")
    )
    assert isinstance(events[0], Task) and events[0].status == TaskStatus.CREATED  # the task as created
    changes = [e.status for e in events[1:] if isinstance(e, ConditionNotification)]
    assert changes == [TaskStatus.PROCESSING, TaskStatus.FINISHED], events  # then only what followed, in order
    task_id = events[0].task_id
    done = client.get_task(task_id)
    assert done.status == TaskStatus.FINISHED and done.result is not None
    assert done.result.format is not None and done.result.format.startswith("application/json")
    with _netconf(server) as nc:
        stored = nc.get_task(task_id)
    assert stored.status == TaskStatus.FINISHED and stored.msg_data == [f"{task_id}-payload"]
    assert (stored.send_from, stored.send_to) == ("site-agent-9", "IETF-TestLab-RAN-1.0")  # sent for that agent
    assert json.loads(stored.result.data or "") == json.loads(done.result.data or "")  # type: ignore[union-attr]


def test_text_message_waits_for_the_result(client: A2AAgentClient) -> None:
    task = client.send_and_wait(text=PROMPT)
    assert task.status == TaskStatus.FINISHED
    assert task.result is not None and json.loads(task.result.data or "")["target_object"] == "SITE-07"
    assert [t.task_id for t in client.list_tasks()] == [task.task_id]


def test_resubscribe_misses_nothing_and_cancel(client: A2AAgentClient) -> None:
    stream = client.stream(scenario=ENERGY, payload={"cell_ids": ["CELL-0401"], "action": "suspend"})
    first = next(stream)
    stream.close()  # the client goes away right after the task exists
    assert isinstance(first, Task)
    again = list(client.resubscribe(first.task_id))
    # The task as it is now (it works), then only what follows it, in order (A2A spec 3.1.6, 11.7).
    assert isinstance(again[0], Task) and again[0].status in (TaskStatus.CREATED, TaskStatus.PROCESSING), again
    statuses = [e.status for e in again[1:] if isinstance(e, ConditionNotification)]
    lifecycle = [TaskStatus.CREATED, TaskStatus.PROCESSING, TaskStatus.FINISHED]
    assert statuses == lifecycle[lifecycle.index(again[0].status) + 1 :], again

    running = next(client.stream(text=PROMPT))
    cancelled = client.cancel(running.task_id)
    assert cancelled.status == TaskStatus.CANCELED
    assert client.get_task(running.task_id).status == TaskStatus.CANCELED
    with pytest.raises(RpcError) as ended:  # a finished task is not cancelable
        client.cancel(first.task_id)
    assert ended.value.error_tag == "operation-failed", ended.value


def test_errors_are_ours(server: AgentServer, client: A2AAgentClient) -> None:
    with pytest.raises(RpcError) as missing:
        client.get_task("no-such-task")
    assert missing.value.error_tag == "data-missing"
    with pytest.raises(RpcError) as running:  # structured data to a task that runs: the agent refuses
        task = next(client.stream(text=PROMPT))
        next(client.stream(scenario=ENERGY, payload={"cell_ids": ["CELL-1"], "action": "reduce"}, task_id=task.task_id))
    assert "already running" in running.value.message
    with pytest.raises(RpcError) as taken:  # a proposed task id that is in use
        next(client.stream(text=PROMPT, new_task_id=task.task_id))
    assert taken.value.error_tag == "data-exists", taken.value
    with pytest.raises(AuthError), A2AAgentClient.connect(_url(server), "admin", "wrong", trust=_trust(server)) as bad:
        bad.get_task("x")
    with pytest.raises(ConnectError):
        A2AAgentClient.connect(f"http://127.0.0.1:{server.port}", "admin", "admin", timeout=3)  # NETCONF, not A2A


def test_the_card_follows_published_patches(server: AgentServer, client: A2AAgentClient) -> None:
    before = client.negotiate(ENERGY).json_schema["properties"]
    with _netconf(server) as nc:
        for n in range(6):  # the default trigger: heat >= 50 and 5 distinct clients
            nc.schemas.assign(
                Task(f"hot{n}", send_from=f"site-agent-{n}"),
                ENERGY,
                {"cell_ids": ["CELL-0401"], "action": "reduce", "other": "cooling fan failure in the shelter"},
            )
        assert server.operations.schemas is not None
        server.operations.schemas.drain()
        (patched,) = [t for t in nc.schemas.live_templates() if t["schema_id"] == "energy_saving_adjust_v1"]
    patch = patched["patches"][0]
    changed = set(patch["new_keys"]) | set(patch["modified_keys"])
    assert changed

    def differs(properties: dict[str, Any]) -> bool:
        return all(key not in before or properties.get(key) != before[key] for key in changed)

    # A client that connects now sees the patched schema in the card (no restart) ...
    with A2AAgentClient.connect(_url(server), "admin", "admin", timeout=10, trust=_trust(server)) as fresh:
        assert differs(fresh.negotiate(ENERGY).json_schema["properties"])
    # ... and one that negotiated earlier keeps its cache until a result suggests the update.
    assert client.negotiate(ENERGY).json_schema["properties"] == before
    with _netconf(server) as nc:
        nc.schemas.assign(
            Task("after", send_from="site-agent-2"), ENERGY, {"cell_ids": ["CELL-0401"], "action": "resume"}
        )
    for _ in client.resubscribe("after"):
        pass
    assert schema_update_suggestions(client.get_task("after"))  # the result names the patch ...
    assert differs(client.negotiate(ENERGY).json_schema["properties"])  # ... and the card was fetched again


def test_closing_the_client_ends_a_stream_read_elsewhere(server: AgentServer) -> None:
    client = A2AAgentClient.connect(_url(server), "admin", "admin", timeout=10, trust=_trust(server))
    stream = client.stream(text=PROMPT)
    next(stream)
    ended: list[BaseException] = []

    def read() -> None:
        try:
            list(stream)
        except AnAgentError as exc:
            ended.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    client.close()  # while the task still runs (1 s)
    reader.join(timeout=5)
    assert not reader.is_alive() and isinstance(ended[0], TransportError), ended
