"""`OneAtATime` on the lab's simulated clock: work on one element is done once while it is under way, however
many activities ask for it; they all get its outcome (found by lab soak: a base station restarted twice)."""

from __future__ import annotations

from an_agent.agents.failures import TaskFailure
from an_agent.agents.once import OneAtATime
from an_agent.lab.kernel import SimKernel


def test_work_under_way_is_joined_and_done_again_once_it_ended() -> None:
    kernel = SimKernel(0.0)
    restarts: OneAtATime[bool] = OneAtATime(kernel, "restart")
    done: list[tuple[str, float]] = []
    got: dict[str, tuple[bool, bool]] = {}
    joined: list[str] = []

    def restart() -> bool:
        kernel.sleep(600.0)  # a remote restart takes ten minutes
        done.append(("SITE-21", kernel.now()))
        return True

    def asker(name: str, delay: float) -> None:
        kernel.sleep(delay)
        got[name] = restarts.run("SITE-21", restart, lambda: joined.append(name))

    kernel.spawn("first", lambda: asker("first", 0.0))
    kernel.spawn("second", lambda: asker("second", 300.0))  # asks while the first restart is under way
    kernel.spawn("later", lambda: asker("later", 900.0))  # asks after it ended
    try:
        assert kernel.run() == "idle"
    finally:
        assert kernel.close() == []
    assert got == {"first": (True, True), "second": (True, False), "later": (True, True)}
    assert done == [("SITE-21", 600.0), ("SITE-21", 1500.0)] and joined == ["second"]


def test_a_failure_of_the_work_under_way_fails_those_that_joined_it() -> None:
    kernel = SimKernel(0.0)
    repairs: OneAtATime[str] = OneAtATime(kernel, "repair")
    outcome: dict[str, BaseException | str] = {}

    def repair() -> str:
        kernel.sleep(60.0)
        raise TaskFailure("resetting the ports of LINK-A4 did not bring them up")

    def asker(name: str) -> None:
        try:
            outcome[name] = repairs.run("LINK-A4", repair)[0]
        except TaskFailure as exc:
            outcome[name] = exc

    kernel.spawn("first", lambda: asker("first"))
    kernel.spawn("second", lambda: asker("second"))
    try:
        kernel.run()
    finally:
        assert kernel.close() == []
    assert [str(outcome[n]) for n in ("first", "second")] == [
        "resetting the ports of LINK-A4 did not bring them up"
    ] * 2
    assert all(isinstance(outcome[n], TaskFailure) for n in ("first", "second")), outcome
