"""Whether a cluster's idea is a value of a closed-set key, judged by what its requests chose for that key.

A request carries its ``other`` fragment next to the values it gave the template's keys. When the
fragments of one idea come with different values of a closed-set key ("we wait for a spare radio unit"
with ``fault_type`` base_station_outage in some requests and cell_degradation in others), the idea varies
apart from the key: it is another concept, not a new value of it, however close its words are. A new value
shows the opposite way: the requests could not say it, so they leave the key at a fallback ("unknown") or
at one nearest value ("slow_data" for a voice complaint) (`conflicts.find_conflict`).

A key without allowed values is judged the same way by whether the requests gave it at all: an optional
key the requests already filled in themselves (``alarm_ids`` set on every request whose ``other`` says "the
alarm cleared by itself") is not what their fragments restate; the fragments say something the key does
not hold (`given_apart`). A required key says nothing this way: every request must give it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from an_agent.schemas.template import KeyDef

# Values that say "none of the allowed values": a request that had to pick one for an idea the key lacks.
_FALLBACK_WORDS = frozenset({"unknown", "other", "others", "none", "unspecified", "undefined", "na", "tbd", "misc"})
CHOSEN_MIN_SHARE = 0.75  # share of the core's requests that must give the key a value of its own ...
CHOSEN_MAX_SHARE = 0.75  # ... none of them in more than this share ...
CHOSEN_MIN_VALUES = 2  # ... and this many values chosen twice or more: the idea varies apart from the key
# What a request's choices hold for an optional key without allowed values that it gave a value of its own
# (the value itself does not matter: that the request said it does).
GIVEN = "(given)"
GIVEN_MIN_SHARE = 0.75  # share of the core's requests that gave such a key: the fragments say another thing


def _fallback(key: KeyDef, value: str) -> bool:
    return value == key.default_value or set(value.lower().replace("-", "_").split("_")) <= _FALLBACK_WORDS


def varies_apart(key: KeyDef, choices: Sequence[Mapping[str, str]]) -> bool:
    """True when the requests of a cluster's fragments (``choices``: each request's closed-set values) chose
    several values of ``key`` (module docstring): the cluster's idea is no new value of that key.

    Unknown choices (fragments stored before choices were, or fed without a payload) decide nothing.
    """
    if not choices:
        return False
    chosen = Counter(v for c in choices if (v := c.get(key.key_name)) is not None and not _fallback(key, v))
    given = sum(chosen.values())
    if given < CHOSEN_MIN_SHARE * len(choices):
        return False
    recurring = [n for n in chosen.values() if n >= 2]
    return len(recurring) >= CHOSEN_MIN_VALUES and max(chosen.values()) <= CHOSEN_MAX_SHARE * given


def given_apart(key: KeyDef, choices: Sequence[Mapping[str, str]]) -> bool:
    """True when most requests of a cluster's fragments (``GIVEN_MIN_SHARE`` of ``choices``) gave the optional
    key ``key`` a value themselves (module docstring): their fragments are no restatement of that key.

    Required keys and keys with allowed values (`varies_apart`) are not judged here; unknown choices
    (fragments stored before choices were, or fed without a payload) decide nothing.
    """
    if not choices or key.required or key.constraints.enum:
        return False
    given = sum(1 for c in choices if c.get(key.key_name) == GIVEN)
    return given >= GIVEN_MIN_SHARE * len(choices)
