"""Natural-language trouble tickets -> complaint_ticket_v1, with boundary localisation by place names."""

from __future__ import annotations

from an_agent.agents import payloads
from an_agent.agents.complaint_text import parse_ticket
from an_agent.agents.environment import Place
from an_agent.clock import from_rfc3339

PLACES = [
    Place("A4 exit 12", "south", ("a4 near exit 12", "exit 12 of the a4"), ("SITE-13", "SITE-14")),
    Place("A4 exit 3", "north", ("a4 near exit 3", "exit 3 of the a4"), ("SITE-02",)),
]
REGIONS = {"north": ("northern province",), "south": ("southern province",)}
NOW = from_rfc3339("2025-06-03T17:41:00Z")


def test_iov_ticket_across_domains() -> None:
    text = (
        "Ticket TT-88213 from ACME Fleet: since 17:30 about 40 connected cars lose connectivity on the A4 near "
        "exit 12 after crossing into the southern province. Navigation updates take ages. Vehicles VIN-WVW123 "
        "and VIN-WVW456 are affected. The drivers were using the lane assistant at the time. Urgent."
    )
    parsed = parse_ticket(text, PLACES, REGIONS, ("north",), NOW)
    assert parsed.payload == {
        "ticket_id": "TT-88213",
        "complaint_category": "intermittent_connectivity",
        "location": "A4 exit 12",
        "region": "south",
        "cross_domain": True,
        "vehicle_ids": ["VIN-WVW123", "VIN-WVW456"],
        "affected_vehicle_count": 40,
        "occurred_at": "2025-06-03T17:30:00Z",
        "priority": "urgent",
        "other": ["The drivers were using the lane assistant at the time."],
    }
    assert parsed.place is PLACES[0]
    assert payloads.validate({"schema_id": "complaint_ticket_v1", "payload": parsed.payload}).values


def test_ticket_in_the_home_domain() -> None:
    parsed = parse_ticket(
        "No signal near exit 3 of the A4 since 09:10, calls drop too.", PLACES, REGIONS, ("north",), NOW
    )
    assert parsed.payload["location"] == "A4 exit 3"
    assert parsed.payload["region"] == "north" and parsed.payload["cross_domain"] is False
    assert parsed.payload["complaint_category"] == "no_coverage"  # the first complaint named wins
    assert parsed.payload["priority"] == "normal"
    assert parsed.payload["ticket_id"].startswith("TT-")  # none given: derived from the text, always the same
    assert (
        parsed.payload["ticket_id"]
        == parse_ticket(
            "No signal near exit 3 of the A4 since 09:10, calls drop too.", PLACES, REGIONS, ("north",), NOW
        ).payload["ticket_id"]
    )


def test_unknown_place_keeps_the_region_when_named() -> None:
    parsed = parse_ticket("Slow data somewhere in the southern province.", PLACES, REGIONS, ("north",), NOW)
    assert "location" not in parsed.payload and parsed.place is None
    assert parsed.payload["region"] == "south" and parsed.payload["cross_domain"] is True
    assert parsed.payload["complaint_category"] == "slow_data"


def test_nothing_recognised_goes_to_other() -> None:
    parsed = parse_ticket("Something is odd. Please call me back.", PLACES, REGIONS, ("north",), NOW)
    assert parsed.payload["complaint_category"] == "unclassified"
    assert parsed.payload["other"] == ["Something is odd.", "Please call me back."]
    assert payloads.validate({"schema_id": "complaint_ticket_v1", "payload": parsed.payload})
