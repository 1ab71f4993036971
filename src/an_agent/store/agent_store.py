"""Durable agent state in SQLite (WAL): configuration, task state, notification log.

Contract: a method returns only after its transaction is committed, so an
acknowledged request (the caller replies after the call returns) survives
``kill -9``. WAL with ``synchronous=NORMAL`` is durable against a process
crash, which is what kill -9 is; a power loss may lose the last commits
(``durable=True`` switches to ``synchronous=FULL`` for that).

The configuration is kept as *units*: the top-level elements of the running
datastore, with a container's children split out one level deeper so that one
task or one data-param is one row (``/irtf-agent:tasks`` holds every task; a
change to one task must not rewrite all of them). Rows are keyed by a stable
path string chosen by the caller.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from an_agent.errors import StoreError
from an_agent.store.sqlite import commit, open_database, rollback, store_error

# Rows are our own serialisations, but the file may have been edited or damaged: parse them safely.
_ROW_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS config_unit (
    unit_key   TEXT PRIMARY KEY,   -- e.g. /irtf-agent:tasks/task[task-id='t1']
    parent_key TEXT NOT NULL,      -- '' for a top-level unit, else the container's key
    position   INTEGER NOT NULL,   -- order among siblings, to rebuild the tree as it was
    xml        TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS task_state (
    task_id       TEXT PRIMARY KEY,
    status        TEXT NOT NULL,
    reason        TEXT,
    summary       TEXT,
    result_format TEXT,
    result_data   TEXT,
    updated       REAL NOT NULL,
    input_required TEXT           -- JSON list of what the task waits for (status input-required), else NULL
);
CREATE TABLE IF NOT EXISTS notification_log (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    event_time REAL NOT NULL,
    xml        TEXT NOT NULL        -- the notification's content element, without the envelope
);
CREATE INDEX IF NOT EXISTS notification_time ON notification_log(event_time);
-- logged_at (wall clock of the write, for retention) is added by _migrate, so older files gain it too.
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS task_owner (
    task_id TEXT PRIMARY KEY,
    owner   TEXT NOT NULL           -- the authenticated user that created the task
);
"""


@dataclass(frozen=True)
class ConfigUnit:
    unit_key: str
    parent_key: str
    position: int
    xml: str


@dataclass(frozen=True)
class TaskState:
    task_id: str
    status: str
    reason: str | None
    summary: str | None
    result_format: str | None
    result_data: str | None
    updated: float
    input_required: str | None = None
    """JSON: the ``input-required`` entries while the task waits for input (format: `an_agent.runtime.task_records`)."""


@dataclass(frozen=True)
class LoggedNotification:
    seq: int
    event_time: float
    xml: str


