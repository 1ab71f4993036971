"""Durable state of schema self-evolution in SQLite (WAL): pool, fragments, patches, keys, metrics, queue.

The evolution engine (`an_agent.evolution.engine`) keeps its working set in memory and writes every
change through this store inside one transaction per request (`EvolutionStore.transaction`), so a
restart finds exactly what was acknowledged. The store knows rows, not behaviour: the row types below
are plain records and the ``definition``/``body`` columns hold JSON the engine owns.

``EvolutionStore(":memory:")`` gives a private in-memory database (used by the replay tool).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from an_agent.store.sqlite import commit, open_database, rollback, store_error

_SCHEMA = """
CREATE TABLE IF NOT EXISTS evo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS evo_cluster (
    cluster_id TEXT PRIMARY KEY,
    schema_id  TEXT NOT NULL,
    state      TEXT NOT NULL,          -- collecting | queued | pending | patched | rejected | evicted
    size       INTEGER NOT NULL,
    heat       REAL NOT NULL,          -- heat as of heat_at (decays from there)
    heat_at    REAL NOT NULL,
    created    REAL NOT NULL,
    last_seen  REAL NOT NULL,
    centroid   BLOB NOT NULL           -- float32 sum of the member vectors
);
CREATE INDEX IF NOT EXISTS evo_cluster_schema ON evo_cluster(schema_id, state);
CREATE TABLE IF NOT EXISTS evo_fragment (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    cluster_id TEXT NOT NULL,
    schema_id  TEXT NOT NULL,
    ts         REAL NOT NULL,
    client_id  TEXT NOT NULL,
    text       TEXT NOT NULL,
    ref        INTEGER,                -- caller's reference, e.g. the replay line number
    choices    TEXT                    -- JSON: the request's values of its template's closed-set keys
);
CREATE INDEX IF NOT EXISTS evo_fragment_cluster ON evo_fragment(cluster_id, ts);
CREATE INDEX IF NOT EXISTS evo_fragment_ts ON evo_fragment(ts);
CREATE TABLE IF NOT EXISTS evo_patch (
    patch_id   TEXT PRIMARY KEY,
    schema_id  TEXT NOT NULL,
    cluster_id TEXT NOT NULL,
    client_id  TEXT,                   -- NULL for a global patch
    created    REAL NOT NULL,
    expiration REAL,
    state      TEXT NOT NULL,          -- pending | active | closed | rejected
    body       TEXT NOT NULL           -- JSON owned by the engine
);
CREATE TABLE IF NOT EXISTS evo_key (
    key_uid     TEXT PRIMARY KEY,      -- patch_id/key_name
    patch_id    TEXT NOT NULL,
    schema_id   TEXT NOT NULL,
    client_id   TEXT,
    key_name    TEXT NOT NULL,
    kind        TEXT NOT NULL,         -- new | modified
    state       TEXT NOT NULL,         -- proposed | experimental | stable | deprecated | withdrawn | retired | active
    state_since REAL NOT NULL,
    decision_at REAL,                  -- next lifecycle decision
    extensions  INTEGER NOT NULL,
    definition  TEXT NOT NULL          -- JSON key definition (draft format)
);
CREATE TABLE IF NOT EXISTS evo_metric (
    key_uid TEXT NOT NULL,
    day     INTEGER NOT NULL,          -- floor(time / 86400)
    seen    INTEGER NOT NULL,          -- payloads of the key's scope while the key was published
    present INTEGER NOT NULL,
    type_ok INTEGER NOT NULL,
    aligned INTEGER NOT NULL,
    PRIMARY KEY (key_uid, day)
);
CREATE TABLE IF NOT EXISTS evo_key_client (
    key_uid   TEXT NOT NULL,
    client_id TEXT NOT NULL,
    delivered REAL,                    -- first time the key was delivered to the client
    adopted   REAL,                    -- first time the client sent the key
    PRIMARY KEY (key_uid, client_id)
);
CREATE TABLE IF NOT EXISTS evo_queue (
    cluster_id TEXT PRIMARY KEY,
    schema_id  TEXT NOT NULL,
    client_id  TEXT,                   -- set for a per-client trigger
    queued_at  REAL NOT NULL,
    seq        INTEGER NOT NULL
);
"""


@dataclass(frozen=True)
class ClusterRow:
    cluster_id: str
    schema_id: str
    state: str
    size: int
    heat: float
    heat_at: float
    created: float
    last_seen: float
    centroid: bytes


@dataclass(frozen=True)
class FragmentRow:
    seq: int
    cluster_id: str
    schema_id: str
    ts: float
    client_id: str
    text: str
    ref: int | None
    choices: str | None = None  # JSON object: key -> the value the request chose (`FragmentRow.chosen`)

    def chosen(self) -> dict[str, str]:
        """The values the fragment's request gave its template's closed-set keys (empty when unknown)."""
        if not self.choices:
            return {}
        loaded = json.loads(self.choices)
        return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


@dataclass(frozen=True)
class PatchRow:
    patch_id: str
    schema_id: str
    cluster_id: str
    client_id: str | None
    created: float
    expiration: float | None
    state: str
    body: dict[str, Any]


@dataclass(frozen=True)
class KeyRow:
    key_uid: str
    patch_id: str
    schema_id: str
    client_id: str | None
    key_name: str
    kind: str
    state: str
    state_since: float
    decision_at: float | None
    extensions: int
    definition: dict[str, Any]


@dataclass(frozen=True)
class MetricSums:
    seen: int = 0
    present: int = 0
    type_ok: int = 0
    aligned: int = 0


@dataclass(frozen=True)
class QueueRow:
    cluster_id: str
    schema_id: str
    client_id: str | None
    queued_at: float
    seq: int


class EvolutionStore:
    """SQLite persistence of the evolution engine; thread-safe, one connection.

    One store per database file at a time: it keeps the last id of each counter in memory.
    """

    def __init__(self, path: Path | str, durable: bool = False) -> None:
        self.path = str(path)
        # 32 MB page cache: the hot clusters and fragments stay in memory.
        self._db = open_database(path, _SCHEMA, "evolution database", durable, pragmas=["cache_size=-32000"])
        self._lock = threading.RLock()
        self._depth = 0
        self._counters: dict[str, int] = {}
        self._migrate()

    def _migrate(self) -> None:
        """Columns added after a database may have been created (CREATE TABLE IF NOT EXISTS keeps old tables).

        ``evo_fragment.choices`` (old rows: NULL, the choices are unknown).
        """
        columns = {str(row[1]) for row in self._run("PRAGMA table_info(evo_fragment)")}
        if "choices" not in columns:
            with self.transaction():
                self._run("ALTER TABLE evo_fragment ADD COLUMN choices TEXT")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic unit of writes; nests (only the outermost commits)."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise store_error("evolution database", self.path, exc) from None
            self._depth = 1
            try:
                yield
                commit(self._db, "evolution")
            except sqlite3.Error as exc:
                rollback(self._db)
                raise store_error("evolution database", self.path, exc) from None
            except BaseException:
                rollback(self._db)
                raise
            finally:
                self._depth = 0

    def _run(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._db.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                raise store_error("evolution database", self.path, exc) from None

    # -- meta ----------------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        rows = self._run("SELECT value FROM evo_meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else default

    def set_meta(self, key: str, value: str) -> None:
        self._run("INSERT OR REPLACE INTO evo_meta(key, value) VALUES (?, ?)", (key, value))

    def next_number(self, counter: str) -> int:
        """1, 2, 3, ... per counter name, durable (for cluster and patch ids)."""
        with self.transaction():
            # The last value is kept in memory (one read per counter and process, not one per id); after
            # a rolled-back transaction it is ahead of the database, which only skips numbers.
            last = self._counters.get(counter)
            value = (int(self.get_meta(counter, "0") or "0") if last is None else last) + 1
            self.set_meta(counter, str(value))
            self._counters[counter] = value
            return value

    # -- clusters and fragments ------------------------------------------------------------------
    def save_cluster(self, row: ClusterRow) -> None:
        # An upsert updates the row where it is; INSERT OR REPLACE deleted it and appended it again under
        # a new rowid, rewriting pages of the table and of both indexes on every save (the commit's cost
        # grew with the table).
        self._run(
            "INSERT INTO evo_cluster VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(cluster_id) DO UPDATE SET "
            "schema_id = excluded.schema_id, state = excluded.state, size = excluded.size, heat = excluded.heat, "
            "heat_at = excluded.heat_at, created = excluded.created, last_seen = excluded.last_seen, "
            "centroid = excluded.centroid",
            (
                row.cluster_id,
                row.schema_id,
                row.state,
                row.size,
                row.heat,
                row.heat_at,
                row.created,
                row.last_seen,
                row.centroid,
            ),
        )

    def delete_cluster(self, cluster_id: str, with_fragments: bool) -> None:
        self._run("DELETE FROM evo_cluster WHERE cluster_id = ?", (cluster_id,))
        if with_fragments:
            self._run("DELETE FROM evo_fragment WHERE cluster_id = ?", (cluster_id,))

    def delete_clusters(self, cluster_ids: Iterable[str]) -> None:
        """Delete the rows of ``cluster_ids`` (not their fragments), as one batch of statements."""
        with self._lock:
            try:
                self._db.executemany("DELETE FROM evo_cluster WHERE cluster_id = ?", [(c,) for c in cluster_ids])
            except sqlite3.Error as exc:
                raise store_error("evolution database", self.path, exc) from None

    def clusters(self, exclude_states: tuple[str, ...] = ()) -> list[ClusterRow]:
        marks = ",".join("?" * len(exclude_states))
        where = f"WHERE state NOT IN ({marks})" if exclude_states else ""
        rows = self._run(f"SELECT * FROM evo_cluster {where} ORDER BY created, cluster_id", exclude_states)
        return [ClusterRow(*r) for r in rows]

    def add_fragment(
        self,
        cluster_id: str,
        schema_id: str,
        ts: float,
        client_id: str,
        text: str,
        ref: int | None,
        choices: Mapping[str, str] | None = None,
    ) -> int:
        """Store one fragment; ``choices``: its request's values of the template's closed-set keys."""
        chosen = json.dumps(dict(choices), sort_keys=True) if choices else None
        with self._lock:
            try:
                cursor = self._db.execute(
                    "INSERT INTO evo_fragment(cluster_id, schema_id, ts, client_id, text, ref, choices) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (cluster_id, schema_id, ts, client_id, text, ref, chosen),
                )
            except sqlite3.Error as exc:
                raise store_error("evolution database", self.path, exc) from None
            return int(cursor.lastrowid or 0)

    def move_fragments(self, from_cluster: str, to_cluster: str) -> None:
        self._run("UPDATE evo_fragment SET cluster_id = ? WHERE cluster_id = ?", (to_cluster, from_cluster))

    def move_fragment(self, seq: int, to_cluster: str) -> None:
        """Move one fragment (by its ``seq``) to another cluster."""
        self._run("UPDATE evo_fragment SET cluster_id = ? WHERE seq = ?", (to_cluster, seq))

    def fragments(self, cluster_id: str, since: float | None = None, limit: int | None = None) -> list[FragmentRow]:
        """A cluster's fragments, oldest first (the newest ``limit`` when given)."""
        sql = "SELECT * FROM evo_fragment WHERE cluster_id = ?"
        params: list[Any] = [cluster_id]
        if since is not None:
            sql += " AND ts >= ?"
            params.append(since)
        sql += " ORDER BY seq DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [FragmentRow(*r) for r in reversed(self._run(sql, params))]

    def client_counts(self, cluster_id: str) -> dict[str, int]:
        rows = self._run(
            "SELECT client_id, COUNT(*) FROM evo_fragment WHERE cluster_id = ? GROUP BY client_id", (cluster_id,)
        )
        return {str(c): int(n) for c, n in rows}

    def fragment_refs(self) -> dict[str, list[int]]:
        """cluster_id -> the ``ref`` of each of its fragments, in ingest order (fragments without ref skipped)."""
        out: dict[str, list[int]] = {}
        for cluster_id, ref in self._run("SELECT cluster_id, ref FROM evo_fragment WHERE ref IS NOT NULL ORDER BY seq"):
            out.setdefault(str(cluster_id), []).append(int(ref))
        return out

    def oldest_fragment_ts(self) -> float | None:
        """The time of the oldest stored fragment (None when there is none); one look at the time index."""
        rows = self._run("SELECT MIN(ts) FROM evo_fragment")
        return None if not rows or rows[0][0] is None else float(rows[0][0])

    def prune_fragments(self, before: float, keep_clusters: Iterable[str] = ()) -> int:
        """Delete fragments older than ``before`` except those of ``keep_clusters``; returns how many."""
        keep = list(keep_clusters)
        marks = ",".join("?" * len(keep))
        extra = f" AND cluster_id NOT IN ({marks})" if keep else ""
        with self._lock:
            try:
                cursor = self._db.execute(f"DELETE FROM evo_fragment WHERE ts < ?{extra}", (before, *keep))
            except sqlite3.Error as exc:
                raise store_error("evolution database", self.path, exc) from None
            return cursor.rowcount

    # -- patches and keys ----------------------------------------------------------------------
    def save_patch(self, row: PatchRow) -> None:
        self._run(
            "INSERT OR REPLACE INTO evo_patch VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.patch_id,
                row.schema_id,
                row.cluster_id,
                row.client_id,
                row.created,
                row.expiration,
                row.state,
                json.dumps(row.body, sort_keys=True),
            ),
        )

    def patches(self) -> list[PatchRow]:
        rows = self._run("SELECT * FROM evo_patch ORDER BY created, patch_id")
        return [PatchRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7])) for r in rows]

    def save_key(self, row: KeyRow) -> None:
        self._run(
            "INSERT OR REPLACE INTO evo_key VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.key_uid,
                row.patch_id,
                row.schema_id,
                row.client_id,
                row.key_name,
                row.kind,
                row.state,
                row.state_since,
                row.decision_at,
                row.extensions,
                json.dumps(row.definition, sort_keys=True),
            ),
        )

    def patch_keys(self) -> list[KeyRow]:
        rows = self._run("SELECT * FROM evo_key ORDER BY state_since, key_uid")
        return [KeyRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], json.loads(r[10])) for r in rows]

    # -- metrics -------------------------------------------------------------------------------
    def add_metrics(self, key_uid: str, day: int, seen: int, present: int, type_ok: int, aligned: int) -> None:
        self._run(
            "INSERT INTO evo_metric VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key_uid, day) DO UPDATE SET "
            "seen = seen + excluded.seen, present = present + excluded.present, "
            "type_ok = type_ok + excluded.type_ok, aligned = aligned + excluded.aligned",
            (key_uid, day, seen, present, type_ok, aligned),
        )

    def metric_sums(self, key_uid: str, since_day: int) -> MetricSums:
        rows = self._run(
            "SELECT COALESCE(SUM(seen),0), COALESCE(SUM(present),0), COALESCE(SUM(type_ok),0), "
            "COALESCE(SUM(aligned),0) FROM evo_metric WHERE key_uid = ? AND day >= ?",
            (key_uid, since_day),
        )
        return MetricSums(*(int(v) for v in rows[0]))

    def note_client(
        self, key_uid: str, client_id: str, when: float, *, delivered: bool = False, adopted: bool = False
    ) -> None:
        """Record the first delivery of a key to a client and/or the client's first use of it."""
        self._run(
            "INSERT INTO evo_key_client VALUES (?, ?, ?, ?) ON CONFLICT(key_uid, client_id) DO UPDATE SET "
            "delivered = COALESCE(delivered, excluded.delivered), adopted = COALESCE(adopted, excluded.adopted)",
            (key_uid, client_id, when if delivered else None, when if adopted else None),
        )

    def adoption(self, key_uid: str) -> tuple[int, int]:
        """(clients that received the key, clients that received it and used it)."""
        rows = self._run(
            "SELECT COUNT(delivered), COUNT(CASE WHEN delivered IS NOT NULL AND adopted IS NOT NULL THEN 1 END) "
            "FROM evo_key_client WHERE key_uid = ?",
            (key_uid,),
        )
        return int(rows[0][0]), int(rows[0][1])

    # -- trigger queue -------------------------------------------------------------------------
    def enqueue(self, cluster_id: str, schema_id: str, client_id: str | None, when: float) -> None:
        seq = self.next_number("queue_seq")
        self._run(
            "INSERT OR IGNORE INTO evo_queue VALUES (?, ?, ?, ?, ?)", (cluster_id, schema_id, client_id, when, seq)
        )

    def dequeue(self, cluster_id: str) -> None:
        self._run("DELETE FROM evo_queue WHERE cluster_id = ?", (cluster_id,))

    def queue(self) -> list[QueueRow]:
        return [QueueRow(*r) for r in self._run("SELECT * FROM evo_queue ORDER BY seq")]
