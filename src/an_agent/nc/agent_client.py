"""`AgentClient`: the draft's task operations as typed calls over one NETCONF session.

Each commuType maps onto one NETCONF exchange (DESIGN.md):

==========================  ============================================================
CapabilityRequest           `profile`: ``<get>`` of /irtf-agent:agent
taskAssign                  `assign_task`: ``<edit-config>`` creating /tasks/task
taskCancel                  `cancel_task`: ``<edit-config>`` merge of commuType=taskCancel
taskResultQuery             `get_task` / `list_tasks`: ``<get>`` of /tasks
Feasibility/Fulfillment     `negotiate`: the ``task-negotiate`` RPC
taskResultSubscribe/Notify  `watch`: ``<create-subscription>``, condition-notifications
==========================  ============================================================

Structured payloads (draft-zhou section 5, the client half of schema negotiation): `schema_template`
runs ``get-schema-template`` stating the versions this client supports and caches the answer;
`structured_param` builds and validates a payload against the negotiated template before anything is
sent; `assign_structured` does both and assigns. The cache is dropped for a schema when a
``schema-update`` notification names it (`schema_updates`, `note_schema_update`) and when a task
result carries ``schema_update_suggestion`` (`get_task`); `suggestions` surfaces those.

All XML comes from `an_agent.model`; errors are those of `NetconfClient`, and `SchemaError` for a
payload refused client side or a version the agent does not have.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.errors import RpcError, SchemaError
from an_agent.model import (
    IRTF_AGENT_NS,
    NETCONF_BASE_NS,
    AgentProfile,
    CommuType,
    ConditionNotification,
    DataParam,
    DataType,
    NegotiationRequest,
    NegotiationResult,
    Task,
    build_prompt,
    tasks_element,
)
from an_agent.model._xml import child, leaf, root
from an_agent.model.ns import AN_AGENT_SCHEMA_NS
from an_agent.model.profile import PROFILE_MEMBERS
from an_agent.nc.client import DEFAULT_PORT, NetconfClient, Notification, NotificationKind
from an_agent.schemas.registry import parse_version
from an_agent.schemas.template import Template
from an_agent.schemas.validate import ValidatedPayload, media_type, validate_payload

_S = f"{{{AN_AGENT_SCHEMA_NS}}}"


@dataclass(frozen=True)
class NegotiatedTemplate:
    """The agent's answer to ``get-schema-template``: the template this client is to use."""

    template: Template
    language: str
    applied_patches: tuple[str, ...] = ()

    @property
    def schema_id(self) -> str:
        return self.template.schema_id


@dataclass(frozen=True)
class SchemaUpdate:
    """A ``schema-update`` notification: a patch appeared or a key changed lifecycle state."""

    event: str
    schema_id: str
    patch_id: str | None = None
    key_name: str | None = None
    state: str | None = None
    client_id: str | None = None

    @classmethod
    def from_xml(cls, element: etree._Element) -> SchemaUpdate:
        def text(name: str) -> str | None:
            return element.findtext(_S + name)

        return cls(
            event=text("event") or "",
            schema_id=text("schema-id") or "",
            patch_id=text("patch-id"),
            key_name=text("key-name"),
            state=text("state"),
            client_id=text("client-id"),
        )


def schema_update_suggestions(task: Task) -> list[dict[str, Any]]:
    """The ``schema_update_suggestion`` entries of a task's JSON result (``{"schema_id", "patches"}`` each)."""
    if task.result is None or not task.result.data:
        return []
    try:
        data = json.loads(task.result.data)
    except json.JSONDecodeError:
        return []
    found = data.get("schema_update_suggestion") if isinstance(data, dict) else None
    items = found if isinstance(found, list) else [found] if found else []
    return [s for s in items if isinstance(s, dict) and isinstance(s.get("schema_id"), str)]


