"""A task sent over A2A while the agent's state directory is full is refused with an A2A error that says so
(``resource-denied`` over NETCONF), the agent goes on serving, and the same message is taken once space
returns (found by lab soak: the refusal escaped the A2A face as an internal error)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import httpx
from a2a.types import AgentCard
from a2asupport import collect, energy_agent_config, run, text

from an_agent.lab.chaos import fill, free
from an_agent.server import AgentServer


def test_a_full_disk_is_an_a2a_refusal_and_the_agent_goes_on(small_disk: Path) -> None:
    server = AgentServer(energy_agent_config(small_disk, 0.05))
    server.start()
    try:

        async def send(client: Any, card: AgentCard, http: httpx.AsyncClient) -> tuple[str, int]:
            with contextlib.closing(sqlite3.connect(small_disk / "agent.db")) as db:
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the next write has to grow the log
            fill(small_disk)
            try:
                await collect(client.send_message(text("diagnose the outage of SITE-07")))
                refusal = ""
            except Exception as exc:  # the SDK raises the A2A error it got
                refusal = str(exc)
            free(small_disk)
            events = await collect(client.send_message(text("diagnose the outage of SITE-07")))
            return refusal, len(events)

        refusal, events = run(server, send)
    finally:
        server.stop()
    assert "no space left" in refusal and "the change was not made" in refusal
    assert events >= 1
