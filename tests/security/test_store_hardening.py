"""Attacks and accidents on the state directory (issue 10): permissions, damage, a bad row."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest

from an_agent.errors import StoreError
from an_agent.model import AgentProfile
from an_agent.server import AgentServer, ServerConfig
from an_agent.store.agent_store import AgentStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_state_directory_and_files_are_private(tmp_path: Path, profile: AgentProfile) -> None:
    state = tmp_path / "state"
    with AgentServer(ServerConfig(state_dir=state, port=0, profile=profile, schemas="validate")):
        files = {p.name: _mode(p) for p in state.iterdir() if p.is_file()}
        assert _mode(state) == 0o700
        assert {"agent.db", "agent.db-wal", "agent.db-shm", "evolution.db", "ssh_host_rsa_key"} <= set(files)
        assert {name: mode for name, mode in files.items() if mode != 0o600} == {}


def test_existing_database_files_are_made_private(tmp_path: Path) -> None:
    AgentStore(tmp_path).close()
    (tmp_path / "agent.db").chmod(0o644)
    store = AgentStore(tmp_path)
    try:
        assert _mode(tmp_path / "agent.db") == 0o600
    finally:
        store.close()


def _damage(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("CREATE TABLE filler (x TEXT)")
    db.executemany("INSERT INTO filler VALUES (?)", [("y" * 500,) for _ in range(400)])
    db.commit()
    db.close()
    data = bytearray(path.read_bytes())
    page = 4096
    data[page * 5 : page * 5 + 200] = b"\xa5" * 200  # scribble over a b-tree page, not the header
    path.write_bytes(bytes(data))


def test_a_damaged_database_stops_the_agent_with_a_clear_message(tmp_path: Path) -> None:
    AgentStore(tmp_path).close()
    _damage(tmp_path / "agent.db")
    before = (tmp_path / "agent.db").read_bytes()
    with pytest.raises(StoreError, match="integrity check") as info:
        AgentStore(tmp_path)
    assert "agent.db" in str(info.value)
    assert (tmp_path / "agent.db").read_bytes() == before  # never silently replaced


def test_a_bad_row_is_named_when_start_up_refuses(tmp_path: Path, profile: AgentProfile) -> None:
    state = tmp_path / "state"
    AgentStore(state).close()
    db = sqlite3.connect(state / "agent.db")
    db.execute(
        "INSERT INTO config_unit VALUES (?, '', 0, ?)",
        ("/irtf-agent:tasks", '<tasks xmlns="urn:ietf:params:xml:ns:yang:irtf-agent"><task>'),
    )
    db.commit()
    db.close()
    with pytest.raises(StoreError) as info:
        AgentServer(ServerConfig(state_dir=state, port=0, profile=profile, schemas="off"))
    message = str(info.value)
    assert "/irtf-agent:tasks" in message and "config_unit" in message and "not well-formed" in message
