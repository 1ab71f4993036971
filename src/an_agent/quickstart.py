"""A two-minute tour of one agent: it diagnoses, recommends and recovers faults of a simulated network.

``python -m an_agent.quickstart [--state-dir DIR]`` starts the quick-tour agent (`an_agent.lab.tour`: a
RAN fault agent on a built-in simulated network of six base stations, with a base-station software hang
on SITE-02 among its faults) on a free loopback port, talks to it over real NETCONF with our client,
prints each step (with the NETCONF operation behind it), and stops the agent. ``an-agent serve`` with no
profile serves the same agent.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from an_agent.agents.payloads import proposal
from an_agent.lab.journal import Note
from an_agent.lab.tour import tour_agent
from an_agent.model import CommuType, NegotiationRequest, NegotiationType, Task, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.schemas.fulfilment import Expectation
from an_agent.server import AgentServer, ServerConfig

SITE = "SITE-02"
SCENARIO = "fault_diagnosis"
DIAGNOSIS_EXPECTED = Expectation(keys=("root_cause", "recommendations"), covers={"explained_site_ids": (SITE,)})
"""What we, the requester, expect of the diagnosis: sent as its expected-response, and judged by us."""


def step(title: str, operation: str) -> None:
    print(f"\n== {title}  [{operation}]")


def show_note(note: Note) -> None:
    """What the agent does on the simulated network, as it does it."""
    print(f"  network: {note.text}")


class Tour:
    """The steps of the tour against one connected client."""

    def __init__(self, client: AgentClient, port: int) -> None:
        self.client = client
        self.port = port
        self.started = time.perf_counter()

    def run_task(self, task_id: str, description: str, payload: dict[str, Any], expected: str) -> Task:
        """taskAssign with a structured payload (negotiated template), watched until it ends."""
        task = Task(
            task_id,
            send_from="tour",
            commu_type=CommuType.TASK_ASSIGN,
            content=build_prompt(SITE, description),
            expected_response=expected,
        )
        # A session holds one subscription: each task is watched from a session of its own.
        with AgentClient.connect("127.0.0.1", self.port, username="admin", password="admin") as watcher:
            events = watcher.watch(task_id=task_id, timeout=60)
            self.client.schemas.assign(task, SCENARIO, payload, ["v1"])
            for event in events:
                elapsed = (time.perf_counter() - self.started) * 1000
                print(f"  {elapsed:7.1f} ms  condition-notifications: {event.status}")
        return self.client.get_task(task_id)


def run(state_dir: Path) -> int:
    agent = tour_agent(schemas="validate", on_note=show_note)
    config = ServerConfig(
        state_dir=state_dir, port=0, profile=agent.profile, behaviour=agent.behaviour, schemas="validate"
    )
    with AgentServer(config) as server:
        print(f"agent {server.profile.name} serving NETCONF on 127.0.0.1:{server.port} (state in {state_dir})")
        down = [s.site_id for s in agent.network.sites() if not s.in_service]
        print(f"its simulated network: {len(agent.network.sites())} base stations, out of service: {', '.join(down)}")
        with AgentClient.connect(host="127.0.0.1", port=server.port, username="admin", password="admin") as client:
            tour = Tour(client, server.port)
            step("CapabilityRequest: who are you?", "<get> /irtf-agent:agent")
            profile = client.profile()
            print(f"{profile.name} by {profile.provider}, domain {profile.domain}: {profile.management_object}")
            for skill in profile.skills:
                print(f"  skill {skill.name} ({', '.join(skill.input_modes)}): {skill.description}")

            step("Schema negotiation: which payload do you take?", "<get-schema-template> supported-version v1")
            negotiated = client.schemas.template(SCENARIO, ["v1"])
            required = [k.key_name for k in negotiated.template.keys if k.required]
            print(f"template {negotiated.schema_id}: keys {', '.join(k.key_name for k in negotiated.template.keys)}")
            print(f"  required: {', '.join(required)}")

            payload = {"fault_type": "base_station_outage", "affected_site_ids": [SITE], "domain": "wireless"}
            description = f"Diagnose the radio side of {SITE}: it went out of service"
            step("FeasibilityNegotiate: could you do this?", "<task-negotiate> type FEASIBILITY")
            envelope = {"schema_id": negotiated.schema_id, "payload": payload}
            answer = client.negotiate(
                NegotiationRequest(
                    task_id="tour-diagnose",
                    type=NegotiationType.FEASIBILITY,
                    content=[proposal(SITE, description, envelope)],
                    send_from="tour",
                )
            )
            print(f"feasible: {answer.feasible} - {answer.reason}")

            step("taskAssign Diagnose + taskResultSubscribe", "<create-subscription>, <edit-config> with data-param")
            diagnosis = tour.run_task("tour-diagnose", description, payload, DIAGNOSIS_EXPECTED.to_text())
            finding = json.loads(diagnosis.result.data or "{}") if diagnosis.result else {}
            print(f"status {diagnosis.status}: root cause: {finding.get('root_cause')}")
            print(f"  recommended: {'; '.join(finding.get('recommendations', []))}")
            print(f"  remote repair possible: {finding.get('remote_repair_possible')}")

            step("taskAssign Repair: recover it", "<edit-config> create /tasks/task")
            repair = tour.run_task("tour-repair", f"Repair {SITE} remotely", payload, "repaired")
            print(f"status {repair.status}: {repair.result.summary if repair.result else ''}")

            step("taskAssign Verify: is service back?", "<edit-config> create /tasks/task")
            verify = tour.run_task("tour-verify", f"Verify that service is restored on {SITE}", payload, "restored_at")
            print(f"status {verify.status}: {verify.result.summary if verify.result else ''}")

            step("FulfillmentNegotiate: judged by us, the requester", "<get> the task, <task-negotiate> FULFILLMENT")
            for criteria in (DIAGNOSIS_EXPECTED, Expectation(covers={"explained_site_ids": (SITE, "SITE-05")})):
                verdict = client.fulfilment("tour-diagnose", criteria)
                print(f"expecting {criteria.to_text()}")
                print(f"  fulfilled: {verdict.fulfilled} - {verdict.judgement.reason}")
                print(f"  (the agent says {verdict.executor_fulfilled}: {verdict.executor_reason})")
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
