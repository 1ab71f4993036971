"""A state directory that runs out of space (found by lab soak): the write is refused whole with an error
that says so, nothing is corrupted, and writes work again once space is freed."""

from __future__ import annotations

from pathlib import Path

import pytest

from an_agent._files import write_private
from an_agent.errors import StateFull
from an_agent.lab.chaos import fill, free
from an_agent.lab.soak.resources import sqlite_integrity
from an_agent.store.agent_store import AgentStore, ConfigUnit, TaskState


def test_a_full_disk_refuses_the_write_whole_and_the_store_goes_on_once_space_returns(small_disk: Path) -> None:
    store = AgentStore(small_disk)
    try:
        store.save_config([ConfigUnit("/a", "", 0, "<x/>")], [], {"t1": "alice"})
        fill(small_disk)
        big = [ConfigUnit(f"/u{i}", "", i, "<x>" + "y" * 4000 + "</x>") for i in range(200)]
        with pytest.raises(StateFull, match=r"no space left in .*the change was not made"):
            store.save_config(big, ["/a"], {"t2": "bob"})
        with pytest.raises(StateFull):
            store.save_task_state(TaskState("t1", "processing", None, None, None, None, 2.0), (2.0, "<n/>"))
        assert [u.unit_key for u in store.load_config()] == ["/a"]  # nothing of the refused writes
        free(small_disk)
        store.save_task_state(TaskState("t1", "finished", None, None, None, None, 3.0), (3.0, "<n/>"))
        assert store.load_task_states()["t1"].status == "finished"
    finally:
        store.close()
    assert sqlite_integrity(small_disk)["agent.db"] == "ok"


def test_an_agent_restarted_on_a_full_disk_rewrites_its_files_without_space(small_disk: Path) -> None:
    path = small_disk / "a2a-trust.pem"
    write_private(path, b"the lab's certificates")
    fill(small_disk)
    write_private(path, b"the lab's certificates")  # the same again: nothing to write (found by lab soak)
    with pytest.raises(OSError, match="No space left"):
        write_private(path, b"other certificates")
    assert path.read_bytes() == b"the lab's certificates"


def test_a_full_disk_at_open_is_said_to_be_full_not_a_damaged_database(small_disk: Path) -> None:
    AgentStore(small_disk).close()
    fill(small_disk)
    with pytest.raises(StateFull, match=r"no space left in .*free space there"):
        AgentStore(small_disk)
    free(small_disk)
    AgentStore(small_disk).close()
    assert sqlite_integrity(small_disk)["agent.db"] == "ok"


def test_an_agent_started_on_a_full_disk_waits_for_space_then_serves(small_disk: Path) -> None:
    """``an-agent serve`` on a full state directory, its output in a log on that same disk (as a lab agent's
    is), waits and serves once space is freed (found by lab soak: a lab agent restarted on a full disk
    died, "failed its integrity check", and then died writing that it waited)."""
    import subprocess
    import sys
    import time

    AgentStore(small_disk).close()
    log = small_disk / "agent.log"
    with log.open("ab") as output:
        fill(small_disk)
        argv = [sys.executable, "-m", "an_agent.cli", "serve", "--state-dir", str(small_disk), "--port", "0"]
        process = subprocess.Popen(argv, stdout=output, stderr=output)
    try:
        time.sleep(4.0)
        assert process.poll() is None, log.read_text()  # waiting, not dead
        free(small_disk)
        deadline = time.monotonic() + 30
        while "an-agent: serving" not in log.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            time.sleep(0.2)
        assert "an-agent: serving" in log.read_text()
    finally:
        process.terminate()
        process.wait(30)


def test_a_status_line_on_a_full_disk_is_lost_not_fatal(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve``'s status lines go to a lab agent's log in its state directory: on a full disk they are lost
    and the agent goes on (found by lab soak: it died writing "serving", with code 1 and no word anywhere)."""
    from an_agent.cli import serve

    log = small_disk / "agent.log"
    with log.open("w", encoding="utf-8", buffering=1) as output:
        fill(small_disk)
        monkeypatch.setattr("sys.stderr", output)
        serve._say("an-agent: serving x" + " on the full disk" * 4096)  # more than any page left
    free(small_disk)
