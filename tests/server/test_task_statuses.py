"""Live statuses over real NETCONF sessions: blocked, suspended, input-required and the assigner's answer.

draft-wang 5.2/5.4 (Figures 9-10): every transition is a condition-notifications
event carrying what the model defines (previous status, reason, the
input-required list with its start-time, the result as data at the end); the
assigner answers an input request by editing the task, through the same
admission as an assignment; an executor opens FULFILLMENT negotiation towards
its assigner (5.3 (2)).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from an_agent.agents.default import DefaultBehaviour
from an_agent.clock import ManualClock, from_rfc3339
from an_agent.model import AgentProfile, NegotiationResult, Task, TaskResult, TaskStatus, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.runtime.behaviour import TaskRun
from an_agent.server import AgentServer, ServerConfig
from an_agent.yang.context import YangContext
from fake_embedder import FakeEmbedder
from rawnc import NS, RawSession, error_fields, wait_for
from support import IRTF, TEST_PROFILE, task_xml

NOTIF = "urn:ietf:params:xml:ns:netconf:notification:1.0"
ASYNC = "<task-async>true</task-async>"
EDIT = "<edit-config><target><running/></target>{}</edit-config>"
ALARMS = build_prompt("alarm list of SITE-07", "send the alarms of the last hour as a data-param")


class AskingBehaviour(DefaultBehaviour):
    """processing -> blocked -> processing -> suspended -> processing -> input-required -> processing -> finished."""

    def __init__(self) -> None:
        super().__init__()
        self.go_on = threading.Event()  # the test releases each pause

    def execute(self, task: Task, run: TaskRun) -> None:
        run.set_status(TaskStatus.PROCESSING)
        run.block("waiting for the RAN agent's topology")
        self.go_on.wait(10)
        run.resume("topology received")
        run.suspend("maintenance window until 02:00")
        run.resume()
        provided = run.request_input([ALARMS], "the alarm list is missing", timeout=20)
        if provided is None:
            run.fail("no alarm list came")
            return
        payload = provided.payloads.get(provided.data_params[0].id) if provided.data_params else None
        data = {
            "got": [p.id for p in provided.data_params],
            "text": [p.data for p in provided.data_params],
            "validated": None if payload is None else payload.values,
            "by": provided.provided_by,
            "msg_data": run.task.msg_data,
        }
        run.finish(TaskResult(summary="analysed", format="application/json", data=json.dumps(data)))


class Watcher:
    """A subscribed raw session whose condition-notifications are collected on a thread."""

    def __init__(self, port: int) -> None:
        self.raw = RawSession(port)
        self.raw.rpc(f'<create-subscription xmlns="{NOTIF}"/>', "sub")
        self.bodies: list[etree._Element] = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        try:
            while True:
                body = self.raw.receive().find(f"{{{IRTF}}}condition-notifications")
                if body is not None:
                    self.bodies.append(body)
        except Exception:
            return

    def statuses(self, task_id: str) -> list[str]:
        return [
            b.findtext(f"{{{IRTF}}}task-status") or ""
            for b in self.bodies
            if b.findtext(f"{{{IRTF}}}task-id") == task_id
        ]

    def last(self, task_id: str, status: str) -> etree._Element:
        found = [
            b
            for b in self.bodies
            if b.findtext(f"{{{IRTF}}}task-id") == task_id and b.findtext(f"{{{IRTF}}}task-status") == status
        ]
        assert found, f"no {status} notification for {task_id}"
        return found[-1]


def get_task(raw: RawSession, task_id: str) -> etree._Element:
    reply = raw.rpc(
        f'<get><filter type="subtree"><tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id></task></tasks></filter></get>'
    )
    task = reply.find(f"nc:data/{{{IRTF}}}tasks/{{{IRTF}}}task", NS)
    assert task is not None
    return task


def answer(task_id: str, param_id: str, data: str, fmt: str = "text/plain") -> str:
    """The assigner's edit: a new data-param and one more msg-data entry of the task."""
    return (
        f'<edit-config><target><running/></target><config><data-params xmlns="{IRTF}"><id>{param_id}</id>'
        f"<dataType>text</dataType><format>{fmt}</format><data>{data}</data></data-params>"
        f'<tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id><msg-data>{param_id}</msg-data></task></tasks>'
        "</config></edit-config>"
    )