class AgentClient:
    """Typed access to one agent. Owns its `NetconfClient`; close it with `close` or a ``with`` block."""

    def __init__(self, netconf: NetconfClient) -> None:
        self.netconf = netconf
        # (scenario, client_id, versions) -> answer; schema-update notifications may arrive on another thread.
        self._schemas: dict[tuple[str, str | None, tuple[str, ...]], NegotiatedTemplate] = {}
        self._schemas_lock = threading.Lock()

    @classmethod
    def connect(
        cls,
        host: str,
        port: int = DEFAULT_PORT,
        *,
        username: str,
        password: str | None = None,
        key_filename: str | None = None,
        timeout: float = 30.0,
        hostkey_verify: bool = False,
    ) -> AgentClient:
        """Open a session to an agent; arguments and errors as `NetconfClient.connect`."""
        return cls(
            NetconfClient.connect(
                host,
                port,
                username=username,
                password=password,
                key_filename=key_filename,
                timeout=timeout,
                hostkey_verify=hostkey_verify,
            )
        )

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.netconf.close()

    # ---- CapabilityRequest ------------------------------------------------------------------

    def profile(self) -> AgentProfile:
        """The agent's profile (``<get>`` of /irtf-agent:agent, the draft's nodes only).

        The filter names the draft's profile nodes one by one, so that
        augmentations of /agent (an-agent-schema's templates, several kB) are
        neither built nor sent for a CapabilityRequest.
        """
        filter_ = root("agent")
        for member in PROFILE_MEMBERS:
            child(filter_, member)
        return AgentProfile.from_xml(self.netconf.get(filter=filter_))

    # ---- tasks --------------------------------------------------------------------------------

    def assign_task(self, task: Task, data_params: Iterable[DataParam] = ()) -> None:
        """Create the task (commuType taskAssign unless set), with the data-params it refers to.

        One ``<edit-config>``: the data-params are merged and the task is
        created in the same transaction, so its ``msg-data`` references
        resolve. An existing task-id is refused by the agent (data-exists).
        """
        if task.commu_type is None:
            task = replace(task, commu_type=CommuType.TASK_ASSIGN)
        config = [param.to_xml(operation="merge") for param in data_params]
        config.append(tasks_element([task], operation="create"))
        self.netconf.edit_config(config)

    def get_task(self, task_id: str) -> Task:
        """The task with its status and result (taskResultQuery).

        Raises RpcError data-missing when the agent has no such task.
        """
        filter_ = root("tasks")
        leaf(child(filter_, "task"), "task-id", task_id)
        tasks = Task.all_from_xml(self.netconf.get(filter=filter_))
        for task in tasks:
            if task.task_id == task_id:
                # Patches apply to this client now: the next payload must be built on the new template.
                for suggestion in schema_update_suggestions(task):
                    self.forget_schemas(suggestion["schema_id"])
                return task
        raise RpcError.data_missing(
            f"the agent has no task {task_id!r}", path=f"/irtf-agent:tasks/task[task-id={_xpath_literal(task_id)}]"
        )

    def list_tasks(self) -> list[Task]:
        """Every task the agent holds, with status and result, in the agent's order."""
        return Task.all_from_xml(self.netconf.get(filter=root("tasks")))

    def cancel_task(self, task_id: str) -> None:
        """Cancel a task (taskCancel): merge commuType=taskCancel into its entry; it stays queryable."""
        change = tasks_element([Task(task_id, commu_type=CommuType.TASK_CANCEL)])
        # default-operation none + merge on the leaf only: cancelling a task
        # that does not exist is then data-missing, never a half-made new task.
        commu_type = change.find(f"{{{IRTF_AGENT_NS}}}task/{{{IRTF_AGENT_NS}}}commuType")
        assert commu_type is not None
        commu_type.set(f"{{{NETCONF_BASE_NS}}}operation", "merge")
        self.netconf.edit_config(change, default_operation="none")

    def put_data_param(self, param: DataParam) -> None:
        """Create or update a ``data-params`` entry (merge)."""
        self.netconf.edit_config(param.to_xml(operation="merge"))

    # ---- structured payloads (schema negotiation) --------------------------------------------------

    def schema_template(
        self,
        scenario: str,
        supported_versions: Collection[str] = (),
        *,
        client_id: str | None = None,
        language: str | None = None,
        refresh: bool = False,
    ) -> NegotiatedTemplate:
        """The template to build payloads for ``scenario`` with (``get-schema-template``), cached.

        ``supported_versions`` (numbers, ``v2`` or schema_ids) are stated to the agent, which answers
        with the highest common version; an answer outside them (an agent that predates the
        negotiation) is refused here too. ``client_id`` is whom patches are looked up for (default:
        the session's user). Raises `SchemaError` when there is no common version, `RpcError` for the
        agent's refusal (an unknown scenario lists what it has).
        """
        wanted = {parse_version(v) for v in supported_versions}
        key = (scenario, client_id, tuple(sorted(supported_versions)))
        with self._schemas_lock:
            cached = None if refresh else self._schemas.get(key)
        if cached is not None:
            return cached
        rpc = etree.Element(_S + "get-schema-template", nsmap=default_ns(AN_AGENT_SCHEMA_NS))
        etree.SubElement(rpc, _S + "scenario").text = scenario
        if language:
            etree.SubElement(rpc, _S + "preferred-language").text = language
        if client_id:
            etree.SubElement(rpc, _S + "client-id").text = client_id
        for version in supported_versions:
            etree.SubElement(rpc, _S + "supported-version").text = version
        reply = self.netconf.call(rpc)
        text = reply.findtext(_S + "template")
        if text is None:
            raise RpcError.missing_element("template", "the get-schema-template reply has no template")
        answer = NegotiatedTemplate(
            template=Template.from_dict(
                json.loads(text), f"template {reply.findtext(_S + 'schema-id')} from the agent"
            ),
            language=reply.findtext(_S + "language") or "en",
            applied_patches=tuple(e.text or "" for e in reply.iter(_S + "applied-patch")),
        )
        if wanted and parse_version(answer.schema_id) not in wanted:
            raise SchemaError(
                f"no common version of scenario {scenario!r}: the client supports "
                + ", ".join(f"v{v}" for v in sorted(wanted)),
                [f"supported-version: the agent answered {answer.schema_id}"],
            )
        with self._schemas_lock:
            self._schemas[key] = answer
        return answer

    @property
    def cached_schema_ids(self) -> set[str]:
        """The schema_ids of the templates cached now."""
        with self._schemas_lock:
            return {answer.schema_id for answer in self._schemas.values()}

    def forget_schemas(self, schema_id: str | None = None) -> None:
        """Drop cached templates: those of ``schema_id``'s scenario, or all."""
        with self._schemas_lock:
            if schema_id is None:
                self._schemas.clear()
                return
            scenarios = {a.template.scenario for a in self._schemas.values() if a.schema_id == schema_id}
            for key, answer in list(self._schemas.items()):
                if answer.schema_id == schema_id or answer.template.scenario in scenarios or key[0] == schema_id:
                    del self._schemas[key]

    def note_schema_update(self, update: SchemaUpdate) -> None:
        """Act on a ``schema-update`` received elsewhere: the named schema's cached template is stale."""
        self.forget_schemas(update.schema_id or None)

    def schema_updates(self, start_time: float | None = None, timeout: float | None = None) -> Iterator[SchemaUpdate]:
        """Subscribe to ``schema-update`` notifications; each drops the cached template before it is yielded.

        Uses this session's one subscription (open another `AgentClient` to also `watch` tasks).
        ``timeout`` bounds the wait for each event (RequestTimeout).
        """
        subscription = self.netconf.subscribe(
            filter=etree.Element(_S + "schema-update", nsmap=default_ns(AN_AGENT_SCHEMA_NS)), start_time=start_time
        )
        tag = _S + "schema-update"
        while True:
            note = subscription.next(timeout)
            if note.kind is NotificationKind.NOTIFICATION_COMPLETE:
                return
            if note.kind is NotificationKind.EVENT and note.element.tag == tag:
                update = SchemaUpdate.from_xml(note.element)
                self.note_schema_update(update)
                yield update

    def structured_param(
        self,
        param_id: str,
        scenario: str,
        payload: Mapping[str, Any],
        supported_versions: Collection[str] = (),
        *,
        client_id: str | None = None,
        description: str | None = None,
    ) -> tuple[DataParam, ValidatedPayload]:
        """A data-param ``application/json;schema=<negotiated id>`` for ``payload``, validated here first.

        Raises `SchemaError` (one problem per offending key) before anything is sent.
        """
        negotiated = self.schema_template(scenario, supported_versions, client_id=client_id)
        envelope = {"schema_id": negotiated.schema_id, "payload": dict(payload)}
        accepted = validate_payload(negotiated.template, envelope)
        text = json.dumps(envelope, sort_keys=True)
        param = DataParam(
            id=param_id,
            data_type=DataType.TEXT,
            description=description or f"{negotiated.schema_id} payload",
            data_size=str(len(text.encode("utf-8"))),
            format=media_type(negotiated.schema_id),
            data=text,
        )
        return param, accepted

    def assign_structured(
        self,
        task: Task,
        scenario: str,
        payload: Mapping[str, Any],
        supported_versions: Collection[str] = (),
    ) -> ValidatedPayload:
        """Negotiate, build and validate the payload, then assign ``task`` carrying it (one edit).

        The payload is attributed to ``task.send_from`` (as the agent does), so patches for that
        client shape the template. A task without ``content`` gets a prompt naming the payload (the
        draft requires content). Returns what the client-side validation accepted (with warnings).
        """
        param, accepted = self.structured_param(
            f"{task.task_id}-payload", scenario, payload, supported_versions, client_id=task.send_from
        )
        content = task.content or build_prompt(
            f"what the {accepted.schema_id} payload of data-param {param.id} names",
            f"a {scenario} task, as the structured payload ({param.format}) states",
        )
        task = replace(task, msg_data=[*task.msg_data, param.id], content=content)
        self.assign_task(task, [param])
        return accepted

    # ---- negotiation ----------------------------------------------------------------------------

    def negotiate(self, request: NegotiationRequest) -> NegotiationResult:
        """Run ``task-negotiate`` (FEASIBILITY or FULFILLMENT) and return the agent's answer."""
        return NegotiationResult.from_xml(self.netconf.call(request.to_xml()))

    # ---- notifications ----------------------------------------------------------------------------

    def watch(
        self,
        task_id: str | None = None,
        start_time: float | None = None,
        timeout: float | None = None,
        until_terminal: bool = True,
    ) -> Iterator[ConditionNotification]:
        """Subscribe and yield ``condition-notifications``, in the order the agent sent them.

        ``task_id`` limits them to one task; with ``until_terminal`` the
        iteration then ends after that task's finished/failed/canceled event.
        ``start_time`` (seconds since the epoch) first replays logged events.
        ``timeout`` bounds the wait for each event (RequestTimeout); None waits
        as long as the session lives. The subscription is made when this is
        called, not on the first ``next``; a session holds one subscription.
        """
        filter_ = root("condition-notifications")
        if task_id is not None:
            leaf(filter_, "task-id", task_id)
        subscription = self.netconf.subscribe(filter=filter_, start_time=start_time)
        return self._events(subscription.next, task_id, timeout, until_terminal)

    @staticmethod
    def _events(
        next_notification: Callable[[float | None], Notification],
        task_id: str | None,
        timeout: float | None,
        until_terminal: bool,
    ) -> Iterator[ConditionNotification]:
        condition_tag = root("condition-notifications").tag
        while True:
            note = next_notification(timeout)
            if note.kind is NotificationKind.NOTIFICATION_COMPLETE:
                return
            if note.kind is not NotificationKind.EVENT or note.element.tag != condition_tag:
                continue
            event = ConditionNotification.from_xml(note.envelope)
            # The agent filters already; checking again keeps a lax agent from leaking other tasks.
            if task_id is not None and event.task_id != task_id:
                continue
            yield event
            if task_id is not None and until_terminal and event.status.terminal:
                return


def _xpath_literal(value: str) -> str:
    """An XPath string literal for ``value`` (quotes chosen so it stays one literal)."""
    return f"'{value}'" if "'" not in value else f'"{value}"'
