"""SimKernel: simulated time moves only when every activity waits, and in-flight work holds it."""

from __future__ import annotations

import threading
import time

import pytest

from an_agent.agents.environment import Shutdown
from an_agent.lab.kernel import LabStall, SimKernel

T0 = 1_000_000.0


def test_sleepers_wake_in_simulated_time_order() -> None:
    kernel = SimKernel(T0)
    seen: list[tuple[str, float]] = []
    lock = threading.Lock()

    def sleeper(name: str, seconds: float) -> None:
        kernel.sleep(seconds)
        with lock:
            seen.append((name, kernel.now() - T0))

    for name, seconds in (("c", 300.0), ("a", 5.0), ("b", 60.0)):
        kernel.spawn(name, lambda n=name, s=seconds: sleeper(n, s))  # type: ignore[misc]
    assert kernel.run() == "idle"
    assert seen == [("a", 5.0), ("b", 60.0), ("c", 300.0)]
    assert kernel.now() == T0 + 300.0
    assert kernel.close() == []


def test_time_does_not_move_while_an_activity_works() -> None:
    kernel = SimKernel(T0)
    observed: list[float] = []

    def slow_worker() -> None:
        time.sleep(0.2)  # real work (e.g. a NETCONF exchange): simulated time must stand still
        observed.append(kernel.now() - T0)
        kernel.sleep(10)
        observed.append(kernel.now() - T0)

    def quick_sleeper() -> None:
        kernel.sleep(1)
        observed.append(kernel.now() - T0)

    kernel.spawn("slow", slow_worker)
    kernel.spawn("quick", quick_sleeper)
    kernel.run()
    assert observed == [0.0, 1.0, 10.0]
    kernel.close()


def test_a_pending_handoff_holds_time_until_both_sides_arrived() -> None:
    kernel = SimKernel(T0)
    key = ("agent-b", "task-1")
    results: list[tuple[str, float]] = []
    executor_done = threading.Event()

    def assigner() -> None:
        future = kernel.expect(key)
        kernel.spawn("executor", executor)
        value = future.wait()
        results.append((value, kernel.now() - T0))

    def executor() -> None:
        kernel.sleep(30)
        kernel.arrive(key)  # the executor returned; its notification is still on its way
        executor_done.set()

    def notifier() -> None:  # not an activity: a NETCONF notification reader
        executor_done.wait(5)
        time.sleep(0.2)  # in flight: the kernel must not move time meanwhile
        kernel.complete(key, "finished")

    def bystander() -> None:
        kernel.sleep(31)
        results.append(("bystander", kernel.now() - T0))

    threading.Thread(target=notifier).start()
    kernel.spawn("assigner", assigner)
    kernel.spawn("bystander", bystander)
    kernel.run()
    assert results == [("finished", 30.0), ("bystander", 31.0)]
    kernel.close()


def test_with_peers_in_other_processes_the_notification_alone_ends_a_handoff() -> None:
    # `serve --topology`: the executor is another process with its own kernel; its arrival never comes here
    kernel = SimKernel(T0, stall_timeout=5.0, peers_elsewhere=True)
    key = ("agent-b", "task-1")
    results: list[tuple[str, float]] = []

    def assigner() -> None:
        future = kernel.expect(key)
        value = future.wait()
        kernel.sleep(60)  # time must still move after the hand-off
        results.append((value, kernel.now() - T0))

    def notifier() -> None:  # the NETCONF notification reader
        time.sleep(0.2)
        kernel.complete(key, "finished")

    threading.Thread(target=notifier).start()
    kernel.spawn("assigner", assigner)
    clock = threading.Thread(target=kernel.run, kwargs={"forever": True})  # as `serve --topology` plays it
    clock.start()
    deadline = time.monotonic() + 10
    while not results and time.monotonic() < deadline:
        time.sleep(0.05)
    assert results == [("finished", 60.0)]
    assert kernel.busy_labels() == {}
    kernel.close()
    clock.join(5)


def test_queue_hands_items_to_a_waiting_getter() -> None:
    kernel = SimKernel(T0)
    queue = kernel.queue("q")
    got: list[tuple[str, float]] = []

    def consumer() -> None:
        for _ in range(2):
            got.append((queue.get(), kernel.now() - T0))

    def producer() -> None:
        kernel.sleep(7)
        queue.put("first")
        kernel.sleep(3)
        queue.put("second")

    kernel.spawn("consumer", consumer)
    kernel.spawn("producer", producer)
    kernel.run()
    assert got == [("first", 7.0), ("second", 10.0)]
    kernel.close()


def test_cancelled_timer_does_not_run_or_move_time() -> None:
    kernel = SimKernel(T0)
    ran: list[str] = []
    timer = kernel.call_at(T0 + 3600, "late", lambda: ran.append("late"))
    kernel.call_at(T0 + 60, "early", lambda: ran.append("early"))
    timer.cancel()
    assert kernel.run() == "idle"
    assert ran == ["early"]
    assert kernel.now() == T0 + 60
    kernel.close()


def test_run_stops_at_the_deadline() -> None:
    kernel = SimKernel(T0)
    kernel.call_at(T0 + 7200, "never", lambda: None)
    assert kernel.run(until=T0 + 3600) == "deadline"
    kernel.close()


def test_a_lost_hold_is_reported_with_its_label() -> None:
    kernel = SimKernel(T0, stall_timeout=0.3)
    kernel.hold("ran-fault: accepted task-7")
    kernel.call_at(T0 + 1, "tick", lambda: None)
    with pytest.raises(LabStall, match="ran-fault: accepted task-7"):
        kernel.run()
    kernel.close()


def test_close_unblocks_waiting_activities() -> None:
    kernel = SimKernel(T0)
    ended: list[str] = []

    def waiter() -> None:
        try:
            kernel.future("never set").wait()
        except Shutdown:
            ended.append("shutdown")
            raise

    kernel.spawn("waiter", waiter)
    assert kernel.run() == "idle"  # the waiter waits on nothing scheduled: nothing left to do
    assert kernel.close() == []
    assert ended == ["shutdown"]


def test_a_stuck_activity_costs_one_join_timeout_however_often_close_is_called() -> None:
    # An agent closes its kernel before its server stops and again as it leaves the lab: an activity stuck
    # outside the kernel (a peer request that never returns) used to cost one join timeout per call, and
    # the two together outlasted the lab's stop grace.
    kernel = SimKernel(T0)
    release = threading.Event()
    kernel.spawn("stuck in a peer request", lambda: release.wait(60))
    started = time.monotonic()
    first = kernel.close(join_timeout=2.0)
    second = kernel.close(join_timeout=2.0)
    waited = time.monotonic() - started
    release.set()
    assert first == second and len(first) == 1
    assert 2.0 <= waited < 3.5, waited  # one timeout (2 s), not two (4 s)


def test_activity_errors_are_collected() -> None:
    kernel = SimKernel(T0)

    def broken() -> None:
        raise RuntimeError("behaviour bug")

    kernel.spawn("broken", broken)
    kernel.run()
    kernel.close()
    assert kernel.stats.errors == ["broken: RuntimeError: behaviour bug"]


def test_a_thread_outside_the_lab_may_not_sleep_on_simulated_time() -> None:
    kernel = SimKernel(T0)
    with pytest.raises(RuntimeError, match="not a lab activity"):
        kernel.sleep(1)
    kernel.close()
