"""The directory role's behaviour: a task asking for agents is answered from the registry, on both faces.

The directory is reachable over NETCONF (the ``an-agent-directory`` RPCs and state) and, through this
behaviour, as an ordinary agent over NETCONF tasks and A2A messages: a task whose payload is an
``agent_query_v1`` (skill, domain, schema, provider) finishes with ``{"agents": [...]}`` (the entries that
fit, as ``an-agent agents find --json`` prints them); a text-only task looks for its ``## target object``
as a skill. A query nothing fits still finishes (an empty list is an answer): the failure is the asking
agent's to report (`an_agent.agents.discovery.NoPeerFits`).
"""

from __future__ import annotations

import json

from an_agent.agents.default import DefaultBehaviour
from an_agent.agents.sdk import TaskRun
from an_agent.model import Task, TaskResult, TaskStatus, parse_prompt
from an_agent.model.directory import AgentQuery
from an_agent.runtime.directory import Directory

QUERY_SCHEMA = "agent_query_v1"


class DirectoryBehaviour(DefaultBehaviour):
    """Answers agent queries from ``directory`` (module docstring); negotiation as `DefaultBehaviour`."""

    def __init__(self, directory: Directory) -> None:
        super().__init__(work_seconds=0.0)
        self.directory = directory

    def execute(self, task: Task, run: TaskRun) -> None:
        run.set_status(TaskStatus.PROCESSING)
        payload = self.agent.payload(task.task_id)
        if payload is not None and payload.schema_id == QUERY_SCHEMA:
            values = {k: v for k, v in payload.values.items() if isinstance(v, str) and v}
            query = AgentQuery(values.get("skill"), values.get("domain"), values.get("schema"), values.get("provider"))
        else:
            target = (parse_prompt(task.content or "").target_object or "").strip()
            query = AgentQuery(skill=target or None)
        found = self.directory.find(query)
        summary = f"{len(found)} agent(s) fit {query.describe()}"
        data = {"agents": [entry.to_dict() for entry in found]}
        run.finish(TaskResult(summary=summary, format="application/json", data=json.dumps(data, sort_keys=True)))