class AgentStore:
    """One agent's SQLite database (``<state_dir>/agent.db``); safe to share between threads."""

    def __init__(self, state_dir: Path, durable: bool = False) -> None:
        self.path = state_dir / "agent.db"
        self._db = open_database(self.path, _SCHEMA, "agent state database", durable)
        self._lock = threading.RLock()
        self._migrate()

    def _migrate(self) -> None:
        """Columns added after a database may have been created (CREATE TABLE IF NOT EXISTS keeps old tables).

        ``notification_log.logged_at`` (retention; old rows: now) and ``task_state.input_required``.
        """
        columns = {str(row[1]) for row in self._query("PRAGMA table_info(notification_log)")}
        if "logged_at" not in columns:
            with self._tx() as db:
                db.execute("ALTER TABLE notification_log ADD COLUMN logged_at REAL")
                db.execute("UPDATE notification_log SET logged_at = ?", (time.time(),))
                db.execute("CREATE INDEX IF NOT EXISTS notification_logged ON notification_log(logged_at)")
        columns = {str(row[1]) for row in self._query("PRAGMA table_info(task_state)")}
        if "input_required" not in columns:
            with self._tx() as db:
                db.execute("ALTER TABLE task_state ADD COLUMN input_required TEXT")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                commit(self._db, "agent")
            except sqlite3.Error as exc:
                rollback(self._db)
                raise store_error("agent state database", self.path, exc) from None
            except BaseException:
                rollback(self._db)
                raise

    def _query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise store_error("agent state database", self.path, exc) from None

    # -- configuration --------------------------------------------------------
    def load_config(self) -> list[ConfigUnit]:
        """Every unit, parents before children, siblings in their stored order."""
        rows = self._query(
            "SELECT unit_key, parent_key, position, xml FROM config_unit ORDER BY parent_key != '', position"
        )
        units = [ConfigUnit(str(k), str(p), int(str(pos)), str(x)) for k, p, pos, x in rows]
        for unit in units:
            self._check_row(unit)
        return units

    def _check_row(self, unit: ConfigUnit) -> None:
        """Refuse to start on a row that cannot be parsed, naming it (never skip it silently).

        Skipping would lose the configuration it holds at the next save; the
        operator decides instead (the message says how to remove the row).
        """
        try:
            etree.fromstring(unit.xml.encode("utf-8"), _ROW_PARSER)
        except etree.XMLSyntaxError as exc:
            raise StoreError(
                f"agent state database {self.path}: row config_unit {unit.unit_key!r} is not well-formed XML "
                f"({exc}); restore the file from a backup, or delete that row "
                f"(sqlite3 {self.path} \"DELETE FROM config_unit WHERE unit_key = '...'\") to start without it"
            ) from None

    def save_config(
        self, upserts: Iterable[ConfigUnit], deletes: Iterable[str], task_owners: Mapping[str, str] | None = None
    ) -> None:
        """Apply one edit's changes to the stored configuration atomically.

        ``task_owners`` (task id -> user) records who created the tasks this
        edit adds, in the same transaction; an existing owner is kept.
        """
        with self._tx() as db:
            db.executemany(
                "INSERT OR IGNORE INTO task_owner (task_id, owner) VALUES (?, ?)", list((task_owners or {}).items())
            )
            db.executemany("DELETE FROM config_unit WHERE unit_key = ?", [(key,) for key in deletes])
            db.executemany(
                "INSERT OR REPLACE INTO config_unit (unit_key, parent_key, position, xml) VALUES (?, ?, ?, ?)",
                [(u.unit_key, u.parent_key, u.position, u.xml) for u in upserts],
            )

    # -- task state -----------------------------------------------------------
    def load_task_states(self) -> dict[str, TaskState]:
        rows = self._query(
            "SELECT task_id, status, reason, summary, result_format, result_data, updated, input_required "
            "FROM task_state"
        )
        return {str(r[0]): TaskState(*r) for r in rows}  # type: ignore[arg-type]

    def save_task_state(self, state: TaskState, notification: tuple[float, str] | None = None) -> int | None:
        """Store a task's new state and, in the same transaction, the notification announcing it.

        Returns the notification's sequence number (None when none was given).
        """
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO task_state (task_id, status, reason, summary, result_format, result_data, "
                "updated, input_required) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    state.task_id,
                    state.status,
                    state.reason,
                    state.summary,
                    state.result_format,
                    state.result_data,
                    state.updated,
                    state.input_required,
                ),
            )
            if notification is None:
                return None
            cursor = db.execute(
                "INSERT INTO notification_log (event_time, xml, logged_at) VALUES (?, ?, ?)",
                (*notification, time.time()),
            )
            return cursor.lastrowid

    def delete_task_state(self, task_id: str) -> None:
        """Forget a deleted task: its state and its owner."""
        with self._tx() as db:
            db.execute("DELETE FROM task_state WHERE task_id = ?", (task_id,))
            db.execute("DELETE FROM task_owner WHERE task_id = ?", (task_id,))

    def task_owner(self, task_id: str) -> str | None:
        """The user that created task ``task_id`` (None for tasks stored before owners were kept)."""
        rows = self._query("SELECT owner FROM task_owner WHERE task_id = ?", (task_id,))
        return str(rows[0][0]) if rows else None

    # -- notification log -----------------------------------------------------
    def append_notification(self, event_time: float, xml: str) -> int:
        with self._tx() as db:
            cursor = db.execute(
                "INSERT INTO notification_log (event_time, xml, logged_at) VALUES (?, ?, ?)",
                (event_time, xml, time.time()),
            )
            seq = cursor.lastrowid
        assert seq is not None
        return seq

    def notifications(
        self, since: float | None = None, until: float | None = None, max_seq: int | None = None
    ) -> list[LoggedNotification]:
        """Logged notifications with since <= event_time <= until and seq <= max_seq, oldest first."""
        upto = max_seq if max_seq is not None else 2**63 - 1
        return [logged for page in self.notification_pages(since, until, upto) for logged in page]

    def notification_pages(
        self, since: float | None, until: float | None, max_seq: int, page_size: int = 500
    ) -> Iterator[list[LoggedNotification]]:
        """Like `notifications`, in pages of at most ``page_size`` rows, so a replay of a long log
        holds one page in memory, not the log (each page is its own query: writers are not blocked)."""
        after = 0
        while True:
            sql = "SELECT seq, event_time, xml FROM notification_log WHERE seq > ? AND seq <= ?"
            params: list[object] = [after, max_seq]
            if since is not None:
                sql += " AND event_time >= ?"
                params.append(since)
            if until is not None:
                sql += " AND event_time <= ?"
                params.append(until)
            rows = self._query(sql + " ORDER BY seq LIMIT ?", (*params, page_size))
            if not rows:
                return
            page = [LoggedNotification(int(str(s)), float(str(t)), str(x)) for s, t, x in rows]
            yield page
            after = page[-1].seq

    def prune_notifications(self, older_than: float, now: float | None = None) -> int:
        """Delete log entries written more than ``older_than`` seconds before ``now`` (default: the wall
        clock, never an agent's simulated clock); returns how many. Sequence numbers are never reused."""
        cutoff = (time.time() if now is None else now) - older_than
        with self._tx() as db:
            return int(db.execute("DELETE FROM notification_log WHERE logged_at < ?", (cutoff,)).rowcount)

    def first_notification_time(self) -> float | None:
        rows = self._query("SELECT MIN(event_time) FROM notification_log")
        value = rows[0][0] if rows else None
        return float(str(value)) if value is not None else None

    def last_notification_seq(self) -> int:
        # From AUTOINCREMENT's record, which survives pruning (MAX(seq) of an emptied log would be 0).
        rows = self._query("SELECT seq FROM sqlite_sequence WHERE name = 'notification_log'")
        value = rows[0][0] if rows else None
        return int(str(value)) if value is not None else 0

    # -- meta -----------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def log_created(self, now: float) -> float:
        """When the notification log began (RFC 5277 ``replayLogCreationTime``): ``now`` on the first call
        for this state directory, kept from then on."""
        created = self.get_meta("log-created")
        if created is None:
            created = repr(now)
            self.set_meta("log-created", created)
        return float(created)
