"""Value extraction and NL -> payload mapping (the mapping tests use the real model: slow)."""

from __future__ import annotations

from typing import Any

import pytest

from an_agent.clock import from_rfc3339
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.schemas.extract import (
    duration_minutes,
    find_clock_ranges,
    find_datetimes,
    find_ids,
    find_numbers,
    find_quantities,
)
from an_agent.schemas.mapping import map_text, split_clauses
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.validate import validate_payload

NOW = from_rfc3339("2026-10-05T10:00:00Z")
REGISTRY = TemplateRegistry.default()


def test_quantities_with_units() -> None:
    found = [(q.value, q.unit) for q in find_quantities("raise by 2 dB for two hours, 10% less, over 40 degrees")]
    assert found == [(2.0, "db"), (2.0, "hours"), (10.0, "percent"), (40.0, "degrees")]
    assert [duration_minutes(q) for q in find_quantities("for 45 minutes or a day")] == [45.0, 1440.0]
    assert find_quantities("2 sites and 3 hosts") == []


def test_identifiers_dates_ranges_numbers() -> None:
    assert [i.value for i in find_ids("CELL-0401, SITE-07 and ticket TT-88213; VIN-WVW123")] == [
        "CELL-0401",
        "SITE-07",
        "TT-88213",
        "VIN-WVW123",
    ]
    assert [d for d, _, _ in find_datetimes("since 2026-10-05 06:00 UTC, again tomorrow at 08:30", NOW)] == [
        "2026-10-05T06:00:00Z",
        "2026-10-06T08:30:00Z",
    ]
    assert find_datetimes("at 2026-10-05T08:00+02:00", NOW)[0][0] == "2026-10-05T06:00:00Z"
    assert [r for r, _, _ in find_clock_ranges("between 1:00 and 05:00 only")] == ["01:00-05:00"]
    assert [v for v, _, _ in find_numbers("about 40 cars on CELL-0401 at 10:30")] == [40.0]


def test_clauses() -> None:
    assert split_clauses(
        "Cells CELL-1 and CELL-2 are down, severity critical and the landlord must be told. Ticket TT-1: no signal"
    ) == [
        "Cells CELL-1 and CELL-2 are down",
        "severity critical",
        "the landlord must be told",
        "Ticket TT-1",
        "no signal",
    ]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder()
    embedder.load()
    return embedder


def mapped(minilm: MiniLMEmbedder, schema_id: str, text: str) -> dict[str, Any]:
    template = REGISTRY.get(schema_id)
    result = map_text(template, text, minilm, now=NOW)
    validate_payload(template, result.envelope)  # whatever it produces is a valid payload
    return result.payload


@pytest.mark.slow
def test_fault_request(minilm: MiniLMEmbedder) -> None:
    payload = mapped(
        minilm,
        "fault_diagnosis_v1",
        "The base station SITE-07 is down since 2026-10-05 06:00 UTC, cells CELL-0401 and CELL-0402 "
        "have no traffic, severity critical. Foreign SIM users cannot register",
    )
    assert payload == {
        "fault_type": "base_station_outage",
        "affected_site_ids": ["SITE-07"],
        "affected_cell_ids": ["CELL-0401", "CELL-0402"],
        "severity": "critical",
        "occurred_at": "2026-10-05T06:00:00Z",
        "other": "Foreign SIM users cannot register",
    }


@pytest.mark.slow
def test_coverage_request_splits_target_and_neighbour_cells_and_signs_deltas(minilm: MiniLMEmbedder) -> None:
    payload = mapped(
        minilm,
        "coverage_compensation_v1",
        "Cover the area of CELL-0301 using neighbours CELL-0302 and CELL-0303, lower the transmit power "
        "by 3 dB and uptilt 2 degrees for two hours. Many smart meters are on these cells",
    )
    assert payload == {
        "target_cell_ids": ["CELL-0301"],
        "neighbor_cell_ids": ["CELL-0302", "CELL-0303"],
        "tx_power_delta_db": -3,
        "antenna_tilt_delta_deg": -2,
        "duration_minutes": 120,
        "other": "Many smart meters are on these cells",
    }


