"""Cost of task-async false and of chunked large data, against one local agent.

    PYTHONPATH=src python -m bench.task_sync_chunks

Prints the median reply time of a task-creating edit with task-async true and
false (the default behaviour with no work: the difference is the wait for the
task's end), and the time to send a 16 MiB data-param, which our client cuts
into 1 Mi-character pieces sent ahead of the task.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from an_agent.agents.default import DefaultBehaviour
from an_agent.model import DataParam, DataType, Task
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig

PROMPT = "## target object\nX\n## task description\ndo it"


def main(n: int = 30) -> None:
    with tempfile.TemporaryDirectory() as state:
        config = ServerConfig(
            state_dir=Path(state), port=0, schemas="off", behaviour=DefaultBehaviour(work_seconds=0.0)
        )
        with (
            AgentServer(config) as server,
            AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as client,
        ):
            for task_async in (True, None):
                times = []
                for i in range(n):
                    started = time.perf_counter()
                    client.assign_task(Task(f"{task_async}-{i}", content=PROMPT, task_async=task_async))
                    times.append((time.perf_counter() - started) * 1000)
                label = "true " if task_async else "false"
                print(f"task-async {label}: edit reply median {statistics.median(times):.1f} ms (n={n})")
            big = DataParam("d", DataType.TEXT, data="x" * (16 * 1024 * 1024))
            started = time.perf_counter()
            client.assign_task(Task("big", content=PROMPT, msg_data=["d"], task_async=True), [big])
            print(f"16 MiB data-param, 16 pieces in 2 edits: {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