@pytest.fixture
def asking() -> AskingBehaviour:
    return AskingBehaviour()


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile, asking: AskingBehaviour) -> Iterator[AgentServer]:
    config = ServerConfig(
        state_dir=tmp_path / "state",
        port=0,
        profile=profile,
        behaviour=asking,
        embedder=FakeEmbedder(),
        clock=ManualClock(from_rfc3339("2026-10-05T00:00:00Z")),
    )
    with AgentServer(config) as running:
        yield running


def test_blocked_suspended_input_required_round_trip(server: AgentServer, asking: AskingBehaviour) -> None:
    watcher = Watcher(server.port)
    raw = RawSession(server.port)
    try:
        assert (
            raw.rpc(f"<edit-config><target><running/></target>{task_xml('s1', extra=ASYNC)}</edit-config>").find(
                "nc:ok", NS
            )
            is not None
        )
        wait_for(lambda: "blocked" in watcher.statuses("s1"))
        assert watcher.last("s1", "blocked").findtext(f"{{{IRTF}}}reason") == "waiting for the RAN agent's topology"
        assert get_task(raw, "s1").findtext(f"{{{IRTF}}}task-status") == "blocked"
        asking.go_on.set()
        wait_for(lambda: "input-required" in watcher.statuses("s1"))

        # The notification carries the input-required list with its start-time (Figure 9).
        asked = watcher.last("s1", "input-required")
        entry = asked.find(f"{{{IRTF}}}input-required")
        assert entry is not None
        assert entry.findtext(f"{{{IRTF}}}required") == ALARMS
        assert entry.findtext(f"{{{IRTF}}}start-time") == "2026-10-05T00:00:00.000000Z"
        assert entry.findtext(f"{{{IRTF}}}status") == "input-required"
        assert asked.findtext(f"{{{IRTF}}}previous-status") == "processing"
        # ... and so does the task's state (taskResultQuery).
        state = get_task(raw, "s1")
        assert state.findtext(f"{{{IRTF}}}task-status") == "input-required"
        assert state.findtext(f"{{{IRTF}}}input-required/{{{IRTF}}}required") == ALARMS

        # The assigner answers by editing the task; the task resumes and finishes with the input.
        assert raw.rpc(answer("s1", "s1-alarms", "ALM-1 LOS SITE-07")).find("nc:ok", NS) is not None
        wait_for(lambda: "finished" in watcher.statuses("s1"))
        assert watcher.statuses("s1") == [
            "created",
            "processing",
            "blocked",
            "processing",
            "suspended",
            "processing",
            "input-required",
            "processing",
            "finished",
        ]
        resumed = [b for b in watcher.bodies if b.findtext(f"{{{IRTF}}}task-status") == "processing"][-1]
        assert resumed.findtext(f"{{{IRTF}}}reason") == "input provided by admin: s1-alarms"
        # The final notification carries the result as data.
        final = watcher.last("s1", "finished")
        result = json.loads(final.findtext(f"{{{IRTF}}}data/{{{IRTF}}}result/{{{IRTF}}}data") or "{}")
        assert result["got"] == ["s1-alarms"] and result["text"] == ["ALM-1 LOS SITE-07"]
        assert result["by"] == "admin" and result["msg_data"] == ["s1-alarms"]
        assert final.findtext(f"{{{IRTF}}}data/{{{IRTF}}}result/{{{IRTF}}}summary") == "analysed"
        # The list is state only while input is required.
        assert get_task(raw, "s1").find(f"{{{IRTF}}}input-required") is None
        for body in watcher.bodies:
            YangContext.default().validate_notification(etree.tostring(body, encoding="unicode"))
    finally:
        watcher.raw.close()
        raw.close()


