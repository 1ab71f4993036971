"""RFC 5277 subscriptions through NetconfClient.subscribe and AgentClient.watch: replay, stop, filter."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from lxml import etree

from an_agent.model import IRTF_AGENT_NS, AgentProfile, ConditionNotification, Task, TaskStatus, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.nc.client import NetconfClient, NotificationKind
from an_agent.server import AgentServer, ServerConfig
from an_agent.yang.context import YangContext

PROFILE = AgentProfile("IRTF-acme-notify-1.0", "notification tests", "1.0.0", "acme")
DONE = [TaskStatus.CREATED, TaskStatus.PROCESSING, TaskStatus.FINISHED]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    config = ServerConfig(state_dir=tmp_path_factory.mktemp("agent"), port=0, users={"admin": "admin"}, profile=PROFILE)
    with AgentServer(config) as running:
        yield running


def connect(server: AgentServer) -> AgentClient:
    return AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin", timeout=10)


def run_task(server: AgentServer, task_id: str) -> None:
    """Assign a task and wait (through its own subscription) until it finished."""
    with connect(server) as agent:
        events = agent.watch(task_id, timeout=10)
        agent.assign_task(Task(task_id, send_from="tester", content=build_prompt("gNB-1", "diagnose")))
        assert [e.status for e in events] == DONE


def test_replay_from_start_time_then_replay_complete(server: AgentServer) -> None:
    before = time.time()
    run_task(server, "t-replay")
    with connect(server) as agent:
        replayed = list(agent.watch("t-replay", start_time=before - 1, timeout=10))
    assert [e.status for e in replayed] == DONE
    assert all(e.event_time is not None and e.event_time >= before - 1 for e in replayed)
    # The raw subscription shows the replayComplete marker after the replayed events.
    with NetconfClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        only_this_task = (
            f'<condition-notifications xmlns="{IRTF_AGENT_NS}"><task-id>t-replay</task-id></condition-notifications>'
        )
        subscription = nc.subscribe(filter=only_this_task, start_time=before - 1)
        kinds = [subscription.next(timeout=10).kind for _ in range(4)]
    assert kinds == [NotificationKind.EVENT] * 3 + [NotificationKind.REPLAY_COMPLETE]


def test_stop_time_ends_with_notification_complete(server: AgentServer) -> None:
    before = time.time()
    run_task(server, "t-stop")
    with NetconfClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        subscription = nc.subscribe(start_time=before - 1, stop_time=time.time())
        notes = list(subscription)  # ends by itself at notificationComplete
    assert subscription.completed
    assert notes[-1].kind is NotificationKind.NOTIFICATION_COMPLETE
    events = [ConditionNotification.from_xml(n.envelope) for n in notes if n.kind is NotificationKind.EVENT]
    assert [e.status for e in events if e.task_id == "t-stop"] == DONE


def test_watch_without_task_id_sees_every_task_and_events_are_valid(server: AgentServer) -> None:
    yang = YangContext.default()
    with connect(server) as watcher:
        events = watcher.watch(timeout=10)
        run_task(server, "t-all-1")
        run_task(server, "t-all-2")
        seen = [next(events) for _ in range(6)]
    assert [(e.task_id, e.status) for e in seen] == [("t-all-1", s) for s in DONE] + [("t-all-2", s) for s in DONE]
    assert all(e.previous_status is None for e in seen[::3])
    for event in seen:
        yang.validate_notification(etree.tostring(event.to_xml(), encoding="unicode"))
