"""A two-minute tour of one agent: serve it, ask for its profile, negotiate and assign a task.

``python -m an_agent.quickstart [--state-dir DIR]`` starts the built-in example
agent on a free loopback port, talks to it over real NETCONF with our client,
prints each step (with the NETCONF operation behind it), and stops the agent.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from an_agent.model import CommuType, NegotiationRequest, NegotiationType, Task, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig


def step(title: str, operation: str) -> None:
    print(f"\n== {title}  [{operation}]")


def run(state_dir: Path) -> int:
    with AgentServer(ServerConfig(state_dir=state_dir, port=0)) as server:
        print(f"agent {server.profile.name} serving NETCONF on 127.0.0.1:{server.port} (state in {state_dir})")
        with AgentClient.connect(host="127.0.0.1", port=server.port, username="admin", password="admin") as client:
            step("CapabilityRequest: who are you?", "<get> /irtf-agent:agent")
            profile = client.profile()
            print(f"{profile.name} by {profile.provider}, domain {profile.domain}")
            for skill in profile.skills:
                print(f"  skill {skill.name}: {skill.description}")

            first = build_prompt("CELL-0401", "raise the transmit power by 9 dB")
            step("FeasibilityNegotiate: could you do this?", "<task-negotiate> type FEASIBILITY")
            answer = client.negotiate(
                NegotiationRequest(
                    task_id="tour-1", type=NegotiationType.FEASIBILITY, content=[first], send_from="tour"
                )
            )
            print(f"feasible: {answer.feasible} - {answer.reason}")
            content = first
            if not answer.feasible and answer.counter_proposal:
                print("counter-proposal accepted:")
                print("  " + answer.counter_proposal.replace("\n", "\n  "))
                content = answer.counter_proposal

            step("taskAssign + taskResultSubscribe", "<create-subscription>, then <edit-config> create /tasks/task")
            task = Task("tour-1", send_from="tour", commu_type=CommuType.TASK_ASSIGN, content=content)
            events = client.watch(task_id=task.task_id, timeout=30)
            started = time.perf_counter()
            client.assign_task(task)
            for event in events:
                print(f"  {(time.perf_counter() - started) * 1000:7.1f} ms  condition-notifications: {event.status}")

            step("taskResultQuery", "<get> /irtf-agent:tasks/task[task-id='tour-1']")
            done = client.get_task(task.task_id)
            print(f"status {done.status}: {done.result.summary if done.result else ''}")

            step("FulfillmentNegotiate: is the result good?", "<task-negotiate> type FULFILLMENT")
            verdict = client.negotiate(
                NegotiationRequest(task_id="tour-1", type=NegotiationType.FULFILLMENT, content=[], send_from="tour")
            )
            print(f"fulfilled: {verdict.fulfilled} - {verdict.reason}")
    print("\nagent stopped.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m an_agent.quickstart", description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", type=Path, help="where the agent keeps its state (default: a temporary dir)")
    args = parser.parse_args(argv)
    if args.state_dir is not None:
        return run(args.state_dir)
    with tempfile.TemporaryDirectory(prefix="an-agent-tour-") as tmp:
        return run(Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
