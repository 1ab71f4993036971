"""Opt-in stage stamps for latency work (`bench/notify_stages.py`); free when off.

Set ``AN_AGENT_STAGES=FILE`` in the environment of an agent process and every
`mark` call records ``time.monotonic()`` (the system-wide monotonic clock, so
a client in another process can compare it with its own send times), the
calling thread's name and the stage's name. The stamps are kept in memory and
appended to FILE (created 0600) as ``time<TAB>thread<TAB>stage`` lines by a
daemon thread every `FLUSH_PERIOD` seconds and at exit, so that taking a
stamp costs one list append and no system call.

Off (the variable unset, the default), `ON` is False and call sites skip the
call altogether (``if stages.ON: stages.mark(...)``): one global lookup.
"""

from __future__ import annotations

import atexit
import os
import threading
import time

ENV = "AN_AGENT_STAGES"
FLUSH_PERIOD = 0.2

_path = os.environ.get(ENV) or None
ON = _path is not None
"""Whether this process records stamps (fixed at import, from the environment)."""

_stamps: list[tuple[float, str, str]] = []
_flush_lock = threading.Lock()


def mark(stage: str) -> None:
    """Record that ``stage`` was reached now, on this thread (call only when `ON`)."""
    _stamps.append((time.monotonic(), threading.current_thread().name, stage))


def flush() -> None:
    """Append the stamps taken so far to the file and forget them (no-op when off)."""
    if _path is None:
        return
    with _flush_lock:
        taken = len(_stamps)
        if not taken:
            return
        lines = "".join(f"{t:.6f}\t{thread}\t{stage}\n" for t, thread, stage in _stamps[:taken])
        del _stamps[:taken]  # list appends from other threads meanwhile land after `taken`
        fd = os.open(_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, lines.encode("utf-8"))
        finally:
            os.close(fd)


def _flush_loop() -> None:
    while True:
        time.sleep(FLUSH_PERIOD)
        flush()


if ON:
    threading.Thread(target=_flush_loop, name="an-stages-flush", daemon=True).start()
    atexit.register(flush)
