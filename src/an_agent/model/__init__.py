"""The data model of draft-wang-nmrg-magent-im as Python dataclasses, with the one XML codec.

Each class mirrors a node of the ``irtf-agent`` YANG module and converts to and
from the lxml elements that travel over NETCONF (``to_xml`` / ``from_xml``).
This package and ``nc/`` are the only places that build that XML: behaviours
work with these objects. Python names are snake_case; the XML uses the YANG
names exactly (``task-sendFrom``, ``commuType``, ...). Times are float seconds
since the epoch (see `an_agent.clock`).

Parsing errors are `RpcError` (missing-element / invalid-value with the
node's path) for XML, `ConfigError` for profile files.
"""

from an_agent.model.anyxml import AnyXml
from an_agent.model.context import ContextEntry
from an_agent.model.data_param import DataParam
from an_agent.model.enums import CommuType, DataType, NegotiationType, TaskStatus
from an_agent.model.input_required import InputRequired
from an_agent.model.negotiation import NegotiationRequest, NegotiationResult
from an_agent.model.notification import ConditionNotification
from an_agent.model.ns import (
    AGENT_MESSAGE_NS,
    AN_AGENT_DIRECTORY_NS,
    AN_AGENT_SCHEMA_NS,
    AN_AGENT_TRACE_NS,
    IRTF_AGENT_NS,
    NETCONF_BASE_NS,
    NETCONF_MONITORING_NS,
    NETCONF_NOTIFICATION_NS,
    NETMOD_NOTIFICATION_NS,
)
from an_agent.model.profile import AgentProfile, AuthMethod, Capability, Skill
from an_agent.model.prompt import PromptSections, build_prompt, parse_prompt
from an_agent.model.task import Task, TaskResult, TaskSubscription, tasks_element

__all__ = [
    "AGENT_MESSAGE_NS",
    "AN_AGENT_DIRECTORY_NS",
    "AN_AGENT_SCHEMA_NS",
    "AN_AGENT_TRACE_NS",
    "IRTF_AGENT_NS",
    "NETCONF_BASE_NS",
    "NETCONF_MONITORING_NS",
    "NETCONF_NOTIFICATION_NS",
    "NETMOD_NOTIFICATION_NS",
    "AgentProfile",
    "AnyXml",
    "AuthMethod",
    "Capability",
    "CommuType",
    "ConditionNotification",
    "ContextEntry",
    "DataParam",
    "DataType",
    "InputRequired",
    "NegotiationRequest",
    "NegotiationResult",
    "NegotiationType",
    "PromptSections",
    "Skill",
    "Task",
    "TaskResult",
    "TaskStatus",
    "TaskSubscription",
    "build_prompt",
    "parse_prompt",
    "tasks_element",
]
