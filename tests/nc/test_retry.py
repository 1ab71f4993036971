"""Riding out an unreachable peer: the backoff policy, `with_retry`, and the idempotent re-send of a task."""

from __future__ import annotations

import logging
import random

import pytest

from an_agent.errors import AuthError, ConnectError, RequestTimeout, RpcError, SessionsClosed
from an_agent.model import Task, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.nc.retry import Backoff, retryable, with_retry
from an_agent.server import AgentServer


def test_backoff_doubles_up_to_the_cap_and_stops_at_the_limit() -> None:
    policy = Backoff(first=1.0, factor=2.0, cap=8.0, limit=40.0, jitter=0.0)
    assert list(policy.delays(random.Random(1))) == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0, 1.0]  # last cut to fit


def test_backoff_jitter_is_bounded_and_reproducible() -> None:
    policy = Backoff(first=1.0, factor=2.0, cap=60.0, limit=1800.0, jitter=0.2)
    delays = list(policy.delays(random.Random("a->b")))
    assert delays == list(policy.delays(random.Random("a->b")))  # the same seed, the same waits
    assert delays != list(policy.delays(random.Random("a->c")))  # agents cut off together spread out
    assert sum(delays) == pytest.approx(1800.0)
    base = [min(2.0**i, 60.0) for i in range(len(delays) - 1)]
    assert all(0.8 * b <= d <= 1.2 * b for b, d in zip(base, delays, strict=False))


@pytest.mark.parametrize(
    "bad", [{"first": 0}, {"factor": 0.5}, {"cap": 0.5}, {"limit": -1}, {"jitter": 1.0}]
)  # fmt: skip
def test_backoff_refuses_unusable_settings(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="not a usable backoff"):
        Backoff(**bad)


def test_only_transport_failures_are_retried() -> None:
    assert retryable(ConnectError("no route")) and retryable(RequestTimeout("no answer"))
    assert not retryable(AuthError("refused")) and not retryable(RpcError.data_missing("no such task"))
    assert not retryable(SessionsClosed("the sessions to peer are closed"))  # the caller stopped


def test_with_retry_waits_on_the_given_clock_until_the_request_succeeds(caplog: pytest.LogCaptureFixture) -> None:
    slept: list[float] = []
    failures = iter([ConnectError("connecting to 198.18.0.2:830: No route to host")] * 3)

    def attempt() -> str:
        error = next(failures, None)
        if error is not None:
            raise error
        return "answer"

    policy = Backoff(first=1.0, factor=2.0, cap=60.0, jitter=0.0)
    with caplog.at_level(logging.WARNING, logger="an_agent.nc.retry"):
        assert (
            with_retry(attempt, policy=policy, sleep=slept.append, rng=random.Random(0), what="a -> b: get") == "answer"
        )
    assert slept == [1.0, 2.0, 4.0]
    assert [r.getMessage() for r in caplog.records] == [
        f"a -> b: get: attempt {n} failed (connecting to 198.18.0.2:830: No route to host); trying again in {d} s"
        for n, d in ((1, "1.0"), (2, "2.0"), (3, "4.0"))
    ]


def test_with_retry_gives_up_at_the_limit_and_never_retries_what_cannot_change() -> None:
    slept: list[float] = []
    calls = 0

    def unreachable() -> None:
        nonlocal calls
        calls += 1
        raise RequestTimeout("no reply within 30 s")

    policy = Backoff(first=1.0, factor=2.0, cap=4.0, limit=10.0, jitter=0.0)
    with pytest.raises(RequestTimeout):
        with_retry(unreachable, policy=policy, sleep=slept.append, rng=random.Random(0), what="x")
    assert slept == [1.0, 2.0, 4.0, 3.0] and calls == 5 and sum(slept) == 10.0

    for error in (AuthError("authentication rejected"), RpcError.access_denied("not yours")):

        def refused(error: Exception = error) -> None:
            raise error

        slept.clear()
        with pytest.raises(type(error)):
            with_retry(refused, policy=policy, sleep=slept.append, rng=random.Random(0), what="x")
        assert slept == []


def test_ensure_task_creates_a_task_once(agent_server: AgentServer) -> None:
    task = Task("t-once", send_from="tester", content=build_prompt("SITE-07", "diagnose the outage"))
    with AgentClient.connect("127.0.0.1", agent_server.port, username="admin", password="admin") as client:
        assert client.ensure_task(task) is True  # not there: created
        assert client.ensure_task(task) is False  # there: the re-send creates nothing
        with pytest.raises(RpcError, match="data-exists"):
            client.assign_task(task)  # a plain creation is still refused, as before
        assert [t.task_id for t in client.list_tasks()].count("t-once") == 1


def test_ensure_task_passes_other_refusals_on(agent_server: AgentServer) -> None:
    task = Task("t-bad", send_from="tester", content="")  # no prompt: the agent refuses the creation
    with AgentClient.connect("127.0.0.1", agent_server.port, username="admin", password="admin") as client:
        with pytest.raises(RpcError) as refused:
            client.assign_task(task)
        with pytest.raises(RpcError) as again:
            client.ensure_task(task)
        assert again.value.error_tag == refused.value.error_tag != "data-exists"
