"""A memo of serialised ``<get>``/``<get-config>`` replies (DESIGN.md: a face may keep one).

An agent fleet asks the same small questions over and over (the profile, a
task's status) while the data changes far less often. `ReplyCache` keeps the
serialised ``<data>`` element of each answer, keyed by

- the data version (`Operations.data_version`: config commits, task state,
  schema templates); when it moves on, every entry is dropped at once, so a
  reply is never served for data it does not show;
- the caller's read view: the whole `Principal` (user name, groups, agent
  names), because NACM prunes replies per user and per group. One user's
  reply is never handed to another user, even when their rules agree;
- the request itself: the operation element as sent (filter, source,
  with-defaults) and the namespace prefixes in scope, which an xpath
  ``select`` may use without the serialised text showing them.

It is a cache of bytes this face produced, never a second store: a miss
builds the reply the usual way (read, NACM view, filter) and keeps the text.
Bounded by entries and bytes; least recently used entries go first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from lxml import etree

DEFAULT_MAX_ENTRIES = 512
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
# A single reply larger than this is not kept: it would evict everything else.
_MAX_SHARE = 4


def request_key(operation: etree._Element) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What identifies a read request: its serialised element and the prefixes in scope at it."""
    prefixes = tuple(sorted((p or "", uri) for p, uri in operation.nsmap.items()))
    return etree.tostring(operation, encoding="unicode"), prefixes


class ReplyCache:
    """Serialised replies by (data version, read view, request); thread-safe.

    Statistics (`hits`, `misses`) are for tests and the benchmark notes.
    """

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._version: Hashable = None
        self._entries: OrderedDict[tuple[Hashable, Hashable], str] = OrderedDict()
        self._bytes = 0

    def lookup(self, version: Hashable, view: Hashable, request: Hashable) -> str | None:
        """The kept reply for ``request`` seen through ``view`` at ``version``, or None (counted as a hit only).

        A hit means the same request text built a reply before: the caller
        may skip every check that depends on the request alone (errors are
        never kept, so a kept request passed them).
        """
        key = (view, request)
        with self._lock:
            if version != self._version:
                return None
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
            return found

    def get_or_build(self, version: Hashable, view: Hashable, request: Hashable, build: Callable[[], str]) -> str:
        """The reply for ``request`` seen through ``view`` at ``version``; ``build`` makes it on a miss.

        ``version`` must be read before ``build`` reads the data, so what is
        kept is at least as new as the version it is filed under. ``build``
        runs outside the lock; an exception from it propagates and nothing is
        kept (errors are never cached).
        """
        key = (view, request)
        with self._lock:
            if version == self._version:
                found = self._entries.get(key)
                if found is not None:
                    self._entries.move_to_end(key)
                    self.hits += 1
                    return found
            self.misses += 1
        text = build()
        self._keep(version, key, text)
        return text

    def _keep(self, version: Hashable, key: tuple[Hashable, Hashable], text: str) -> None:
        size = len(text)
        if size * _MAX_SHARE > self.max_bytes:
            return
        with self._lock:
            if version != self._version:
                # Entries of another version are dropped, never mixed; an older
                # version arriving late (a slow reader) does not evict newer entries.
                if self._entries and _older(version, self._version):
                    return
                self._entries.clear()
                self._bytes = 0
                self._version = version
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._bytes -= len(previous)
            self._entries[key] = text
            self._bytes += size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self._version = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def _older(version: Hashable, current: Hashable) -> bool:
    """True when ``version`` is known to precede ``current`` (tuples of counters, compared part by part)."""
    if isinstance(version, tuple) and isinstance(current, tuple) and len(version) == len(current):
        return all(a <= b for a, b in zip(version, current, strict=True)) and version != current
    return False
