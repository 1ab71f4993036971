"""What the tests of an agent's sessions to a peer share (`an_agent.agents.peers`): a lab clock to run a
request on, a port nothing listens on, a peer whose tasks run until told to end, the threads of a peer."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from an_agent.lab.kernel import SimKernel
from an_agent.model import NegotiationRequest, NegotiationResult, NegotiationType, Task, TaskResult
from an_agent.runtime.behaviour import Behaviour, TaskRun

START = 1000.0


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def play(kernel: SimKernel, activity: Callable[[], Any]) -> Any:
    """Run ``activity`` as the lab's one activity until the kernel is idle; its value (or its error)."""
    outcome: dict[str, Any] = {}

    def body() -> None:
        try:
            outcome["value"] = activity()
        except Exception as exc:
            outcome["error"] = exc

    kernel.spawn("test", body)
    assert kernel.run() == "idle"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class HeldUntilOpened(Behaviour):
    """Finishes each task once ``gate`` is opened (a task that runs a while at the executor); an agent that
    stops meanwhile leaves it running (it runs again when the agent starts again)."""

    def __init__(self) -> None:
        self.gate = threading.Event()

    def execute(self, task: Task, run: TaskRun) -> None:
        deadline = time.monotonic() + 30
        while not self.gate.is_set():
            assert time.monotonic() < deadline, "the gate was never opened"
            if run.wait_cancelled(0.05):
                return  # the agent stops
        run.finish(TaskResult(summary=f"done {task.task_id}"))

    def negotiate(self, request: NegotiationRequest, task: Task | None) -> NegotiationResult:
        return NegotiationResult(type=NegotiationType.FEASIBILITY, feasible=True, reason="ok")


def peer_threads(me: str = "me", peer: str = "peer") -> list[str]:
    """The names of the live threads of ``me``'s link to ``peer`` (notifications, A2A streams)."""
    return sorted(t.name for t in threading.enumerate() if t.name.endswith((f"{me}<-{peer}", f"{me}->{peer}")))


def wait_logged(caplog: pytest.LogCaptureFixture, text: str, failure: str, seconds: float = 30.0) -> None:
    """Wait until a record ``caplog`` captured contains ``text``; fail with ``failure`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not any(text in record.getMessage() for record in caplog.records):
        assert time.monotonic() < deadline, failure
        time.sleep(0.05)
