"""`SchemaClient`: the client half of schema negotiation (draft-zhou section 5) over one NETCONF session.

`template` runs ``get-schema-template`` stating the versions this client supports and caches the
answer; `data_param` builds and validates a payload against the negotiated template before anything is
sent; `assign` does both and assigns the task. The cache is dropped for a schema when a
``schema-update`` notification names it (`updates`, `note_update`) and when a task result carries
``schema_update_suggestion`` (`AgentClient.get_task` calls `forget`); `schema_update_suggestions`
surfaces those. Schema administrators read the live templates with their patches
(`live_templates`) and decide on patches (`decide_patch`).

Errors: those of `NetconfClient`, and `SchemaError` for a payload refused client side or a version
the agent does not have.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.errors import RpcError, SchemaError
from an_agent.model import IRTF_AGENT_NS, DataParam, DataType, Task, build_prompt
from an_agent.model._xml import root
from an_agent.model.ns import AN_AGENT_SCHEMA_NS
from an_agent.nc.client import NetconfClient
from an_agent.nc.subscription import NotificationKind
from an_agent.schemas.registry import parse_version
from an_agent.schemas.suggestion import schema_update_suggestions
from an_agent.schemas.template import Template
from an_agent.schemas.validate import ValidatedPayload, media_type, validate_payload

_S = f"{{{AN_AGENT_SCHEMA_NS}}}"
_A = f"{{{IRTF_AGENT_NS}}}"
PatchDecision = Literal["approve", "reject", "withdraw"]
__all__ = [
    "NegotiatedTemplate",
    "PatchDecision",
    "SchemaClient",
    "SchemaUpdate",
    "schema_update_suggestions",
    "template_request",
]


@dataclass(frozen=True)
class NegotiatedTemplate:
    """The agent's answer to ``get-schema-template``: the template this client is to use."""

    template: Template
    language: str
    applied_patches: tuple[str, ...] = ()

    @property
    def schema_id(self) -> str:
        return self.template.schema_id


def template_request(
    scenario: str,
    supported_versions: Collection[str] = (),
    *,
    client_id: str | None = None,
    language: str | None = None,
) -> etree._Element:
    """The ``get-schema-template`` RPC element (the arguments as in `SchemaClient.template`)."""
    rpc = etree.Element(_S + "get-schema-template", nsmap=default_ns(AN_AGENT_SCHEMA_NS))
    etree.SubElement(rpc, _S + "scenario").text = scenario
    if language:
        etree.SubElement(rpc, _S + "preferred-language").text = language
    if client_id:
        etree.SubElement(rpc, _S + "client-id").text = client_id
    for version in supported_versions:
        etree.SubElement(rpc, _S + "supported-version").text = version
    return rpc


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


