"""The lab's simulated time in a file its agent processes map: an agent reads the lab's clock, not a copy.

In lock-step (`an_agent.lab.lockstep`) every agent process used to keep its own copy of the lab's clock,
moved by a message at every instant that each of them had to acknowledge: two control messages per agent
per instant although at most instants one agent has something due (issue 30: a 200-agent lab spent
most of its scenario in those barriers). With the clock in shared memory an agent whose copy would only
have been moved needs no message: whenever it looks at the time (a peer's request, a stamp) it reads
the lab's. Only agents with something due at the new instant are told (they must wake it and report).

File layout (`CLOCK_FILE` in the lab's run directory, 0600, 32 bytes, native byte order, written only by
the lab process): a 16-byte token (random per lab run: an agent whose path leads to another file, e.g.
on another host, sees a different token and keeps its own copy), an unsigned 64-bit sequence number and
the time as a double (seconds since the epoch). The sequence is odd while the lab writes (a seqlock): a
reader retries until it reads the same even sequence before and after the time. Only an agent running
on the lab's kernel (same boot id) maps the file: another machine seeing the same file on a shared
filesystem would not see the lab's writes at once.
"""

from __future__ import annotations

import mmap
import os
import secrets
import struct
from pathlib import Path
from typing import Any

from an_agent.clock import ManualClock

CLOCK_FILE = "clock"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
TOKEN_BYTES = 16
_STAMP = struct.Struct("=Qd")
SIZE = TOKEN_BYTES + _STAMP.size


class PublishedClock(ManualClock):
    """The lab process's `ManualClock`; once `publish` is called, every move is also written to the file."""

    def __init__(self, start: float = 0.0) -> None:
        super().__init__(start)
        self._map: mmap.mmap | None = None
        self._seq = 0
        self.path: Path | None = None
        self.token = ""

    def publish(self, directory: Path) -> dict[str, str]:
        """Write the clock to ``directory/CLOCK_FILE`` from now on; returns what agents need to map it
        (``path``, ``token``), the ``clock`` of the control channel's ``hello``."""
        with self._lock:
            if self._map is None:
                path = directory / CLOCK_FILE
                token = secrets.token_bytes(TOKEN_BYTES)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    os.write(fd, token + _STAMP.pack(0, self._now))
                    self._map = mmap.mmap(fd, SIZE)
                finally:
                    os.close(fd)
                self.path, self.token = path, token.hex()
        share = self.share()
        assert share is not None
        return share

    def share(self) -> dict[str, str] | None:
        """What `publish` returned (``path``, ``token``, ``boot_id``), or None when the clock is not published."""
        if self.path is None:
            return None
        return {"path": str(self.path), "token": self.token, "boot_id": _boot_id()}

    def set(self, when: float) -> None:
        with self._lock:
            if when < self._now:
                raise ValueError("a ManualClock only moves forward")
            self._now = float(when)
            if self._map is not None:
                self._seq += 1  # odd: readers retry
                _STAMP.pack_into(self._map, TOKEN_BYTES, self._seq, self._now)
                self._seq += 1
                _STAMP.pack_into(self._map, TOKEN_BYTES, self._seq, self._now)

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("a ManualClock only moves forward")
        self.set(self.now() + seconds)
        return self.now()

    def close(self) -> None:
        """Unmap the file (it stays: an agent that still maps it reads the last time)."""
        with self._lock:
            if self._map is not None:
                self._map.close()
                self._map = None


class SharedClock(ManualClock):
    """An agent process's view of a `PublishedClock`: `now` reads the file; the lab alone moves it (`set`
    does nothing: the lab writes an instant before it tells any agent of it)."""

    def __init__(self, view: mmap.mmap) -> None:
        super().__init__(0.0)
        self._view = view

    @classmethod
    def open(cls, hello: Any) -> SharedClock | None:
        """The lab's clock from the ``clock`` of its ``hello`` (``{"path", "token"}``); None when there is
        none, it cannot be read here or it holds another token (the agent then keeps its own copy)."""
        if not isinstance(hello, dict) or not isinstance(hello.get("path"), str):
            return None
        if not hello.get("boot_id") or hello["boot_id"] != _boot_id():  # another kernel: not the lab's pages
            return None
        try:
            fd = os.open(hello["path"], os.O_RDONLY)
        except OSError:
            return None
        try:
            if os.fstat(fd).st_size < SIZE:
                return None
            view = mmap.mmap(fd, SIZE, prot=mmap.PROT_READ)
        except OSError:
            return None
        finally:
            os.close(fd)
        if view[:TOKEN_BYTES].hex() != hello.get("token"):
            view.close()
            return None
        return cls(view)

    def now(self) -> float:
        while True:
            before, when = _STAMP.unpack_from(self._view, TOKEN_BYTES)
            if before % 2 == 0 and _STAMP.unpack_from(self._view, TOKEN_BYTES)[0] == before:
                return float(when)

    def set(self, when: float) -> None:
        """Nothing: the lab has written ``when`` before it told the agent of it."""

    def advance(self, seconds: float) -> float:
        raise ValueError("only the lab moves its clock")


def _boot_id() -> str:
    """This kernel's boot id (the same in every namespace and container on it), or "" when unknown."""
    try:
        return BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        return ""
