"""Draft section 2.1 steps 6-8 over real NETCONF: the trouble ticket, the FME copilots, the field engineer."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from labsupport import TOPOLOGIES, run, variant

from an_agent.agents.fme import classify
from an_agent.agents.guidance import Query
from an_agent.cli import main
from an_agent.errors import ConfigError
from an_agent.lab.outcome import build_result
from an_agent.lab.report import render
from an_agent.lab.runner import Lab
from an_agent.lab.topology import load_topology

NAME = "cross-domain-fault.yaml"


def task(result: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(t for t in result["tasks"] if t["task_id"] == task_id)


def assigned(result: dict[str, Any], sender: str, receiver: str) -> list[dict[str, Any]]:
    return [
        m
        for m in result["messages"]
        if m["from"] == sender and m["to"] == receiver and m["commuType"] == "taskAssign" and m["ok"]
    ]


def field_check(result: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in result["outcome"]["checks"] if c["name"] == "field repairs guided by the FME copilots")


def assert_guided_field_repair(result: dict[str, Any], device: str, fault: str) -> dict[str, Any]:
    """Steps 6-8 for ``device``: ticket over NETCONF, questions, structured queries, engineer's repair."""
    assert result["outcome"]["closed_loop"], [c for c in result["outcome"]["checks"] if not c["ok"]]
    assert field_check(result)["ok"]
    roles = {a["name"]: a["role"] for a in result["agents"]}
    assert roles["fme-copilot"] == roles["network-copilot"] == "fme-copilot"
    # 6: the trouble ticket, structured, from the cross-domain agent to the service-layer copilot
    ticket = task(result, f"service-fault.ticket.{device}")
    assert ticket["agent"] == "fme-copilot" and ticket["status"] == "finished"
    assert ticket["payload"]["schema_id"] == "trouble_ticket_v1"
    payload = ticket["payload"]["payload"]
    assert (payload["device"], payload["fault"]) == (device, fault)
    assert payload["ticket_id"].startswith("TT-") and payload["deadline"] and payload["recommended_actions"]
    assert ticket["result"]["repaired"] is True
    # 7: the engineer asks in words (tasks without payload); 8: the copilots exchange structured queries
    questions = assigned(result, "fme", "fme-copilot")
    assert len(questions) == 4 and all(m["payload"] is None for m in questions)
    queries = assigned(result, "fme-copilot", "network-copilot")
    assert [m["task_id"].split(".")[1] for m in queries] == ["facts", "alarms", "guide", "status"]
    assert all(m["payload"]["schema_id"] == "trouble_ticket_v1" for m in queries)
    assert "fme" in result["external_clients"]
    guide = task(result, f"fme-copilot.guide.{device}")
    assert guide["agent"] == "network-copilot" and guide["result"]["steps"]
    # the dialogue is in the ticket's report, and the engineer made the repair
    dialogue = ticket["result"]["dialogue"]
    assert [d["question"].split()[0] for d in dialogue] == ["What", "Which", "How", "Is"]
    fault_row = result["outcome"]["faults"][0]
    assert (fault_row["target"], fault_row["repaired_by"], fault_row["repair_kind"]) == (device, "fme", "field")
    return guide["result"]


def test_fibre_cut_is_spliced_by_the_engineer_guided_by_the_copilots(state_dir: Path) -> None:
    result = run(TOPOLOGIES / NAME, state_dir)
    guide = assert_guided_field_repair(result, "LINK-C2", "fibre_cut")
    facts = task(result, "fme-copilot.facts.LINK-C2")["result"]["facts"]
    assert (facts["a"], facts["b"], len(facts["sites_behind"])) == ("CR-1", "AGG-2", 22)
    otdr = facts["otdr"]
    assert 0 < otdr["distance_km"] < otdr["span_km"]
    assert f"about {otdr['distance_km']} km from CR-1" in guide["steps"][1]["action"]
    assert [s["kind"] for s in guide["steps"]] == ["inspect", "inspect", "prepare", "repair", "verify"]
    alarms = task(result, "fme-copilot.alarms.LINK-C2")["result"]["alarms"]
    assert alarms[0]["element"] == "LINK-C2" and alarms[0]["kind"] == "link_down"
    status = task(result, "fme-copilot.status.LINK-C2")["result"]
    assert status["in_service"] is True and status["sites_down"] == []


def test_a_cut_elsewhere_gets_guidance_for_that_link(tmp_path: Path, state_dir: Path) -> None:
    path = variant(tmp_path, NAME, ("target: LINK-C2, repair_minutes: 120", "target: LINK-A3, repair_minutes: 120"))
    result = run(path, state_dir)
    guide = assert_guided_field_repair(result, "LINK-A3", "fibre_cut")
    facts = task(result, "fme-copilot.facts.LINK-A3")["result"]["facts"]
    assert (facts["a"], facts["b"], len(facts["sites_behind"])) == ("AGG-2", "ACC-3", 8)
    assert "from AGG-2" in guide["steps"][1]["action"]


