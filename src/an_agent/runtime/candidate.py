"""The candidate configuration datastore (RFC 6241 section 8.3) and unit-level change sets.

The candidate is shared by every session. Until it is edited it *is*
running; the first edit takes a copy of running and changes that copy. It
holds changes only: nothing reaches running, and nothing is admitted, until
``<commit>`` (`an_agent.runtime.commits`) turns the candidate into an edit of
running that goes through the one admission pipeline.

`changes` computes that edit: unit by unit (a task, a data-param, a context
record; `Datastore.units`), what the candidate added, changed or removed
since its copy was taken. A commit therefore applies the candidate's
changes to running as it is then, rather than overwriting running with a
stale copy: tasks other agents assigned, and the context records the agent
wrote meanwhile, stay. Units changed in both keep the candidate's value.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Collection

from lxml import etree

from an_agent.errors import RpcError
from an_agent.model.ns import NETCONF_BASE_NS
from an_agent.runtime.datastore import Datastore
from an_agent.runtime.edit import NC_OPERATION, EntryIndex, Schema, TreeEditor, elements

_NC = f"{{{NETCONF_BASE_NS}}}"


class Candidate:
    """The candidate datastore over ``running``; thread-safe. Sessions and locks are the caller's."""

    def __init__(self, running: Datastore, schema: Schema) -> None:
        self._running = running
        self._schema = schema
        self._lock = threading.Lock()
        self._base: etree._Element | None = None  # running when the first change was made
        self._root: etree._Element | None = None  # None: unmodified, the candidate is running
        self.version = 0
        """Increases with every change of the candidate (for reply memos)."""

    @property
    def modified(self) -> bool:
        """True when the candidate holds changes not committed nor discarded."""
        with self._lock:
            return self._root is not None

    def snapshot(self) -> etree._Element:
        """A deep copy of the candidate: a ``<data>`` element holding its top-level config nodes."""
        with self._lock:
            return self._running.snapshot() if self._root is None else copy.deepcopy(self._root)

    def edit(self, config: etree._Element, default_operation: str = "merge", keep: bool = True) -> etree._Element:
        """Apply an ``<edit-config>``'s ``<config>`` children; returns the candidate as it is (or would be).

        RFC 6241 semantics per node (`TreeEditor`): a malformed edit raises
        `RpcError` and changes nothing. The result is not validated as a
        whole (a candidate may be incomplete until ``<commit>`` or
        ``<validate>``). ``keep`` False: test only, the candidate is left as it was.
        """
        with self._lock:
            base = self._running.snapshot() if self._root is None else self._root
            edited = copy.deepcopy(base)
            editor = TreeEditor(self._schema, EntryIndex())
            for child in elements(config):
                editor.apply(edited, child, default_operation, ())
            if keep:
                if self._root is None:
                    self._base = base
                self._root = edited
                self.version += 1
            return copy.deepcopy(edited)

    def replace(self, config: etree._Element) -> None:
        """The children of ``config`` become the candidate (``<copy-config>`` to candidate)."""
        empty = etree.Element(_NC + "data")
        editor = TreeEditor(self._schema, EntryIndex())
        for child in elements(config):
            editor.apply(empty, child, "replace", ())  # each node checked against the schema
        with self._lock:
            if self._root is None:
                self._base = self._running.snapshot()
            self._root = empty
            self.version += 1

    def changes(self, edited: etree._Element | None = None) -> tuple[etree._Element, set[str]] | None:
        """The edit of running that carries out the candidate's changes, and the units it touches.

        ``edited``: a candidate tree `edit` returned with ``keep`` False, instead of the candidate's
        own. None when there is nothing to carry out.
        """
        with self._lock:
            after = self._root if edited is None else edited
            if after is None:
                return None
            base = self._base if self._base is not None else self._running.snapshot()
            return changes(self._running, base, after)

    def reset(self) -> None:
        """Forget the changes: the candidate is running again (``<discard-changes>``, after a commit)."""
        with self._lock:
            if self._root is not None:
                self.version += 1
            self._root = self._base = None


def changes(
    datastore: Datastore, before: etree._Element, after: etree._Element, only: Collection[str] | None = None
) -> tuple[etree._Element, set[str]]:
    """An edit (a ``<config>`` element) that turns the units of ``before`` into those of ``after``.

    Both are ``<data>`` trees of config nodes. Returns the edit and the keys of
    the units it touches; with ``only``, units outside it are left alone.
    Added and changed units are sent with operation ``replace``, removed ones
    with ``remove``: applying the edit twice changes nothing more.
    """
    old = datastore.units(before)
    new = datastore.units(after)
    config = etree.Element(_NC + "config", nsmap={"nc": NETCONF_BASE_NS})
    holders: dict[str, etree._Element] = {}
    touched: set[str] = set()

    def holder(parent_key: str, units: dict[str, tuple[str, etree._Element, bool]]) -> etree._Element:
        if not parent_key:
            return config
        if parent_key not in holders:
            container = units[parent_key][1]
            holders[parent_key] = etree.SubElement(config, container.tag)
        return holders[parent_key]

    removed_containers = {k for k, (_, _, shallow) in old.items() if shallow and k not in new}
    for key, (parent_key, element, shallow) in new.items():
        if only is not None and key not in only:
            continue
        if shallow:
            if key not in old:
                touched.add(key)
                holder(key, new)  # a new container: created (merge), its children follow
            continue
        if key in old and _same(old[key][1], element):
            continue
        touched.add(key)
        entry = copy.deepcopy(element)
        entry.set(NC_OPERATION, "replace")
        holder(parent_key, new).append(entry)
    for key, (parent_key, element, shallow) in old.items():
        if key in new or parent_key in removed_containers or (only is not None and key not in only):
            continue
        touched.add(key)
        entry = etree.Element(element.tag) if shallow else copy.deepcopy(element)
        entry.set(NC_OPERATION, "remove")
        holder(parent_key, old).append(entry)
    return config, touched


def _same(a: etree._Element, b: etree._Element) -> bool:
    return etree.tostring(a, method="c14n", exclusive=True) == etree.tostring(b, method="c14n", exclusive=True)


def datastore_name(name: str) -> str:
    """Check a configuration datastore name this agent has (running, candidate); `RpcError` otherwise."""
    if name not in ("running", "candidate"):
        raise RpcError.invalid_value(
            f"datastore <{name}> is not available: this agent has <running/> and <candidate/>"
            + (" (no :startup: running is already persistent)" if name == "startup" else ""),
            error_type="protocol",
        )
    return name