def test_input_goes_through_the_same_validation_as_an_assignment(server: AgentServer, asking: AskingBehaviour) -> None:
    asking.go_on.set()
    raw = RawSession(server.port)
    try:
        # task-async false: the reply waits, and says that the task now waits for input.
        waiting = error_fields(raw.rpc(f"<edit-config><target><running/></target>{task_xml('s2')}</edit-config>"))
        assert waiting["app-tag"] == "task-input-required" and waiting["path"] == "/irtf-agent:tasks/task[task-id='s2']"
        assert get_task(raw, "s2").findtext(f"{{{IRTF}}}task-status") == "input-required"
        # A structured payload that breaks its template is refused with the same error as on assignment.
        bad = json.dumps(
            {"schema_id": "energy_saving_adjust_v1", "payload": {"cell_ids": "CELL-0401", "action": "explode"}}
        )
        reply = raw.rpc(answer("s2", "s2-bad", bad, "application/json;schema=energy_saving_adjust_v1"))
        fields = error_fields(reply)
        assert fields["tag"] == "invalid-value"
        assert fields["app-tag"] == "invalid-structured-payload"
        assert fields["path"] == "/irtf-agent:data-params[id='s2-bad']/data"
        task = get_task(raw, "s2")
        assert task.findtext(f"{{{IRTF}}}task-status") == "input-required"  # nothing stored, still waiting
        assert task.findtext(f"{{{IRTF}}}msg-data") is None
        # A valid one resumes the task; the behaviour gets the payload admission validated.
        good = json.dumps(
            {"schema_id": "energy_saving_adjust_v1", "payload": {"cell_ids": ["CELL-0401"], "action": "suspend"}}
        )
        assert (
            raw.rpc(answer("s2", "s2-ok", good, "application/json;schema=energy_saving_adjust_v1")).find("nc:ok", NS)
            is not None
        )
        wait_for(lambda: get_task(raw, "s2").findtext(f"{{{IRTF}}}task-status") == "finished")
        result = json.loads(get_task(raw, "s2").findtext(f"{{{IRTF}}}result/{{{IRTF}}}data") or "{}")
        assert result["validated"]["cell_ids"] == ["CELL-0401"]
    finally:
        raw.close()


def test_default_behaviour_asks_for_a_missing_target_object(tmp_path: Path, profile: AgentProfile) -> None:
    """The shipped behaviour uses input-required instead of failing when the prompt names no target."""
    with AgentServer(ServerConfig(state_dir=tmp_path / "st", port=0, profile=profile, schemas="off")) as server:
        raw = RawSession(server.port)
        try:
            task = (
                f'<config><tasks xmlns="{IRTF}"><task><task-id>d1</task-id><task-sendFrom>tester</task-sendFrom>'
                "<content>## task description\nrestart the board</content></task></tasks></config>"
            )
            raw.rpc(f"<edit-config><target><running/></target>{task}</edit-config>")
            wait_for(lambda: get_task(raw, "d1").findtext(f"{{{IRTF}}}task-status") == "input-required")
            required = get_task(raw, "d1").findtext(f"{{{IRTF}}}input-required/{{{IRTF}}}required") or ""
            assert "the target object of task d1" in required
            new_content = (
                f'<edit-config><target><running/></target><config><tasks xmlns="{IRTF}"><task><task-id>d1</task-id>'
                "<content>## target object\nBOARD-3\n## task description\nrestart the board</content>"
                "</task></tasks></config></edit-config>"
            )
            assert raw.rpc(new_content).find("nc:ok", NS) is not None
            wait_for(lambda: get_task(raw, "d1").findtext(f"{{{IRTF}}}task-status") == "finished")
            data = json.loads(get_task(raw, "d1").findtext(f"{{{IRTF}}}result/{{{IRTF}}}data") or "{}")
            assert data["target_object"] == "BOARD-3"
        finally:
            raw.close()


