"""Topology files: the shipped ones load; bad ones get precise errors with the right line numbers."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml
from labsupport import SHIPPED, TOPOLOGIES, variant

from an_agent.errors import ConfigError
from an_agent.lab.generate import generate
from an_agent.lab.topology import load_topology, schema


def line_of(path: Path, needle: str, occurrence: int = 1) -> int:
    """1-based number of the line holding the ``occurrence``-th ``needle`` (the test's own oracle)."""
    seen = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"{needle!r} not in {path}")


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_topology(path)
    return str(info.value)


def test_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(schema())


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_topologies_load(name: str) -> None:
    topology = load_topology(TOPOLOGIES / name)
    assert topology.agents and topology.events
    assert all(topology.may_talk(a, b) for a, peers in topology.talks_to.items() for b in peers)


def test_the_shipped_set_covers_the_three_use_cases() -> None:
    assert {"cross-domain-fault.yaml", "fault-energy-optimization.yaml", "iov-complaint.yaml"} <= set(SHIPPED)
    big = load_topology(TOPOLOGIES / "cross-domain-fault.yaml")
    cut = big.events[0].fault
    assert cut is not None and cut.type == "link_cut"
    behind = [s for s in big.network.sites if cut.target in s.backhaul]
    assert len(behind) >= 20  # use case 2.1: a batch outage of 20+ sites behind the cut link


def test_unknown_key_points_at_its_line(tmp_path: Path) -> None:
    path = variant(tmp_path, "cross-domain-fault.yaml", ("port: 18832,", "prot: 18832,"))
    message = error_of(path)
    assert f"{path}:{line_of(path, 'prot: 18832')}: agents[1].prot: unknown key 'prot'" in message


def test_wrong_type_points_at_the_value(tmp_path: Path) -> None:
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        ("{id: SITE-02, region: metro, pos: [1, 0]", "{id: SITE-02, region: metro, pos: one"),
    )
    message = error_of(path)
    assert f"{path}:{line_of(path, 'SITE-02, region')}: network.sites[1].pos: 'one' is not of type 'array'" in message


def test_range_error_in_a_nested_value(tmp_path: Path) -> None:
    path = variant(tmp_path, "fault-energy-optimization.yaml", ("at_minutes: 10", "at_minutes: -10"))
    message = error_of(path)
    assert f"{path}:{line_of(path, 'at_minutes: -10')}: scenario.events[0].at_minutes: -10 is less than" in message


def test_every_dangling_reference_is_listed_with_its_line(tmp_path: Path) -> None:
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        (
            "{id: SITE-14, region: metro, pos: [5, 1], backhaul: [LINK-A3,",
            "{id: SITE-14, region: metro, pos: [5, 1], backhaul: [LINK-X9,",
        ),
        ("ip-fault: [service-fault]", "ip-fault: [service-desk]"),
    )
    message = error_of(path)
    assert "(2 problems)" in message
    assert f"{path}:{line_of(path, 'LINK-X9')}: network.sites[13].backhaul[0]: unknown link 'LINK-X9'" in message
    assert f"{path}:{line_of(path, 'service-desk')}: talks_to.ip-fault[0]: unknown agent 'service-desk'" in message


def test_fault_target_of_the_wrong_kind(tmp_path: Path) -> None:
    path = variant(tmp_path, "cross-domain-fault.yaml", ("target: LINK-C2", "target: SITE-09"))
    message = error_of(path)
    assert (
        f"{path}:{line_of(path, 'target: SITE-09')}: scenario.events[0].fault.target: link_cut needs a link as "
        "target; there is no link 'SITE-09'"
    ) in message


def test_ticket_to_an_agent_that_is_not_a_complaint_agent(tmp_path: Path) -> None:
    path = variant(tmp_path, "cross-domain-fault.yaml", ("        to: complaint", "        to: ran-fault"))
    message = error_of(path)
    assert (
        f"{path}:{line_of(path, 'to: ran-fault')}: scenario.events[1].ticket.to: tickets go to a complaint agent"
        in message
    )


def test_power_above_the_cell_limit(tmp_path: Path) -> None:
    path = variant(
        tmp_path, "fault-energy-optimization.yaml", ("{id: CELL-0701, power_dbm: 45}", "{id: CELL-0701, power_dbm: 48}")
    )
    message = error_of(path)
    assert (
        f"{path}:{line_of(path, 'CELL-0701')}: network.sites[6].cells[0]: CELL-0701: power_dbm 48 is above" in message
    )


def test_yaml_syntax_error_gives_line_and_column(tmp_path: Path) -> None:
    path = variant(tmp_path, "iov-complaint.yaml", ("seed: 23", "seed: [23"))
    message = error_of(path)
    assert message.startswith(f"{path}:")
    line = int(message.split(":")[1])
    assert line >= line_of(path, "seed: [23")
    assert "not valid YAML" in message


def test_duplicate_key_is_an_error(tmp_path: Path) -> None:
    path = variant(tmp_path, "iov-complaint.yaml", ("seed: 23\n", "seed: 23\nseed: 24\n"))
    assert error_of(path) == (
        f"{path}:{line_of(path, 'seed: 24')}: duplicate key 'seed' (first given on line {line_of(path, 'seed: 23')})"
    )


def test_missing_required_key_points_at_the_object(tmp_path: Path) -> None:
    path = variant(tmp_path, "iov-complaint.yaml", ("{id: LINK-S2, a: CR-S, b: ACC-S2}", "{id: LINK-S2, a: CR-S}"))
    message = error_of(path)
    assert f"{path}:{line_of(path, 'LINK-S2, a: CR-S}')}: network.links[3]: 'b' is a required property" in message


def test_generate_is_deterministic_and_valid(tmp_path: Path) -> None:
    text = generate(60, 3, seed=5)
    assert text == generate(60, 3, seed=5)
    assert text != generate(60, 3, seed=6)
    path = tmp_path / "g.yaml"
    path.write_text(text, encoding="utf-8")
    topology = load_topology(path)
    assert len(topology.network.sites) == 60
    assert sorted({s.region for s in topology.network.sites}) == ["east", "north", "south"]
    assert len([e for e in topology.events if e.fault]) == 3
    assert {a.role for a in topology.agents} == {
        "cross-domain-fault",
        "ran-fault",
        "ip-fault",
        "optimization",
        "energy-saving",
        "complaint",
    }
    assert yaml.safe_load(text)["format"] == "an-agent-lab/1"


def test_generate_refuses_impossible_sizes() -> None:
    with pytest.raises(ValueError):
        generate(2, 3)
