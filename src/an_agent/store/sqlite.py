"""Opening an an-agent SQLite database: one way for every store.

WAL with ``synchronous=NORMAL`` survives a process crash (``kill -9``) with
every committed transaction; ``durable=True`` (``FULL``) also survives a power
loss. Connections run in autocommit mode: stores issue ``BEGIN IMMEDIATE`` /
``COMMIT`` themselves, and share the connection between threads under a lock.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from an_agent.errors import StoreError


def open_database(
    path: Path | str, schema: str, what: str, durable: bool = False, pragmas: Iterable[str] = ()
) -> sqlite3.Connection:
    """Open (creating it and its directory) the database at ``path`` and apply ``schema``.

    ``what`` names the database in the `StoreError` raised when it cannot be used.
    """
    name = str(path)
    try:
        if name != ":memory:":
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(name, check_same_thread=False, isolation_level=None)
        if name != ":memory:":
            db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        db.execute("PRAGMA busy_timeout=5000")
        for pragma in pragmas:
            db.execute(f"PRAGMA {pragma}")
        db.executescript(schema)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"cannot open {what} {name}: {exc}") from None
    return db
