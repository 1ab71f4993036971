"""Issue 31: short-code enumerations, compound and spelled-out units normalised to one unit per key,
realistic value spellings, and the review gate judging what a key means. The held-out corpora
`heldout_noc_corpus.jsonl` and `heldout_mail_corpus.jsonl` end to end (tests/evolution/data/README.md).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from an_agent.evolution.codes import code_phrase, find_codes, named_as_labels
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.inference import infer_value
from an_agent.evolution.moments import find_moment
from an_agent.evolution.replay import replay
from an_agent.evolution.review import security_reasons
from an_agent.evolution.synthesis import SECURITY_TERMS
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.extract import find_datetimes, find_ids, find_quantities
from an_agent.schemas.template import KeyDef
from an_agent.schemas.values import parse_constraints
from conftest import DATA, FakeEmbedder

NOW = datetime(2027, 1, 15, 12, 0, tzinfo=UTC).timestamp()

GENERATIONS = [
    "impacted RAT: 4G",
    "only the 5G layer is down",
    "4G cells dark, 2G/3G ok",
    "3G carrier affected, rest fine",
    "tech: 2G",
    "technology = 4G",
    "problem on 5G only",
]
PRIORITIES = ["CAB prio P2", "priority P1, do now", "P3 - can wait", "change prio: P2", "prio P1", "priority P3"]
CLASSES = ["site class: B", "Class C site, rural.", "class A hub site", "site class = C", "Class B", "class-A location"]


def test_codes_of_one_shape_are_a_closed_set_in_natural_order() -> None:
    codes = find_codes(GENERATIONS, STOP_WORDS)
    assert codes is not None and codes.enum == ("2G", "3G", "4G", "5G")
    # Each fragment's value is the first code it names ("4G cells dark, 2G/3G ok" -> 4G).
    assert codes.values[2] == "4G" and codes.values[0] == "4G" and codes.values[4] == "2G"
    priorities = find_codes(PRIORITIES, STOP_WORDS)
    assert priorities is not None and priorities.enum == ("P1", "P2", "P3") and priorities.frame == "priority"
    classes = find_codes(CLASSES, STOP_WORDS)
    assert classes is not None and classes.enum == ("A", "B", "C") and classes.frame == "class"
    assert code_phrase(CLASSES, "class", STOP_WORDS) == "site class"  # "site class" in two fragments
    assert code_phrase(PRIORITIES, "priority", STOP_WORDS) == "priority"


def test_what_is_no_code_set() -> None:
    # Units and ordinals after a number, ids, a code in every line (the topic), codes said once each.
    assert find_codes(["drive 2h", "45min walk", "the 3rd visit", "2h again", "wait 1h"], STOP_WORDS) is None
    assert find_codes(["CELL-0401 down", "CELL-0402 down", "CELL-0403", "CELL-0404 too"], STOP_WORDS) is None
    assert find_codes(["5G launch", "the 5G party", "5G event", "5G again"], STOP_WORDS) is None
    assert find_codes(["a Galaxy S23", "Pixel 8 pro", "iPhone 15", "Nokia G42", "Moto g54"], STOP_WORDS) is None
    # "A" opening a sentence is an article, not a class.
    assert find_codes(["A fault again", "A site down", "A cell", "A link", "A node"], STOP_WORDS) is None


def test_codes_make_an_enumeration_key_before_any_word_rule() -> None:
    spec = infer_value(CLASSES, FakeEmbedder(), now=NOW, stop_words=STOP_WORDS)
    assert spec.key_type == "string" and spec.enum == ("A", "B", "C")
    assert parse_constraints(" ".join(spec.phrases)).enum == ("A", "B", "C")
    assert spec.info["frame"] == "class"


def test_tiers_written_as_labels() -> None:
    tiers = ["the Gold package", "tier: Silver", "on the Platinum plan", "a Bronze contract", "level = Gold"]
    assert named_as_labels(["gold", "silver", "platinum", "bronze"], tiers)
    # Wordings of one idea are not written as names inside sentences; acronyms are no evidence.
    assert not named_as_labels(["sms", "text", "phone"], ["send an SMS", "a text message", "phone him", "by SMS"])


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("drops at 120 km/h on the motorway", 120.0, "kmh"),
        ("speed at the time: 90 kmh", 90.0, "kmh"),
        ("happens above 100 kph", 100.0, "kmh"),
        ("they were going 110 kilometres per hour", 110.0, "kmh"),
        ("car doing approx 75 mph", 120.701, "kmh"),
        ("60 miles per hour on the interstate", 96.561, "kmh"),
        ("backhaul down to 300 Mbit/s", 300.0, "mbps"),
        ("only 800 kbps left", 0.8, "mbps"),
        ("backhaul at 500 kbit/s only", 0.5, "mbps"),
        ("capacity: 2.5 Gbps", 2500.0, "mbps"),
        ("transport capacity 1.2 Gbit/s", 1200.0, "mbps"),
        ("Site consumption: 52.5 kWh/day", 52.5, "kwh"),
        ("The meter shows 44 kilowatt hours", 44.0, "kwh"),
        ("We measured 1.1 MWh for the month", 1100.0, "kwh"),
        ("ambient 41°C", 41.0, "celsius"),
        ("temp outside: 36 deg C", 36.0, "celsius"),
        ("ambient air 39° C", 39.0, "celsius"),
        ("Ambient temperature | 37 C", 37.0, "celsius"),
        ("39 degrees Celsius in the shade", 39.0, "celsius"),
        ("outdoor temp 102 °F", 38.9, "celsius"),
        ("uptilt 2 degrees", 2.0, "degrees"),  # degrees alone stay an angle or a temperature
        ("drive to site 1h30", 90.0, "minutes"),
        ("journey to site: 2h10", 130.0, "minutes"),
        ("fans measured at 3300 r/min", 3300.0, "rpm"),
        # The unit in an exported field's label, the number after it; "2,800" is two thousand eight hundred.
        ("Fan RPM: 2,800", 2800.0, "rpm"),
        ("Fan speed (rpm): 6000", 6000.0, "rpm"),
        ("wind,km/h,85", 85.0, "kmh"),
        ("kWh per day: 50", 50.0, "kwh"),
        ("Packet loss (avg): 9,5 %", 9.5, "percent"),
    ],
)
def test_units_in_every_spelling_have_one_canonical_unit(text: str, value: float, unit: str) -> None:
    found = find_quantities(text)
    assert [(q.value, q.unit) for q in found][:1] == [(value, unit)], found


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("winds 20-30 km/h, ok for now", 30.0, "kmh"),
        ("between 20 and 30 km/h", 30.0, "kmh"),
        ("from 5 to 10 Mbps", 10.0, "mbps"),
        ("between -105 and -110 dBm", -105.0, "dbm"),  # the upper bound, whichever order it is said in
        ("-110 to -105 dBm at the edge", -105.0, "dbm"),
        ("85-90F in the shelter", 32.2, "celsius"),  # the bound in the spelled unit, then converted
    ],
)
def test_a_range_of_one_unit_is_its_upper_bound(text: str, value: float, unit: str) -> None:
    assert [(q.value, q.unit) for q in find_quantities(text)] == [(value, unit)]


def test_a_lower_case_c_after_a_number_is_no_celsius() -> None:
    assert find_quantities("3 c") == []


def test_a_word_before_a_colon_is_no_unit_label() -> None:
    assert find_quantities("site class C, 3 cells") == []  # one letter: no label
    assert find_quantities("per day: 50") == []  # time units are not said as labels of a number


def test_realistic_spellings_of_moments_and_ids() -> None:
    assert find_datetimes("restored 2027-01-15 at 15:00 UTC", NOW)[0][0] == "2027-01-15T15:00:00Z"
    assert find_datetimes("access from tomorrow 08:00", NOW)[0][0] == "2027-01-16T08:00:00Z"
    assert find_moment("traffic recovered 11:05", NOW) == "2027-01-16T11:05:00Z"  # its next occurrence
    assert find_moment("fault onset 04:30 UTC", NOW) == "2027-01-16T04:30:00Z"
    assert find_moment("between 01:00 and 05:00", NOW) is None  # a range
    ids = find_ids("related: INC4303720, INC4303721 - same root? also CELL-0401")
    assert [(i.prefix, i.value, i.dash) for i in ids] == [
        ("INC", "INC4303720", False),
        ("INC", "INC4303721", False),
        ("CELL", "CELL-0401", True),
    ]
    assert find_ids("TT 12345 and LTE1800") == []  # a space, or fewer than five digits: no id


def test_ids_without_a_dash_keep_their_shape() -> None:
    texts = ["see also INC4303755", "dup of INC4302981", "linked incidents INC4303102 INC4303103", "ref INC4303600"]
    spec = infer_value(texts, FakeEmbedder(), now=NOW, stop_words=STOP_WORDS)
    assert spec.key_type == "array" and spec.phrases == ("Item format: INC<digits>.",)
    assert spec.values[2] == ["INC4303102", "INC4303103"]


def _key(name: str, description: str, key_type: Any = "string") -> KeyDef:
    return KeyDef.build(name, key_type, description, required=False, default_value=None, experimental=True)


def test_the_review_gate_judges_what_a_key_means() -> None:
    # A word of the list in one example, out of context, is no verdict (issue 31: "same root?").
    incidents = _key(
        "related_incident_inc_ids",
        "Related incident (also phrased as: linked), as a list of identifiers. Item format: INC<digits>. "
        "Example mapping: 'related: INC4303720, INC4303721 - same root?' -> ['INC4303720', 'INC4303721']; "
        "'see also INC4303755' -> ['INC4303755']; 'dup of INC4302981' -> ['INC4302981'].",
        "array",
    )
    assert security_reasons(incidents, SECURITY_TERMS) == ()
    moment = _key(
        "restored_time",
        "Restored, as an RFC 3339 date and time (UTC). Format: date-time. Example mapping: "
        "'service restored around 16:00' -> '2027-01-15T16:00:00Z'.",
    )
    assert security_reasons(moment, SECURITY_TERMS) == ()  # a time is no IPv6 address
    v6 = _key("mgmt_address", "Management address. Example mapping: 'reach it on fe80::1' -> 'fe80::1'.")
    assert security_reasons(v6, SECURITY_TERMS)
    segments = _key(
        "customer_type",
        "Customer type (also phrased as: taxi company, rental vehicle, fleet account): the one the request names. "
        "Acceptable values: fleet, rental, taxi. Example mapping: 'a fleet customer' -> 'fleet'; 'a taxi' -> 'taxi'.",
    )
    assert security_reasons(segments, SECURITY_TERMS) == ()  # one phrasing says "account"
    # A key whose name or meaning says credentials, or whose values are addresses or commands, is held.
    password = _key("router_password", "The router password the request names. Example mapping: 'pw is x' -> 'x'.")
    assert security_reasons(password, SECURITY_TERMS)
    address = _key(
        "syslog_target",
        "Syslog target (also phrased as: send logs to). Example mapping: 'send logs to 10.1.2.3' -> '10.1.2.3'; "
        "'logs to 10.1.2.4 please' -> '10.1.2.4'.",
    )
    assert any("IP address" in r for r in security_reasons(address, SECURITY_TERMS))
    command = _key("fix_step", "Fix step. Example mapping: 'run sudo reboot now' -> 'sudo reboot'.")
    assert any("command" in r for r in security_reasons(command, SECURITY_TERMS))
    # Most examples speaking of logins: the fragments say it again and again.
    logins = _key(
        "vendor_access",
        "Vendor access. Example mapping: 'the vendor needs a login' -> true; 'give them a login for the node' -> true; "
        "'remote login for the vendor' -> true.",
        "boolean",
    )
    assert security_reasons(logins, SECURITY_TERMS)


def _patches(corpus: str, embedder: MiniLMEmbedder) -> dict[str, dict[str, Any]]:
    """Each patch of a replay of ``corpus`` by its cluster's majority label; no label has two, and no weak
    intent or one-off has one (an intent may have none: `patches_by_label` insists on one each)."""
    lines = (DATA / corpus).read_text().splitlines()
    labels = [json.loads(line)["label"] for line in lines]
    report = replay(lines, embedder).to_dict()
    members = {c["cluster_id"]: c["members"] for c in report["clusters"]}
    out: dict[str, dict[str, Any]] = {}
    for patch in report["patches"]:
        label = Counter(labels[m] for m in members[patch["cluster_id"]]).most_common(1)[0][0]
        assert label.startswith(("cluster:", "conflict:")) and label not in out, (label, patch["patch_id"])
        out[label] = patch
    return out


@pytest.mark.slow
def test_held_out_noc_corpus_codes_units_and_ids(minilm: MiniLMEmbedder) -> None:
    got = _patches("heldout_noc_corpus.jsonl", minilm)
    keys = {lab: patch["new_keys"] + patch["modified_keys"] for lab, patch in got.items()}
    generation = keys["cluster:radio_generation"][0]
    assert (
        generation["key_type"] == "string"
        and "Acceptable values: 2G, 3G, 4G, 5G." in generation["semantic_description"]
    )
    priority = keys["cluster:change_priority"][0]
    assert (
        "priority" in priority["key_name"] and "Acceptable values: P1, P2, P3, P4." in priority["semantic_description"]
    )
    speed = keys["cluster:vehicle_speed"][0]
    assert speed["key_name"].endswith("_kmh") and "mph" not in speed["key_name"]
    assert "Unit: kmh." in speed["semantic_description"]
    capacity = keys["cluster:backhaul_capacity"][0]
    assert capacity["key_type"] == "number" and "Unit: mbps." in capacity["semantic_description"]
    incidents = keys["cluster:related_incidents"][0]
    assert incidents["key_type"] == "array" and "Item format: INC<digits>." in incidents["semantic_description"]
    assert got["cluster:related_incidents"]["state"] == "active"  # not held for "same root?"
    travel = keys["cluster:travel_time"][0]
    assert "Format: duration." in travel["semantic_description"]
    # The restoration moments are a key of their own, never a modification of occurred_at.
    restored = got["cluster:restore_time"]
    assert not restored["modified_keys"] and "Format: date-time." in restored["new_keys"][0]["semantic_description"]


@pytest.mark.slow
def test_held_out_mail_corpus_tiers_classes_and_units(minilm: MiniLMEmbedder) -> None:
    got = _patches("heldout_mail_corpus.jsonl", minilm)
    keys = {lab: patch["new_keys"] + patch["modified_keys"] for lab, patch in got.items()}
    tier = got["cluster:customer_tier"]
    assert tier["state"] == "active"  # "Gold account" is no credential
    assert tier["new_keys"][0]["key_name"] == "customer_tier"  # "tier: Silver", "Bronze tier"; "Silver customer"
    assert parse_constraints(tier["new_keys"][0]["semantic_description"]).enum == (
        "gold",
        "bronze",
        "silver",
        "platinum",
    )
    site_class = keys["cluster:site_class"][0]
    assert (
        site_class["key_name"] == "site_class" and "Acceptable values: A, B, C." in site_class["semantic_description"]
    )
    energy = keys["cluster:energy_consumption"][0]
    assert energy["key_name"].endswith("_kwh") and "Unit: kwh." in energy["semantic_description"]
    temperature = keys["cluster:ambient_temperature"][0]
    assert temperature["key_name"].endswith("_celsius") and "Unit: celsius." in temperature["semantic_description"]
    speed = keys["cluster:download_speed"][0]
    assert "Unit: mbps." in speed["semantic_description"]
    access = got["cluster:access_from"]
    assert not access["modified_keys"], access  # a new time concept, not the deadline
    assert "'access from tomorrow 08:00' -> '2027-02-03T08:00:00Z'" in access["new_keys"][0]["semantic_description"]
    assert got["conflict:deadline"]["modified_keys"][0]["key_name"] == "deadline"