def test_a_site_without_mains_gets_power_guidance(tmp_path: Path, state_dir: Path) -> None:
    path = variant(
        tmp_path,
        NAME,
        (
            "fault: {type: link_cut, target: LINK-C2, repair_minutes: 120}",
            "fault: {type: site_power_failure, target: SITE-14}",
        ),
    )
    result = run(path, state_dir)
    guide = assert_guided_field_repair(result, "SITE-14", "mains_power_lost")
    assert "mains" in guide["steps"][0]["action"] and len(guide["steps"]) == 3


def test_without_copilots_field_maintenance_takes_the_ticket(tmp_path: Path, state_dir: Path) -> None:
    path = variant(
        tmp_path,
        NAME,
        (
            "  service-fault: [{agent: ip-fault, transport: a2a}, ran-fault, fme-copilot]",
            "  service-fault: [{agent: ip-fault, transport: a2a}, ran-fault]",
        ),
    )
    result = run(path, state_dir)
    assert result["outcome"]["closed_loop"]
    assert result["outcome"]["faults"][0]["repaired_by"] == "field-maintenance"
    assert not assigned(result, "fme", "fme-copilot")


@pytest.mark.parametrize(
    ("question", "query"),
    [
        ("What do we know about LINK-C2?", Query.FACTS),
        ("Which alarms has SITE-07 raised, and since when?", Query.ALARMS),
        ("How do I fix it?", Query.GUIDE),
        ("Is LINK-C2 back in service?", Query.STATUS),
    ],
)
def test_questions_map_to_structured_queries(question: str, query: Query) -> None:
    assert classify(question) == query


def test_copilot_needs_a_layer_and_only_copilots_have_one(tmp_path: Path) -> None:
    path = variant(tmp_path, NAME, ("role: fme-copilot, layer: service,", "role: fme-copilot,"))
    with pytest.raises(ConfigError, match="needs a layer"):
        load_topology(path)
    path = variant(tmp_path, NAME, ("role: complaint,", "role: complaint, layer: service,"))
    with pytest.raises(ConfigError, match="layer is for fme-copilot agents"):
        load_topology(path)