class ProposingBehaviour(DefaultBehaviour):
    """Cannot meet the expected response: asks its assigner (over NETCONF) whether a partial result will do."""

    def __init__(self, assigner_port: int) -> None:
        super().__init__()
        self.assigner_port = assigner_port

    def execute(self, task: Task, run: TaskRun) -> None:
        run.set_status(TaskStatus.PROCESSING)
        proposal = build_prompt("SITE-07", "diagnose the outage of 3 of the 4 cells (cell 4 is unreachable)")
        run.block(f"asking {task.send_from} whether a partial diagnosis will do")
        with AgentClient.connect("127.0.0.1", self.assigner_port, username="admin", password="admin") as client:
            answer: NegotiationResult = run.negotiate_fulfillment(proposal, via=client.negotiate)
        run.resume()
        if answer.fulfilled:
            run.finish(TaskResult(summary=f"partial diagnosis accepted: {answer.reason}"))
        else:
            run.fail(f"the assigner refused the partial diagnosis: {answer.reason}")


def test_executor_opens_fulfillment_negotiation_towards_its_assigner(tmp_path: Path) -> None:
    agent = dict(TEST_PROFILE["irtf-agent:agent"])  # type: ignore[call-overload]
    assigner_profile = AgentProfile.from_dict({"irtf-agent:agent": {**agent, "name": "assigner-agent"}})
    with AgentServer(ServerConfig(state_dir=tmp_path / "a", port=0, profile=assigner_profile, schemas="off")) as a:
        executor = ServerConfig(
            state_dir=tmp_path / "b",
            port=0,
            profile=AgentProfile.from_dict(TEST_PROFILE),
            behaviour=ProposingBehaviour(a.port),
            schemas="off",
        )
        with AgentServer(executor) as b:
            raw = RawSession(b.port)
            try:
                task = task_xml("f1").replace("<task-sendFrom>tester", "<task-sendFrom>assigner-agent")
                raw.rpc(f"<edit-config><target><running/></target>{task}</edit-config>")
                wait_for(lambda: get_task(raw, "f1").findtext(f"{{{IRTF}}}task-status") == "finished")
                summary = get_task(raw, "f1").findtext(f"{{{IRTF}}}result/{{{IRTF}}}summary") or ""
                assert summary.startswith("partial diagnosis accepted: assigner-agent accepts the proposal of")
                assert "for task f1: diagnose the outage of 3 of the 4 cells" in summary
            finally:
                raw.close()


def test_task_subscription_is_honoured_over_netconf_and_refused_otherwise(agent_server: AgentServer) -> None:
    watcher = Watcher(agent_server.port)
    raw = RawSession(agent_server.port)

    def sub(protocol: str, method: str) -> str:
        return (
            f"<task-subscription><subscript-protocol>{protocol}</subscript-protocol>"
            f"<subscript-method>{method}</subscript-method></task-subscription>"
        )

    try:
        http = error_fields(raw.rpc(EDIT.format(task_xml("h1", extra=sub("HTTP", "webhook")))))
        assert http["tag"] == "invalid-value" and http["app-tag"] == "subscription-not-supported"
        assert http["path"] == "/irtf-agent:tasks/task[task-id='h1']/task-subscription/subscript-protocol"
        poll = error_fields(raw.rpc(EDIT.format(task_xml("h2", extra=sub("NETCONF", "poll")))))
        assert poll["path"] == "/irtf-agent:tasks/task[task-id='h2']/task-subscription/subscript-method"
        ok = raw.rpc(EDIT.format(task_xml("h3", extra=sub("netconf", "create-subscription"))))
        assert ok.find("nc:ok", NS) is not None
        wait_for(lambda: "finished" in watcher.statuses("h3"))
        assert watcher.statuses("h1") == [] and watcher.statuses("h2") == []  # nothing was stored
    finally:
        watcher.raw.close()
        raw.close()