class SchemaClient:
    """Schema negotiation and payloads for one `AgentClient` (its ``schemas`` attribute); thread-safe cache."""

    def __init__(self, netconf: NetconfClient, assign: Callable[[Task, Iterable[DataParam]], None]) -> None:
        self.netconf = netconf
        self._assign = assign
        # (scenario, client_id, versions) -> answer; schema-update notifications may arrive on another thread.
        self._schemas: dict[tuple[str, str | None, tuple[str, ...]], NegotiatedTemplate] = {}
        self._schemas_lock = threading.Lock()

    def template(
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
        reply = self.netconf.call(
            template_request(scenario, supported_versions, client_id=client_id, language=language)
        )
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

    def is_cached(self, scenario: str, supported_versions: Collection[str] = (), client_id: str | None = None) -> bool:
        """Whether `template` would answer these arguments from the cache (no ``get-schema-template``)."""
        with self._schemas_lock:
            return (scenario, client_id, tuple(sorted(supported_versions))) in self._schemas

    @property
    def cached_ids(self) -> set[str]:
        """The schema_ids of the templates cached now."""
        with self._schemas_lock:
            return {answer.schema_id for answer in self._schemas.values()}

    def forget(self, schema_id: str | None = None) -> None:
        """Drop cached templates: those of ``schema_id``'s scenario, or all."""
        with self._schemas_lock:
            if schema_id is None:
                self._schemas.clear()
                return
            scenarios = {a.template.scenario for a in self._schemas.values() if a.schema_id == schema_id}
            for key, answer in list(self._schemas.items()):
                if answer.schema_id == schema_id or answer.template.scenario in scenarios or key[0] == schema_id:
                    del self._schemas[key]

    def note_update(self, update: SchemaUpdate) -> None:
        """Act on a ``schema-update`` received elsewhere: the named schema's cached template is stale."""
        self.forget(update.schema_id or None)

    def updates(self, start_time: float | None = None, timeout: float | None = None) -> Iterator[SchemaUpdate]:
        """Subscribe to ``schema-update`` notifications; each drops the cached template before it is yielded.

        Uses this session's one subscription (open another `AgentClient` to also watch tasks).
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
                self.note_update(update)
                yield update

    def data_param(
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
        negotiated = self.template(scenario, supported_versions, client_id=client_id)
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

    def assign(
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
        param, accepted = self.data_param(
            f"{task.task_id}-payload", scenario, payload, supported_versions, client_id=task.send_from
        )
        content = task.content or build_prompt(
            f"what the {accepted.schema_id} payload of data-param {param.id} names",
            f"a {scenario} task, as the structured payload ({param.format}) states",
        )
        task = replace(task, msg_data=[*task.msg_data, param.id], content=content)
        self._assign(task, [param])
        return accepted

    # ---- administration -------------------------------------------------------------------------

    def live_templates(self) -> list[dict[str, Any]]:
        """The templates the agent serves now (``/agent/schema-templates``), keys and patches included.

        Each is ``{"schema_id", "scenario", "keys": [{..., "state"}], "patches": [{"patch_id", ...}]}``.
        """
        agent = root("agent")
        etree.SubElement(agent, _S + "schema-templates", nsmap=default_ns(AN_AGENT_SCHEMA_NS))
        data = self.netconf.get(filter=agent)
        out: list[dict[str, Any]] = []
        for entry in data.iter(_S + "template"):
            keys = []
            for key in entry.iter(_S + "key"):
                default = key.findtext(_S + "default-value")
                keys.append(
                    {
                        "key_name": key.findtext(_S + "key-name"),
                        "key_type": key.findtext(_S + "key-type"),
                        "required": key.findtext(_S + "required") == "true",
                        "default_value": None if default is None else json.loads(default),
                        "semantic_description": key.findtext(_S + "semantic-description"),
                        "state": key.findtext(_S + "state"),
                    }
                )
            patches = [
                {
                    "patch_id": patch.findtext(_S + "patch-id"),
                    "state": patch.findtext(_S + "state") or "active",
                    "timestamp": patch.findtext(_S + "timestamp"),
                    "expiration": patch.findtext(_S + "expiration"),
                    "experimental": patch.findtext(_S + "experimental") == "true",
                    "new_keys": [e.text for e in patch.iter(_S + "new-key")],
                    "modified_keys": [e.text for e in patch.iter(_S + "modified-key")],
                }
                for patch in entry.iter(_S + "patch")
            ]
            out.append(
                {
                    "schema_id": entry.findtext(_S + "schema-id"),
                    "scenario": entry.findtext(_S + "scenario"),
                    "keys": keys,
                    "patches": patches,
                }
            )
        return out

    def decide_patch(self, decision: PatchDecision, patch_id: str, key_name: str | None = None) -> str | None:
        """Approve or reject a pending patch, or withdraw one key of a published patch (schema admins only).

        Returns the patch's state afterwards (None for a withdrawal, which answers ``<ok/>``). The agent
        refuses with access-denied when the session's user is not a schema administrator.
        """
        name = {"approve": "approve-schema-patch", "reject": "reject-schema-patch", "withdraw": "withdraw-schema-key"}
        rpc = etree.Element(_S + name[decision], nsmap=default_ns(AN_AGENT_SCHEMA_NS))
        etree.SubElement(rpc, _S + "patch-id").text = patch_id
        if decision == "withdraw":
            if not key_name:
                raise SchemaError("withdrawing needs the key", ["key-name: missing"])
            etree.SubElement(rpc, _S + "key-name").text = key_name
        reply = self.netconf.call(rpc)
        self.forget()  # whatever was decided, cached templates may be stale
        return reply.findtext(_S + "state")
