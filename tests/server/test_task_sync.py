"""task-async false over real NETCONF sessions: the reply to the creating edit waits for the task's end.

draft-wang 5.2: "For synchronous tasks, the receiving agent returns the task
status in the response to the task assignment interface." The wait holds no
datastore lock and is limited (`ServerConfig.task_sync_wait`); past it the
reply is an rpc-error saying the task goes on.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from an_agent.agents.default import DefaultBehaviour
from an_agent.model import AgentProfile, Task, TaskResult, TaskStatus
from an_agent.runtime.behaviour import TaskRun
from an_agent.runtime.principal import Principal
from an_agent.server import AgentServer, ServerConfig
from rawnc import NS, RawSession, error_fields
from support import IRTF, task_xml

ASYNC = "<task-async>true</task-async>"
EDIT = "<edit-config><target><running/></target>{}</edit-config>"


class Gated(DefaultBehaviour):
    """Finishes once ``release`` is set (or after 10 s)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def execute(self, task: Task, run: TaskRun) -> None:
        run.set_status(TaskStatus.PROCESSING)
        self.release.wait(10)
        run.finish(TaskResult(summary=f"done {task.task_id}"))


def status(raw: RawSession, task_id: str) -> str | None:
    reply = raw.rpc(
        f'<get><filter type="subtree"><tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id><task-status/>'
        "</task></tasks></filter></get>"
    )
    return reply.findtext(f"nc:data/{{{IRTF}}}tasks/{{{IRTF}}}task/{{{IRTF}}}task-status", namespaces=NS)


def test_sync_reply_comes_after_the_end_and_holds_no_lock(tmp_path: Path, profile: AgentProfile) -> None:
    behaviour = Gated()
    config = ServerConfig(state_dir=tmp_path / "s", port=0, profile=profile, behaviour=behaviour, schemas="off")
    with AgentServer(config) as server:
        waiting, other = RawSession(server.port), RawSession(server.port)
        try:
            replies: list[object] = []
            sync = threading.Thread(target=lambda: replies.append(waiting.rpc(EDIT.format(task_xml("w1")), "w1")))
            sync.start()
            deadline = time.monotonic() + 10
            while status(other, "w1") != "processing" and time.monotonic() < deadline:
                time.sleep(0.02)
            assert not replies  # still waiting for the task's end
            # Meanwhile the datastore is free: another session edits, locks and unlocks running.
            assert other.rpc(EDIT.format(task_xml("w2", extra=ASYNC)), "w2").find("nc:ok", NS) is not None
            assert other.rpc("<lock><target><running/></target></lock>", "l").find("nc:ok", NS) is not None
            assert other.rpc("<unlock><target><running/></target></unlock>", "u").find("nc:ok", NS) is not None
            behaviour.release.set()
            sync.join(10)
            (reply,) = replies
            assert reply.find("nc:ok", NS) is not None  # type: ignore[attr-defined]
            assert status(other, "w1") == "finished"  # the reply came after the end
        finally:
            behaviour.release.set()
            waiting.close()
            other.close()


def test_sync_wait_is_limited_and_says_the_task_goes_on(tmp_path: Path, profile: AgentProfile) -> None:
    behaviour = Gated()
    config = ServerConfig(
        state_dir=tmp_path / "s", port=0, profile=profile, behaviour=behaviour, schemas="off", task_sync_wait=0.3
    )
    with AgentServer(config) as server:
        raw = RawSession(server.port)
        try:
            started = time.monotonic()
            fields = error_fields(raw.rpc(EDIT.format(task_xml("slow"))))
            assert time.monotonic() - started < 5
            assert fields["tag"] == "operation-failed" and fields["app-tag"] == "task-still-running"
            assert fields["path"] == "/irtf-agent:tasks/task[task-id='slow']"
            assert "goes on (status processing)" in (fields["message"] or "")
            assert "at most 0.3 s" in (fields["message"] or "")
            # The task was created and goes on.
            assert status(raw, "slow") == "processing"
            # task-async true: the reply does not wait (the behaviour is still held).
            assert raw.rpc(EDIT.format(task_xml("quick", extra=ASYNC))).find("nc:ok", NS) is not None
            assert status(raw, "quick") == "processing"
        finally:
            behaviour.release.set()
            raw.close()


def test_cli_sends_task_async_true_unless_wait(tmp_path: Path, profile: AgentProfile) -> None:
    from an_agent.cli import main

    behaviour = Gated()
    config = ServerConfig(state_dir=tmp_path / "s", port=0, profile=profile, behaviour=behaviour, schemas="off")
    with AgentServer(config) as server:
        try:
            argv = ["task", "assign", "--port", str(server.port), "--id", "cli1", "--target", "X", "--json"]
            assert main([*argv, "--description", "check it"]) == 0  # returns although the task is held
            stored = server.operations.get_task(Principal.authenticated("admin"), "cli1")
            assert stored.task_async is True and stored.status == TaskStatus.PROCESSING
        finally:
            behaviour.release.set()
