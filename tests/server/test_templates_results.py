"""Templates and results over real NETCONF sessions: default_value applied, results labelled with the response schema.

draft-zhou 3.1 (default_value), 3.2 step 5 (structured results), A2A
object-schemas (``application/json;schema=<name>`` output modes).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from an_agent.agents.default import DefaultBehaviour
from an_agent.clock import ManualClock, from_rfc3339
from an_agent.model import AgentProfile, Task, TaskResult
from an_agent.runtime.behaviour import TaskRun
from an_agent.schemas.validate import ValidatedPayload
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder
from rawnc import NS, RawSession, wait_for
from support import IRTF, TEST_PROFILE

MODE = "application/json;schema=fault_diagnosis_v1"


class Diagnoser(DefaultBehaviour):
    """Keeps the payload admission validated; answers the JSON object the task's content names after '=>'."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[ValidatedPayload | None] = []

    def execute(self, task: Task, run: TaskRun) -> None:
        self.seen.append(self.agent.payload(task.task_id))
        answer = (task.content or "").split("=>", 1)[1].strip()
        run.finish(TaskResult(summary="diagnosed", format="application/json", data=answer))


@pytest.fixture
def diagnoser() -> Diagnoser:
    return Diagnoser()


@pytest.fixture
def server(tmp_path: Path, diagnoser: Diagnoser) -> Iterator[AgentServer]:
    agent = dict(TEST_PROFILE["irtf-agent:agent"])  # type: ignore[call-overload]
    skill = {**agent["skills"]["skill"][0], "input-modes": ["text", MODE], "output-modes": ["text", MODE]}
    profile = AgentProfile.from_dict({"irtf-agent:agent": {**agent, "skills": {"skill": [skill]}}})
    config = ServerConfig(
        state_dir=tmp_path / "state",
        port=0,
        profile=profile,
        behaviour=diagnoser,
        embedder=FakeEmbedder(),
        schemas="validate",
        clock=ManualClock(from_rfc3339("2026-10-05T00:00:00Z")),
    )
    with AgentServer(config) as running:
        yield running


def assign(raw: RawSession, task_id: str, payload: dict[str, object], answer: str) -> None:
    envelope = json.dumps({"schema_id": "fault_diagnosis_v1", "payload": payload})
    reply = raw.rpc(
        f'<edit-config><target><running/></target><config><data-params xmlns="{IRTF}"><id>{task_id}-p</id>'
        f"<dataType>text</dataType><format>{MODE}</format><data>{envelope}</data></data-params>"
        f'<tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id><task-sendFrom>noc-1</task-sendFrom>'
        f"<content>## target object\nSITE-07\n## task description\ndiagnose =&gt; {answer}</content>"
        f"<msg-data>{task_id}-p</msg-data></task></tasks></config></edit-config>"
    )
    assert reply.find("nc:ok", NS) is not None, etree.tostring(reply).decode()


def stored_payload(raw: RawSession, param_id: str) -> dict[str, object]:
    reply = raw.rpc(
        f'<get-config><source><running/></source><filter type="subtree"><data-params xmlns="{IRTF}"><id>{param_id}</id>'
        "</data-params></filter></get-config>"
    )
    return json.loads(reply.findtext(f"nc:data/{{{IRTF}}}data-params/{{{IRTF}}}data", namespaces=NS) or "{}")  # type: ignore[no-any-return]


def result_format(raw: RawSession, task_id: str) -> str | None:
    reply = raw.rpc(
        f'<get><filter type="subtree"><tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id></task></tasks></filter></get>'
    )
    return reply.findtext(f"nc:data/{{{IRTF}}}tasks/{{{IRTF}}}task/{{{IRTF}}}result/{{{IRTF}}}format", namespaces=NS)


def test_default_values_are_applied_and_stored(server: AgentServer, diagnoser: Diagnoser) -> None:
    raw = RawSession(server.port)
    try:
        assign(raw, "d1", {"fault_type": "power_failure", "severity": "critical"}, '{"fault_type": "power_failure"}')
        # The stored payload carries the template's defaults for the keys the client left out ...
        assert stored_payload(raw, "d1-p")["payload"] == {
            "fault_type": "power_failure",
            "severity": "critical",  # given: kept
            "domain": "wireless",  # default_value of the template
        }
        # ... and so does the payload the behaviour is handed (validated once).
        (seen,) = diagnoser.seen
        assert seen is not None and seen.values["domain"] == "wireless" and seen.values["severity"] == "critical"
    finally:
        raw.close()


def test_results_carry_the_response_schema_the_skill_declares(server: AgentServer) -> None:
    raw = RawSession(server.port)
    try:
        assign(
            raw,
            "r1",
            {"fault_type": "power_failure"},
            '{"fault_type": "power_failure", "affected_site_ids": ["SITE-07"]}',
        )
        wait_for(lambda: result_format(raw, "r1") is not None)
        assert result_format(raw, "r1") == MODE
        # A result that is not a valid response stays plain JSON.
        assign(raw, "r2", {"fault_type": "power_failure"}, '{"fault_type": 5}')
        wait_for(lambda: result_format(raw, "r2") is not None)
        assert result_format(raw, "r2") == "application/json"
    finally:
        raw.close()
