"""The public behaviour API: everything an agent's own logic needs, from one module.

Import from here, and only from here, to write an agent's behaviour outside this repository::

    from an_agent.agents.sdk import LabBehaviour, NotFeasible, Task, TaskRun, ValidatedPayload

    class CapacityAgent(LabBehaviour):
        description = "transport capacity: spare bandwidth on a backhaul"

        def feasibility(self, description, payload, requester):
            if payload is None:
                raise NotFeasible("send a fault_diagnosis_v1 payload")
            return "I can check the backhaul of those sites"

        def handle(self, task, payload, run):
            run.block("waiting on the capacity planner")
            ...
            self.finish(run, "2 links have spare capacity", {"links": [...]})

The shipped lab roles (``an_agent.agents.roles``) are written against this module too: a plugin can do
what they do, no more is reserved to them. The API is versioned by `API_VERSION` (semantic versioning:
a minor version adds names, a major one may change or remove them).

Two levels:

- `Behaviour` / `TaskRun` / `AgentInfo`: the runtime's seam. `Behaviour.execute` gets each task on a
  worker thread with a `TaskRun` to report ``processing`` / ``blocked`` / ``suspended``, ask for input
  (``input-required``) and end it (``finished`` / ``failed``); `Behaviour.negotiate` answers
  ``task-negotiate``. `AgentInfo` is what the agent tells its behaviour (profile, clock, the payload
  the operation layer validated, the response check).
- `LabBehaviour`: what the roles build on. A subclass implements `LabBehaviour.handle` (the task with
  its payload already validated against its template) and `LabBehaviour.feasibility` (accept by
  returning a reason, refuse or counter-propose by raising `NotFeasible`); it ends a task with
  `LabBehaviour.finish` (the result checked against the skill's declared response schema) or by
  raising `TaskFailure`; asks its assigner with `LabBehaviour.ask_input`; finds peers by skill with
  `LabBehaviour.find_peers` and runs FEASIBILITY -> taskAssign -> result with them by
  `LabBehaviour.ask`. Its ``env`` (`AgentEnvironment`) is the same view of the world the roles have:
  the managed network (`ManagedNetwork`: alarms, sites, cells, links, and the actions on them), the
  lab's time (`Scheduler`: wait with ``env.scheduler.sleep``, never on the wall clock), its journal.

How a behaviour is loaded: ``an-agent serve --behaviour PACKAGE.MODULE:CLASS --profile FILE``, a
topology agent's ``behaviour: PACKAGE.MODULE:CLASS``, or by a name the package declares in the
``an_agent.behaviours`` entry-point group (``behaviour: NAME``). A `LabBehaviour` subclass is built
with ``(env, peers)``; any other `Behaviour` subclass with no argument.
"""

from __future__ import annotations

from an_agent.agents.base import LabBehaviour, verb_of
from an_agent.agents.conversation import Outcome
from an_agent.agents.environment import (
    AgentEnvironment,
    Alarm,
    CellView,
    LinkView,
    ManagedNetwork,
    NetworkEvent,
    Scheduler,
    Shutdown,
    SiteView,
)
from an_agent.agents.failures import NotFeasible, TaskFailure
from an_agent.agents.payloads import envelope
from an_agent.errors import AnAgentError, RpcError, SchemaError
from an_agent.model import (
    AgentProfile,
    DataParam,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Skill,
    Task,
    TaskResult,
    TaskStatus,
    build_prompt,
    parse_prompt,
)
from an_agent.runtime.behaviour import AgentInfo, Behaviour, ProvidedInput, TaskRun
from an_agent.schemas.validate import ValidatedPayload

API_VERSION = "1.0"
"""The version of this API (semantic versioning; `an_agent.agents.sdk` module docstring)."""

ENTRY_POINT_GROUP = "an_agent.behaviours"
"""The entry-point group a package declares its behaviours in (``NAME = "package.module:Class"``)."""

__all__ = [
    "API_VERSION",
    "ENTRY_POINT_GROUP",
    "AgentEnvironment",
    "AgentInfo",
    "AgentProfile",
    "Alarm",
    "AnAgentError",
    "Behaviour",
    "CellView",
    "DataParam",
    "LabBehaviour",
    "LinkView",
    "ManagedNetwork",
    "NegotiationRequest",
    "NegotiationResult",
    "NegotiationType",
    "NetworkEvent",
    "NotFeasible",
    "Outcome",
    "ProvidedInput",
    "RpcError",
    "Scheduler",
    "SchemaError",
    "Shutdown",
    "SiteView",
    "Skill",
    "Task",
    "TaskFailure",
    "TaskResult",
    "TaskRun",
    "TaskStatus",
    "ValidatedPayload",
    "build_prompt",
    "envelope",
    "parse_prompt",
    "verb_of",
]
