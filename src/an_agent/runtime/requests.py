"""Typed requests and results of the operation layer (`an_agent.runtime.operations`).

A face builds these from its protocol (NETCONF XML, A2A JSON-RPC) and renders
the results back; nothing here knows a wire format. Data-tree values (edits,
read results) are lxml elements of the YANG data tree, the agent's own
representation of its datastore.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Literal

from lxml import etree

from an_agent.model import IRTF_AGENT_NS, DataParam, Task

EditOperation = Literal["merge", "replace", "none"]


@dataclass(frozen=True)
class EditConfig:
    """A generic YANG edit (RFC 6241 semantics) of ``target``: the children of ``config`` are applied.

    ``test_only``: every check of the edit runs, nothing changes (test-option ``test-only``).
    """

    config: etree._Element
    default_operation: EditOperation = "merge"
    target: Literal["running", "candidate"] = "running"
    test_only: bool = False


@dataclass(frozen=True)
class AssignTask:
    """taskAssign: create ``task`` with the ``data_params`` it refers to (by ``msg-data``)."""

    task: Task
    data_params: tuple[DataParam, ...] = ()


@dataclass(frozen=True)
class CancelTask:
    """taskCancel: the task stays queryable with status ``canceled``."""

    task_id: str
    refuse_ended: bool = False
    """Refuse a task that already ended, also one already ``canceled`` (A2A's CancelTask: a terminal task is
    not cancelable); False: cancelling a canceled task again is a no-op (a NETCONF edit that changes nothing)."""


@dataclass(frozen=True)
class ProvideInput:
    """The assigner's answer to a task's ``input-required``: data-params for its ``msg-data`` and/or a new ``content``.

    Carried out as an edit of the task entry, through the same admission as
    an assignment (authorization, validation of structured payloads).
    """

    task_id: str
    data_params: tuple[DataParam, ...] = ()
    content: str | None = None


@dataclass(frozen=True)
class ReadScope:
    """What a read can possibly select, so that only that is built.

    ``names``: top-level nodes as (namespace or None, local name); None means
    all. ``task_ids``: only these tasks of ``/tasks`` (None: all).
    ``templates``: whether ``/agent`` should carry the schema-templates state.
    """

    names: frozenset[tuple[str | None, str]] | None = None
    task_ids: frozenset[str] | None = None
    templates: bool = True

    def wants(self, element: etree._Element) -> bool:
        q = etree.QName(element)
        return self.wants_name(q.namespace, q.localname)

    def wants_name(self, namespace: str | None, name: str) -> bool:
        if self.names is None:
            return True
        return (namespace, name) in self.names or (None, name) in self.names

    @property
    def task_keys(self) -> dict[str, list[tuple[str, ...]]] | None:
        """For `Datastore.top_level`: only these tasks of the tasks container, found by key."""
        if self.task_ids is None:
            return None
        return {f"{{{IRTF_AGENT_NS}}}tasks": [(task_id,) for task_id in sorted(self.task_ids)]}


EventFilter = Callable[[etree._Element], bool]


@dataclass(frozen=True)
class Subscribe:
    """taskResultSubscribe: events from the durable log (replayed from ``start_time``), then live ones.

    ``filter_key`` names the filter for sharing work between subscribers:
    requests with equal keys must have filters that select the same events
    (None: this filter is not compared with others).
    """

    event_filter: EventFilter | None = None
    start_time: float | None = None
    stop_time: float | None = None
    filter_key: Hashable = None


@dataclass(frozen=True)
class GetSchemaTemplate:
    """The template of ``scenario`` as ``client_id`` sees it (default: the caller's name).

    ``supported_versions`` (numbers, ``v2`` or schema_ids) are the versions the client can use: the
    answer is then the highest one the agent has among them (`TemplateRegistry.negotiate`).
    """

    scenario: str
    client_id: str | None = None
    preferred_language: str | None = None
    supported_versions: tuple[str, ...] = ()


@dataclass(frozen=True)
class SchemaTemplate:
    """A served template: its JSON text, the language of its descriptions and the patches applied."""

    schema_id: str
    language: str
    template_json: str
    applied_patches: tuple[str, ...] = ()


PatchDecisionKind = Literal["approve-schema-patch", "reject-schema-patch", "withdraw-schema-key"]


@dataclass(frozen=True)
class PatchDecision:
    """An administrator's decision on a schema patch (``key_name`` only for a withdrawal)."""

    kind: PatchDecisionKind
    patch_id: str
    key_name: str | None = None


@dataclass(frozen=True)
class PatchDecided:
    """The patch's state after a decision (None for a withdrawal, which answers nothing)."""

    patch_id: str
    state: str


DEFAULT_CONFIRM_TIMEOUT = 600.0
"""RFC 6241 section 8.4.5.1: a confirmed commit not confirmed within 600 s (default) is rolled back."""


@dataclass(frozen=True)
class Commit:
    """``<commit>`` of the candidate (RFC 6241 8.3.4.1), confirmed or confirming (8.4.5.1, :confirmed-commit:1.1).

    ``confirmed``: running is rolled back unless a confirming commit arrives within
    ``confirm_timeout`` seconds. ``persist``: the confirmed commit survives the end of
    its session and is confirmed (or cancelled) from any session that gives the
    same value as ``persist_id``.
    """

    confirmed: bool = False
    confirm_timeout: float = DEFAULT_CONFIRM_TIMEOUT
    persist: str | None = None
    persist_id: str | None = None
