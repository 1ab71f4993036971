"""The NETCONF face of an agent's own RPCs: ``task-negotiate`` (irtf-agent), the ``an-agent-schema`` RPCs
(``get-schema-template``, the patch decisions) and, on a directory agent, the ``an-agent-directory`` RPCs
(``register-agent``, ``deregister-agent``, ``find-agents``).

`handle` parses each (its input checked against the YANG by libyang first), calls
`an_agent.runtime.operations.Operations` and renders the output; `an_agent.nc.face.NetconfFace` calls it
for every RPC that is not a base operation. It decides nothing.
"""

from __future__ import annotations

from typing import cast

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.errors import RpcError
from an_agent.model import AN_AGENT_DIRECTORY_NS, AN_AGENT_SCHEMA_NS, IRTF_AGENT_NS, NegotiationRequest
from an_agent.model.directory import AgentQuery, DirectoryEntry, entries_to
from an_agent.nc.handler import Reply
from an_agent.runtime.directory import DirectoryOperations
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import GetSchemaTemplate, PatchDecision, PatchDecisionKind
from an_agent.runtime.served import Served

_S = f"{{{AN_AGENT_SCHEMA_NS}}}"
_SCHEMA_DECISIONS = {"approve-schema-patch", "reject-schema-patch", "withdraw-schema-key"}


def handle(agent: Operations, principal: Principal, operation: etree._Element) -> Reply | None:
    """The reply to ``operation`` when it is one of the agent's own RPCs, else None (not ours to answer)."""
    q = etree.QName(operation)
    if q.namespace == IRTF_AGENT_NS and q.localname == "task-negotiate":
        validate_rpc(agent, operation)
        result = agent.negotiate(principal, NegotiationRequest.from_xml(operation))
        return Reply(result.to_xml())
    if q.namespace == AN_AGENT_SCHEMA_NS and q.localname == "get-schema-template":
        return _get_schema_template(agent, principal, operation)
    if q.namespace == AN_AGENT_SCHEMA_NS and q.localname in _SCHEMA_DECISIONS:
        return _decide(agent, principal, operation)
    if q.namespace == AN_AGENT_DIRECTORY_NS and agent.directory is not None:
        return _directory(agent, principal, operation, agent.directory)
    return None


def validate_rpc(served: Served, operation: etree._Element) -> None:
    """Every RPC input is checked against the YANG by libyang before it is parsed."""
    served.yang.validate_rpc(etree.tostring(operation, encoding="unicode"))


def _directory(
    agent: Operations, principal: Principal, operation: etree._Element, directory: DirectoryOperations
) -> Reply:
    """register-agent, deregister-agent, find-agents of a directory agent (input checked by libyang)."""
    validate_rpc(agent, operation)
    name = etree.QName(operation).localname
    if name == "register-agent":
        directory.register(principal, DirectoryEntry.from_xml(operation))
        return Reply()
    if name == "deregister-agent":
        directory.deregister(principal, (operation.findtext(f"{{{AN_AGENT_DIRECTORY_NS}}}name") or "").strip())
        return Reply()
    if name == "find-agents":
        holder = etree.Element(f"{{{AN_AGENT_DIRECTORY_NS}}}output", nsmap=default_ns(AN_AGENT_DIRECTORY_NS))
        entries_to(holder, "agent", directory.find(principal, AgentQuery.from_xml(operation)))
        return Reply(list(holder))
    raise RpcError.operation_not_supported(f"RPC {name} of module an-agent-directory is not implemented")


def _get_schema_template(agent: Operations, principal: Principal, operation: etree._Element) -> Reply:
    _require_schemas(agent)
    validate_rpc(agent, operation)
    request = GetSchemaTemplate(
        (operation.findtext(_S + "scenario") or "").strip(),
        (operation.findtext(_S + "client-id") or "").strip() or None,
        (operation.findtext(_S + "preferred-language") or "").strip() or None,
        tuple((e.text or "").strip() for e in operation.iterchildren(_S + "supported-version")),
    )
    template = agent.get_schema_template(principal, request)
    holder = etree.Element(_S + "output", nsmap=default_ns(AN_AGENT_SCHEMA_NS))
    etree.SubElement(holder, _S + "schema-id").text = template.schema_id
    etree.SubElement(holder, _S + "language").text = template.language
    etree.SubElement(holder, _S + "template").text = template.template_json
    for patch_id in template.applied_patches:
        etree.SubElement(holder, _S + "applied-patch").text = patch_id
    return Reply(list(holder))


def _decide(agent: Operations, principal: Principal, operation: etree._Element) -> Reply:
    _require_schemas(agent)
    validate_rpc(agent, operation)
    key_name = (operation.findtext(_S + "key-name") or "").strip() or None
    decision = PatchDecision(
        cast(PatchDecisionKind, etree.QName(operation).localname),
        (operation.findtext(_S + "patch-id") or "").strip(),
        key_name,
    )
    decided = agent.decide_patch(principal, decision)
    if decided is None:
        return Reply()
    holder = etree.Element(_S + "output", nsmap=default_ns(AN_AGENT_SCHEMA_NS))
    etree.SubElement(holder, _S + "patch-id").text = decided.patch_id
    etree.SubElement(holder, _S + "state").text = decided.state
    return Reply(list(holder))


def _require_schemas(agent: Operations) -> None:
    # Before libyang sees the RPC: without the service its input is not worth checking.
    if agent.schemas is None:
        raise RpcError.operation_not_supported("this agent serves no scenario schemas", error_type="application")
