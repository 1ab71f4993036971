"""Context records are written after a task's admission; a task that ends first keeps its end time."""

from __future__ import annotations

from collections.abc import Callable

from an_agent.model import IRTF_AGENT_NS, ContextEntry, Task
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import Principal

_CONTEXT = f"{{{IRTF_AGENT_NS}}}context"


def _records(ops: Operations) -> dict[str, ContextEntry]:
    found = ops.datastore.find_entries(_CONTEXT, ("id",), [("task:quick",)])
    return {e.findtext(f"{{{IRTF_AGENT_NS}}}id") or "": ContextEntry.from_xml(e) for e in found}


def test_a_task_that_ended_before_its_record_gets_its_end_time(make_ops: Callable[..., Operations]) -> None:
    ops = make_ops()
    task = Task("quick", content="## target object\nSITE-07\n## task description\ndiagnose", send_from="planner")
    # The order a quick task can take now that the record follows the admission: the end first.
    ops.context.answered("quick")
    assert _records(ops) == {}
    ops.context.assigned(task, Principal.authenticated("admin").name)
    record = _records(ops)["task:quick"]
    assert record.send_from == "planner"
    assert record.response_time is not None and record.response_time >= record.request_time