@pytest.mark.slow
def test_a_person_asks_the_copilot_of_a_running_lab(
    tmp_path: Path, state_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = Lab(load_topology(TOPOLOGIES / NAME), state_dir, stall_timeout=30.0)
    clock = threading.Thread(target=lab.play, kwargs={"forever": True}, daemon=True)
    try:
        lab.start()
        lab.schedule_scenario()
        clock.start()
        address = f"127.0.0.1:{lab.agents['fme-copilot'].port}"
        assert main(["copilot", "ask", "--agent", address, "--json", "How do I repair LINK-C2, step by step?"]) == 0
        answer = json.loads(capsys.readouterr().out)
        assert answer["status"] == "finished" and answer["query"] == "guide" and answer["steps"]
        assert main(["copilot", "ask", "--agent", address, "Is LINK-A1 working?"]) == 0
        assert "LINK-A1 is back in service" in capsys.readouterr().out
        assert main(["copilot", "ask", "--agent", address, "is everything fine?"]) == 1
        assert "which device?" in capsys.readouterr().err
        assert main(["copilot", "ask", "--agent", "nowhere", "x"]) == 2
    finally:
        lab.stop()
        clock.join(10)


def test_report_shows_the_ticket_and_the_dialogue(state_dir: Path) -> None:
    with Lab(load_topology(TOPOLOGIES / NAME), state_dir, stall_timeout=30.0) as lab:
        lab.start()
        lab.schedule_scenario()
        lab.play()
        tasks = lab.read_tasks()
        lab.stop()
        html = render(build_result(lab, tasks, [], []))
    assert "Trouble tickets and the FME copilot dialogue" in html
    assert "How do I repair LINK-C2, step by step?" in html
    assert "fibre_cut" in html and "Fusion-splice" in html


def test_an_oss_ticket_agent_sends_field_repairs_through_the_copilots_of_its_domain(
    tmp_path: Path, state_dir: Path
) -> None:
    path = variant(
        tmp_path,
        "iov-complaint.yaml",
        (
            "fault: {type: cell_misconfiguration, target: CELL-1402, tilt_deg: 14, coverage_loss: 0.7}",
            "fault: {type: site_power_failure, target: SITE-13}",
        ),
        (
            "  - {name: tickets-south, role: trouble-ticket, regions: [south], port: 18858}\n",
            "  - {name: tickets-south, role: trouble-ticket, regions: [south], port: 18858}\n"
            "  - {name: copilot-south, role: fme-copilot, layer: service, regions: [south]}\n"
            "  - {name: network-south, role: fme-copilot, layer: resource, regions: [south]}\n",
        ),
        (
            "  tickets-south: [ran-south, ip-south]\n",
            "  tickets-south: [ran-south, ip-south, copilot-south]\n  copilot-south: [network-south]\n",
        ),
        ("  ran-south: [ip-south]\n", "  ran-south: [ip-south, copilot-south]\n"),
    )
    result = run(path, state_dir)
    assert result["outcome"]["closed_loop"], [c for c in result["outcome"]["checks"] if not c["ok"]]
    assert field_check(result)["ok"]
    # the RAN agent sees the outage first and opens the ticket; the OSS agent's ticket joins it
    first = task(result, "ran-south.ticket.SITE-13")
    assert first["agent"] == "copilot-south" and first["payload"]["payload"]["fault"] == "mains_power_lost"
    assert first["result"]["repaired"] is True
    joined = task(result, "tickets-south.ticket.SITE-13")
    assert joined["status"] == "finished" and joined["result"]["joined"] == first["payload"]["payload"]["ticket_id"]
    assert [m["task_id"].split(".")[1] for m in assigned(result, "copilot-south", "network-south")] == [
        "facts",
        "alarms",
        "guide",
        "status",
    ]
    fault = result["outcome"]["faults"][0]
    assert (fault["target"], fault["repaired_by"]) == ("SITE-13", "fme")
    bss = task(result, "bss.ticket.1")
    assert bss["status"] == "finished" and "field engineer" in bss["reason"]


def test_without_a_resource_copilot_the_engineer_repairs_unguided_and_the_check_says_so(
    tmp_path: Path, state_dir: Path
) -> None:
    path = variant(tmp_path, NAME, ("  fme-copilot: [network-copilot]\n", "  fme-copilot: []\n"))
    result = run(path, state_dir)
    fault = result["outcome"]["faults"][0]
    assert (fault["repaired_by"], fault["restored"] is not None) == ("fme", True)
    ticket = task(result, "service-fault.ticket.LINK-C2")
    assert ticket["status"] == "finished" and "without guidance" in ticket["reason"]
    failed = [c for c in result["outcome"]["checks"] if not c["ok"]]
    assert [c["name"] for c in failed] == ["field repairs guided by the FME copilots"]
    assert "no answer from the copilot" in failed[0]["detail"]


def test_two_field_faults_at_once_get_one_engineer_each(tmp_path: Path, state_dir: Path) -> None:
    path = variant(
        tmp_path,
        NAME,
        (
            "      fault: {type: link_cut, target: LINK-C2, repair_minutes: 120}\n",
            "      fault: {type: link_cut, target: LINK-C2, repair_minutes: 120}\n"
            "    - at_minutes: 6\n      fault: {type: site_power_failure, target: SITE-01}\n",
        ),
    )
    result = run(path, state_dir)
    assert result["outcome"]["closed_loop"], [c for c in result["outcome"]["checks"] if not c["ok"]]
    assert {(f["target"], f["repaired_by"]) for f in result["outcome"]["faults"]} == {
        ("LINK-C2", "fme"),
        ("SITE-01", "fme"),
    }
    # each engineer's task ends are notified once: the engineers share one client of the copilot
    ends = [m for m in result["messages"] if m["to"] == "fme" and m["operation"] == "notification"]
    assert len(ends) == len({(m["task_id"], m["summary"]) for m in ends})


def test_procedure_minutes_are_the_guided_steps_together() -> None:
    """`PROCEDURE_MINUTES` (the soak's bound on a field repair) is what `repair_steps` guides, per fault."""
    from an_agent.agents.guidance import PROCEDURE_MINUTES, TICKET_FAULT, repair_steps
    from an_agent.lab.network import SimNetwork
    from an_agent.lab.spec import FaultSpec, FaultType

    topology = load_topology(TOPOLOGIES / "cross-domain-fault.yaml")
    network = SimNetwork(topology.network, topology.seed, lambda: topology.start_time, lambda *_: None)
    targets = {"link_cut": "LINK-C2", "router_port_fault": "LINK-A1", "site_power_failure": "SITE-20"}
    targets |= {"site_software_fault": "SITE-23", "cell_misconfiguration": "CELL-0101"}
    guided = {}
    for kind, element in targets.items():
        network.inject(FaultSpec(FaultType(kind), element))
        steps = repair_steps(network, element, TICKET_FAULT[kind])["steps"]
        guided[TICKET_FAULT[kind]] = sum(s["minutes"] for s in steps)
    guided["unknown"] = sum(s["minutes"] for s in repair_steps(network, "SITE-20", "fibre_cut")["steps"])
    assert guided == PROCEDURE_MINUTES