@pytest.mark.slow
def test_energy_and_complaint_requests(minilm: MiniLMEmbedder) -> None:
    energy = mapped(
        minilm,
        "energy_saving_adjust_v1",
        "Switch energy saving off on CELL-0401 for 3 hours because neighbours are compensating an outage",
    )
    assert energy == {
        "cell_ids": ["CELL-0401"],
        "action": "suspend",
        "duration_minutes": 180,
        "reason": "coverage_compensation",
    }
    ticket = mapped(
        minilm, "complaint_ticket_v1", "Ticket TT-88213: calls drop in the tunnel, about 40 cars complained, urgent"
    )
    assert ticket["ticket_id"] == "TT-88213" and ticket["complaint_category"] == "call_drop"
    assert ticket["affected_vehicle_count"] == 40 and ticket["priority"] == "urgent"


@pytest.mark.slow
def test_unmappable_clauses_go_to_other(minilm: MiniLMEmbedder) -> None:
    template = REGISTRY.get("energy_saving_adjust_v1")
    result = map_text(
        template, "Reduce energy saving on CELL-0401; the landlord changed the gate code", minilm, now=NOW
    )
    assert result.payload["action"] == "reduce" and result.other == ["the landlord changed the gate code"]
    strict = map_text(template, "save less energy on CELL-0401", minilm, now=NOW, threshold=0.98)
    assert "action" not in strict.payload and strict.missing_required == ["action"]
    assert strict.other == []  # the clause gave the cell id with certainty, so it is not 'other'


def test_time_of_day_before_a_relative_day() -> None:
    assert [d for d, _, _ in find_datetimes("down since 06:00 UTC today", NOW)] == ["2026-10-05T06:00:00Z"]
    assert [d for d, _, _ in find_datetimes("back at 7:15 tomorrow", NOW)] == ["2026-10-06T07:15:00Z"]


@pytest.mark.slow
def test_values_named_by_their_words_and_sole_identifiers(minilm: MiniLMEmbedder) -> None:
    # Enumeration values whose words appear inflected or apart (not literally, not an example phrase).
    assert mapped(minilm, "trouble_ticket_v1", "Ticket TT-81: the port on LINK-A1 is faulty")["fault"] == "port_fault"
    slow = map_text(REGISTRY.get("complaint_ticket_v1"), "Data is very slow in the tunnel", minilm, now=NOW)
    assert slow.payload["complaint_category"] == "slow_data" and slow.missing_required == ["ticket_id"]
    failing = mapped(minilm, "fault_diagnosis_v1", "The microwave transmission link to SITE-03 keeps failing")
    assert failing["fault_type"] == "transmission_failure"
    # Alarm ids alone name no fault type: it stays missing (the task would ask for it).
    alarms = map_text(REGISTRY.get("fault_diagnosis_v1"), "please investigate alarms ALM-1 and ALM-2", minilm, now=NOW)
    assert alarms.missing_required == ["fault_type"] and alarms.payload["alarm_ids"] == ["ALM-1", "ALM-2"]
    # The required device takes the one site id, which the context gave to the sites.
    ticket = mapped(minilm, "trouble_ticket_v1", "Open ticket TT-5521 for SITE-07: the fibre is cut")
    assert ticket["device"] == "SITE-07" and ticket["site"] == ["SITE-07"] and ticket["fault"] == "fibre_cut"
    # Two ids that fit: the rule guesses neither.
    two = map_text(REGISTRY.get("trouble_ticket_v1"), "TT-9 for SITE-07 and SITE-08: fibre cut", minilm, now=NOW)
    assert "sole identifier" not in [a.how for a in two.assignments], two.assignments
