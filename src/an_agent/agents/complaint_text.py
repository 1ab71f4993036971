"""Natural-language trouble tickets -> complaint_ticket_v1 payloads, by rules and the network's gazetteer.

Deterministic and offline: cue phrases for the complaint category and priority, patterns for ticket
ids, vehicles and times, and the topology's place names and region aliases for boundary localisation.
Sentences that gave nothing go to ``other`` (the draft's escape valve), so no detail is lost.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from an_agent.agents.environment import Place

_CATEGORIES = (
    ("call_drop", ("call drop", "calls drop", "dropped call", "calls are dropped")),
    ("positioning_error", ("wrong position", "wrong location", "gps position")),
    (
        "intermittent_connectivity",
        (
            "coming and going",
            "intermittent",
            "on and off",
            "keeps dropping",
            "lose connectivity",
            "loses connectivity",
            "lost connectivity",
            "drops out",
        ),
    ),
    (
        "no_coverage",
        (
            "no signal",
            "no coverage",
            "no network",
            "lost the network",
            "lose the network",
            "without network",
            "no service",
            "cannot connect",
            "can't connect",
            "no connection",
        ),
    ),
    ("slow_data", ("slow", "take ages", "takes ages", "takes forever")),
    ("high_latency", ("latency", "lag ", "delayed")),
)
_PRIORITIES = (
    ("urgent", ("urgent", "as soon as possible", "asap", "immediately")),
    ("high", ("high priority", "important")),
    ("low", ("no hurry", "low priority", "when convenient")),
)
_CROSSING = ("crossing into", "crossed into", "after entering", "moved to another province", "entering the")
_TICKET = re.compile(r"\bTT-\d+\b")
_VIN = re.compile(r"\bVIN-[A-Z0-9]+\b")
_COUNT = re.compile(r"\b(\d[\d,]*)\s+(?:vehicles|cars|trucks|drivers|connected cars)\b", re.IGNORECASE)
_TIME = re.compile(r"\b(?:since|at|from)\s+([01]?\d|2[0-3]):([0-5]\d)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


@dataclass(frozen=True)
class ParsedTicket:
    payload: dict[str, Any]
    place: Place | None


def parse_ticket(
    text: str, places: list[Place], regions: dict[str, tuple[str, ...]], home: tuple[str, ...], now: float
) -> ParsedTicket:
    """Map ``text`` to a complaint_ticket_v1 payload.

    ``regions`` maps each region to its aliases; ``home`` are the regions of the agent parsing the ticket
    (a ticket about another region is cross-domain); ``now`` dates a bare ``since 17:30``.
    """
    lower = " " + " ".join(text.lower().split()) + " "
    payload: dict[str, Any] = {}
    used: list[tuple[int, int]] = []

    def hit(start: int, end: int) -> None:
        used.append((start, end))

    ticket = _TICKET.search(text)
    payload["ticket_id"] = ticket.group(0) if ticket else f"TT-{zlib.crc32(text.encode()) % 10**6:06d}"
    if ticket:
        hit(ticket.start(), ticket.end())
    payload["complaint_category"] = _first_cue(lower, _CATEGORIES, "unclassified")
    place = _place(lower, places)
    region = place.region if place else _region(lower, regions)
    if place is not None:
        payload["location"] = place.name
    if region is not None:
        payload["region"] = region
    crossing = any(cue in lower for cue in _CROSSING)
    payload["cross_domain"] = bool((region is not None and home and region not in home) or crossing)
    vins = _VIN.findall(text)
    if vins:
        payload["vehicle_ids"] = vins
    count = _COUNT.search(text)
    if count:
        payload["affected_vehicle_count"] = max(1, min(100000, int(count.group(1).replace(",", ""))))
    elif vins:
        payload["affected_vehicle_count"] = len(vins)
    when = _TIME.search(text)
    if when:
        day = datetime.fromtimestamp(now, tz=UTC)
        at = day.replace(hour=int(when.group(1)), minute=int(when.group(2)), second=0, microsecond=0)
        payload["occurred_at"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    payload["priority"] = _first_cue(lower, _PRIORITIES, "normal")
    leftovers = [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip() and not _informative(s, place, regions)]
    if leftovers:
        payload["other"] = leftovers
    return ParsedTicket(payload, place)


def _first_cue(lower: str, table: tuple[tuple[str, tuple[str, ...]], ...], default: str) -> str:
    best: tuple[int, str] | None = None
    for value, cues in table:
        for cue in cues:
            at = lower.find(cue)
            if at >= 0 and (best is None or at < best[0]):
                best = (at, value)
    return best[1] if best else default


def _place(lower: str, places: list[Place]) -> Place | None:
    best: tuple[int, Place] | None = None
    for place in places:
        for name in (place.name, *place.aliases):
            if name.lower() in lower and (best is None or len(name) > best[0]):
                best = (len(name), place)
    return best[1] if best else None


def _region(lower: str, regions: dict[str, tuple[str, ...]]) -> str | None:
    best: tuple[int, str] | None = None
    for region, aliases in sorted(regions.items()):
        for name in (region, *aliases):
            if f" {name.lower()}" in lower and (best is None or len(name) > best[0]):
                best = (len(name), region)
    return best[1] if best else None


def _informative(sentence: str, place: Place | None, regions: dict[str, tuple[str, ...]]) -> bool:
    lower = " " + sentence.lower() + " "
    if _TICKET.search(sentence) or _VIN.search(sentence) or _COUNT.search(sentence) or _TIME.search(sentence):
        return True
    if _first_cue(lower, _CATEGORIES, "") or _first_cue(lower, _PRIORITIES, ""):
        return True
    if place is not None and any(n.lower() in lower for n in (place.name, *place.aliases)):
        return True
    return _region(lower, regions) is not None or any(cue in lower for cue in _CROSSING)
