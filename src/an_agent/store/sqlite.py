"""Opening an an-agent SQLite database: one way for every store.

WAL with ``synchronous=NORMAL`` survives a process crash (``kill -9``) with
every committed transaction; ``durable=True`` (``FULL``) also survives a power
loss. Connections run in autocommit mode: stores issue ``BEGIN IMMEDIATE`` /
``COMMIT`` themselves, and share the connection between threads under a lock.

Hardening: the directory is created 0700 and the database 0600 (SQLite gives
its ``-wal`` and ``-shm`` files the database file's mode); an existing
database is made 0600. Every open runs ``PRAGMA quick_check``: a damaged
file stops the agent with a `StoreError` that names it, and is left exactly
as it was (never replaced), so the operator can inspect or restore it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from an_agent.errors import StateFull, StoreError


def open_database(
    path: Path | str, schema: str, what: str, durable: bool = False, pragmas: Iterable[str] = ()
) -> sqlite3.Connection:
    """Open (creating it and its directory) the database at ``path`` and apply ``schema``.

    ``what`` names the database in the `StoreError` raised when it cannot be used.
    """
    name = str(path)
    try:
        if name != ":memory:":
            _private_file(Path(name))
        db = sqlite3.connect(name, check_same_thread=False, isolation_level=None)
        if name != ":memory:":
            _check_integrity(db, name, what)
            db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        db.execute("PRAGMA busy_timeout=5000")
        for pragma in pragmas:
            db.execute(f"PRAGMA {pragma}")
        db.executescript(schema)
    except (sqlite3.Error, OSError) as exc:
        if name != ":memory:" and no_space(Path(name).parent):
            raise _full_at_open(what, name) from None
        raise StoreError(f"cannot open {what} {name}: {exc}") from None
    return db


NO_SPACE_BYTES = 1 << 20
"""Free space under which a directory counts as full: SQLite needs pages for its journal to open a database."""


def no_space(directory: Path) -> bool:
    """Whether ``directory``'s file system has (nearly) no space left for us."""
    try:
        stat = os.statvfs(directory)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < NO_SPACE_BYTES


def _full_at_open(what: str, name: str) -> StateFull:
    return StateFull(
        f"cannot open {what} {name}: no space left in {Path(name).parent}; nothing was changed: "
        "free space there and the agent can start"
    )


_commit_observers: list[Callable[[str, float], None]] = []


def observe_commits(observer: Callable[[str, float], None]) -> None:
    """Call ``observer(database, seconds)`` after every `commit` (the metrics, `an_agent.metrics`)."""
    if observer not in _commit_observers:
        _commit_observers.append(observer)


def commit(db: sqlite3.Connection, database: str) -> None:
    """``COMMIT`` on ``db``, timed for the observers when there are any (``database`` names it for them)."""
    if not _commit_observers:
        db.execute("COMMIT")
        return
    start = time.perf_counter()
    db.execute("COMMIT")
    elapsed = time.perf_counter() - start
    for observer in _commit_observers:
        observer(database, elapsed)


def private_directory(path: Path) -> None:
    """Create ``path`` (and its parents) with mode 0700; an existing directory is left as it is."""
    if not path.exists():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.chmod(0o700)  # mkdir's mode is masked by the umask


def _private_file(path: Path) -> None:
    """Make sure the database file (and its WAL companions, if any) exists with mode 0600."""
    private_directory(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    for companion in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            if companion.stat().st_mode & 0o077:
                companion.chmod(0o600)


def _check_integrity(db: sqlite3.Connection, name: str, what: str) -> None:
    """Refuse a damaged database (quick_check is O(size), seconds only for gigabytes)."""
    try:
        problems = [str(row[0]) for row in db.execute("PRAGMA quick_check(5)").fetchall()]
    except sqlite3.DatabaseError as exc:
        if no_space(Path(name).parent):  # a full disk is not a damaged database (found by lab soak)
            db.close()
            raise _full_at_open(what, name) from None
        problems = [str(exc)]
    if problems != ["ok"]:
        db.close()
        raise StoreError(
            f"{what} {name} failed its integrity check ({'; '.join(problems)}); it was left untouched: "
            "restore it from a backup, or move it away to start with an empty state"
        )


def rollback(db: sqlite3.Connection) -> None:
    """End a failed transaction. SQLite has already rolled it back itself after some errors (a full
    disk: SQLITE_FULL), and a second ROLLBACK would raise "no transaction is active" over the real error."""
    if db.in_transaction:
        db.execute("ROLLBACK")


def store_error(what: str, path: Path | str, exc: sqlite3.Error) -> StoreError:
    """Our error for SQLite's ``exc`` on ``what`` at ``path``: `StateFull` for a full disk, saying where."""
    if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return StateFull(
            f"{what} {path}: no space left in {Path(path).parent}: the change was not made; "
            "free space there and the agent goes on"
        )
    return StoreError(f"{what} {path}: {exc}")
