"""Issue 31, round 7: values as sheets and forms write them (money, lengths, counts, MIMO codes).

Amounts with a currency before or after them and numbers in groups of three the European and the
English way; a number said in words is a word apart from its unit ("AC" is no "a °C"); keys named by
what is measured, not by the unit.
"""

from __future__ import annotations

import json

import pytest
from bench.evolution_corpora import score
from test_evolution_synthesis import induce

from an_agent.evolution.boilerplate import content_text
from an_agent.evolution.codes import codes_in, find_codes
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.inference import infer_value
from an_agent.evolution.replay import replay
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.extract import UNIT_WORDS, find_counts, find_quantities
from an_agent.schemas.mapping import map_text, split_clauses
from an_agent.schemas.registry import TemplateRegistry
from conftest import DATA
from fake_embedder import FakeEmbedder


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("EUR 1.200,00", 1200.0, "eur"),
        ("1 200 \u20ac", 1200.0, "eur"),
        ("1\u00a0200 \u20ac", 1200.0, "eur"),  # a no-break space between the groups
        ("3.100 \u20ac", 3100.0, "eur"),
        ("975,50;EUR", 975.5, "eur"),
        ("USD 1,150.00", 1150.0, "usd"),
        ("we owe them $4,200", 4200.0, "usd"),
        ("around 3 000 euros", 3000.0, "eur"),
        ("\u20ac850", 850.0, "eur"),
        ("GBP 300", 300.0, "gbp"),
        ("\u00a3300", 300.0, "gbp"),
        ("1.5 EUR", 1.5, "eur"),  # one digit after the dot: a decimal
        ("Coffee machine | 2,50 EUR", 2.5, "eur"),
        ("Penalty owed ..........: EUR 525", 525.0, "eur"),
        ("Penalty (EUR): 1.200,00", 1200.0, "eur"),
        ("P\u00e9nalit\u00e9 SLA (\u20ac)\t1 200", 1200.0, "eur"),  # the currency in the label, a tab, the amount
        ("penalty = 850 EUR; clause = 4.2", 850.0, "eur"),
        ("fine of 2.450,50 \u20ac", 2450.5, "eur"),
        ("-1.200,00 EUR", -1200.0, "eur"),
    ],
)
def test_money_amounts_have_their_currency_as_unit(text: str, value: float, unit: str) -> None:
    found = find_quantities(text)
    assert [(q.value, q.unit) for q in found][:1] == [(value, unit)], found


@pytest.mark.parametrize(
    "text",
    [
        "clause 4.2 of the contract",
        "the price list, tab 2",
        "$ sign in the password",  # no amount after the symbol
        "EURO-2044 ticket",  # an id
        "EUR1200X",  # glued to a word
    ],
)
def test_what_is_no_amount_stays_none(text: str) -> None:
    assert [q for q in find_quantities(text) if q.unit in ("eur", "usd", "gbp")] == []


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("AC setpoint (\u00b0C) | 27", 27.0, "celsius"),
        ("Klima-Sollwert / AC set point ........: 26,5 \u00b0C", 26.5, "celsius"),
        ("an hour", 1.0, "hours"),  # a word number apart from its unit is still read
        ("a 1,150.5 km run", 1150.5, "km"),
        ("12.6 km from CO", 12.6, "km"),
        ("between 20 and 30 km/h", 30.0, "kmh"),
    ],
)
def test_a_number_in_words_glued_to_a_unit_letter_is_no_quantity(text: str, value: float, unit: str) -> None:
    found = find_quantities(text)
    assert [(q.value, q.unit) for q in found][:1] == [(value, unit)], found


def test_an_amount_is_no_count() -> None:
    assert find_counts("penalty EUR 1.200,00 for 3 sites") == [(3, 25, 26)]


def test_a_money_key_is_named_by_what_is_paid_and_takes_the_most_stated_currency() -> None:
    texts = [
        "SLA penalty: EUR 1.200,00",
        "SLA penalty 3.100 \u20ac",
        "SLA penalty of 3 000 euros",
        "SLA penalty | USD 1,150.00",
        "SLA penalty: \u20ac850",
    ]
    key = induce(texts, FakeEmbedder()).key
    assert key.key_type == "number" and key.constraints.unit == "eur", key
    assert key.key_name == "sla_penalty_eur", key.key_name
    # Currencies are not converted: the dollar amount has no value in the euro key.
    assert "'SLA penalty | USD 1,150.00' ->" not in key.semantic_description
    assert "Observed values: 850 to 3100." in key.semantic_description, key.semantic_description


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("distance to break ........: 1 870 m", 1870.0, "m"),
        ("Dist\u00e2ncia at\u00e9 ao corte: 850 metros", 850.0, "m"),
        ("the canteen is 300 meters away", 300.0, "m"),
        ("Distancia a la rotura (OTDR) = 0,65 km", 0.65, "km"),
        ("Distance to event (km): 4,37", 4.37, "km"),  # the unit in the label, in brackets
        ("| Break at | 12.6 km from CO |", 12.6, "km"),
        ("otdr_distance = 2.1 mi", 3.38, "km"),  # miles converted
        ("3.4 miles along the duct", 5.472, "km"),
        ("about 5600 ft from the cabinet", 1706.88, "m"),  # feet converted
        ("a 4 m tall mast", 4.0, "m"),  # a length all the same
        ("30 km/h on the site road", 30.0, "kmh"),  # a speed stays a speed
        ("gusts of 25 m/s", 90.0, "kmh"),
        ("1h30m of outage", 90.0, "minutes"),
    ],
)
def test_lengths_have_one_unit_of_two(text: str, value: float, unit: str) -> None:
    found = find_quantities(text)
    assert [(q.value, q.unit) for q in found][:1] == [(value, unit)], found


@pytest.mark.parametrize(
    "text",
    [
        "down for 5m",  # five minutes or five metres: as before, not read
        "2 M users on the cell",  # millions
        "5G on the mast",
        "a 12 m2 shelter",  # an area
        "SLA clause | Penalty (EUR)\n7.3 | 1.200,00",  # the header's unit is not the next line's first cell
        "SLA clause | Penalty (EUR) 7.3 | 1.200,00",  # ... nor when the lines run together
    ],
)
def test_what_is_no_length_stays_none(text: str) -> None:
    assert [q for q in find_quantities(text) if q.unit in ("m", "km", "eur")] == []


def test_a_distance_key_takes_the_unit_most_fragments_state_and_is_named_by_the_distance() -> None:
    texts = [
        "distance to the break 1 870 m",
        "distance to the break: 850 metres",
        "distance to the break 3 420 m",
        "distance to the break about 0,65 km",
        "distance to the break 5600 ft",
    ]
    spec = infer_value(texts, FakeEmbedder(), now=0.0, stop_words=STOP_WORDS)
    assert (spec.key_type, spec.unit) == ("number", "m") and spec.values == (1870, 850, 3420, 650, 1706.88), spec
    key = induce(texts, FakeEmbedder()).key
    assert key.key_type == "number" and key.constraints.unit == "m", key
    assert key.key_name == "break_distance_m", key.key_name


def test_kilometres_stated_most_make_a_key_in_km() -> None:
    texts = ["break at 12.6 km", "break at 0,65 km", "break at 2.1 mi", "break at 850 m"]
    spec = infer_value(texts, FakeEmbedder(), now=0.0, stop_words=STOP_WORDS)
    assert spec.unit == "km" and spec.values == (12.6, 0.65, 3.38, 0.85), spec


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Calls to hotline (last 24h) | 1.240", 1240),  # a dot between groups of three
        ("Hotline,Calls\nBerlin,1 045", 1045),  # a CSV cell after a word
        ("| Hotline calls | ~2,300 |", 2300),
        ("hotline_calls = approx. 1.2k; trend = rising", 1200),
        ("more than two thousand calls on this topic", 2000),
        ("about three hundred calls since the morning", 300),
        ("a thousand and fifty calls", 1050),
        ("twenty five thousand users", 25000),
        ("Ve\u00edculos afetados: 1.150", 1150),
    ],
)
def test_counts_in_sheet_spellings(text: str, value: int) -> None:
    assert [c[0] for c in find_counts(text)][:1] == [value], find_counts(text)


@pytest.mark.parametrize(
    "text",
    [
        "one of the sites",  # small numbers in words are left to the words around them
        "version 1.2 of the app",
        "IP 10.100.200.1",
        "on 01.03.2027",
        "1,5 calls",  # a decimal comma is no count
        "a hundred percent sure",  # a quantity
        "CELL-0433",
    ],
)
def test_what_is_no_count_stays_none(text: str) -> None:
    assert find_counts(text) == []


def test_a_count_key_keeps_a_phrase_that_says_what_is_counted() -> None:
    texts = [
        "hotline calls: 1.240",
        "hotline calls ~2,300",
        "hotline calls = approx. 1.2k",
        "hotline calls: more than two thousand",
        "hotline calls 1 045 today",
    ]
    key = induce(texts, FakeEmbedder()).key
    assert key.key_type == "integer", key
    assert key.key_name == "hotline_call_count", key.key_name


@pytest.mark.parametrize(
    ("text", "codes"),
    [
        ("Modo MIMO: 4T4R", {"4T4R"}),
        ("cell;mimo\nCELL-0433;2t2r", {"2T2R"}),  # any case, in the family's capitals
        ("drop the cells from 4T4R to 2T2R", {"4T4R", "2T2R"}),
        ("| MIMO config | 1T1R |", {"1T1R"}),
        ("MIMO 8t8r", {"8T8R"}),
    ],
)
def test_antenna_branch_codes_are_codes(text: str, codes: set[str]) -> None:
    assert codes_in(text) >= codes and not {c for c in codes_in(text) if "T" in c and c not in codes}


@pytest.mark.parametrize("text", ["site SITE-2T2R3 is down", "release 4T4R.1", "code 12T4RX", "2x2 MIMO"])
def test_what_is_no_antenna_code_stays_none(text: str) -> None:
    assert not {c for c in codes_in(text) if len(c) >= 4 and c[1] in "TtRr"}


def test_antenna_codes_are_a_set_named_by_their_frame_and_head_not_by_an_id() -> None:
    texts = [
        "Modo MIMO: 4T4R",
        "Modo MIMO objetivo = 8T8R",
        "cell;mimo\nCELL-0433;2t2r",
        "mimo = 2T2R; hours = 01-05",
        "Cell | MIMO mode (night)\nCELL-0412 | 2T2R",
        "MIMO-Modus / MIMO mode ........: 1T1R",
        "| MIMO config | 1T1R |",
        "MIMO mode for the night: 2T2R",
    ]
    found = find_codes(texts, STOP_WORDS)
    assert found is not None and found.enum == ("1T1R", "2T2R", "4T4R", "8T8R"), found
    assert found.frame == "mimo", found  # "CELL-0412" before a code is an id, not its frame word
    key = induce(texts, FakeEmbedder()).key
    assert key.key_name == "mimo_mode" and key.constraints.enum == ("1T1R", "2T2R", "4T4R", "8T8R"), key


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("Ponto de ajuste do ar condicionado = 26 graus", 26.0, "degrees"),
        ("consigna: 24 grados", 24.0, "degrees"),
        ("Consigne clim (deg C)\t28", 28.0, "celsius"),  # the unit only in the label
        ("Setpoint (\u00b0C): 26,5", 26.5, "celsius"),
    ],
)
def test_temperatures_in_labels_and_other_languages(text: str, value: float, unit: str) -> None:
    found = find_quantities(text)
    assert [(q.value, q.unit) for q in found][:1] == [(value, unit)], found


def test_a_name_says_its_head_word_once() -> None:
    texts = [
        "Auslastung Backhaul / backhaul utilisation: 78,5 %",
        "Auslastung Backhaul / backhaul utilisation: 64 %",
        "Auslastung Backhaul / backhaul utilisation: 91 %",
        "Auslastung Backhaul / backhaul utilisation: 88 %",
    ]
    key = induce(texts, FakeEmbedder()).key
    assert key.constraints.unit == "percent", key
    words = key.key_name.split("_")
    assert len(words) == len(set(words)) and "backhaul" in words, key.key_name


def test_a_money_key_of_a_patched_template_maps_amounts_in_its_currency() -> None:
    texts = [
        "SLA penalty: EUR 1.200,00",
        "SLA penalty 3.100 \u20ac",
        "SLA penalty of 3 000 euros",
        "SLA penalty \u20ac850",
    ]
    key = induce(texts, FakeEmbedder()).key
    template = TemplateRegistry.default().get("complaint_ticket_v1").with_keys([key])
    result = map_text(template, "the SLA penalty is EUR 2.450,50", FakeEmbedder(), now=1_790_000_000.0)
    assert result.payload.get("sla_penalty_eur") == 2450.5, result.payload


@pytest.mark.parametrize(
    ("text", "clauses"),
    [
        ("gain 1.5 dB please", ["gain 1.5 dB please"]),
        ("penalty EUR 2.450,50. Next week", ["penalty EUR 2.450,50", "Next week"]),
        ("raise it by 2. then stop", ["raise it by 2", "then stop"]),
    ],
)
def test_a_dot_between_digits_ends_no_clause(text: str, clauses: list[str]) -> None:
    assert split_clauses(text) == clauses


def test_meter_is_a_length_after_a_number_and_a_device_in_a_name() -> None:
    assert [(q.value, q.unit) for q in find_quantities("the cut is 850 meters out")] == [(850.0, "m")]
    # "smart meter", "clamp meter": a word that names things, kept in phrases of numeric keys' names
    assert "meter" not in UNIT_WORDS and "metres" in UNIT_WORDS


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("otdr_km: 7,9", 7.9, "km"),  # a unit ending a field's snake_case name labels the number
        ("bh_util_pct = 91", 91.0, "percent"),
        ("speed_kmh: 50", 50.0, "kmh"),
        ("BH utilisation %: 69,4", 69.4, "percent"),  # a per cent sign before a colon
        ("Setpoint degC: 27", 27.0, "celsius"),
    ],
)
def test_units_in_field_names_label_their_value(text: str, value: float, unit: str) -> None:
    assert [(q.value, q.unit) for q in find_quantities(text)] == [(value, unit)]


@pytest.mark.parametrize("text", ["file_s: 3", "CELL_C: 2", "link_m: 40", "load %, 3 sites", "site_5G: 3"])
def test_one_letter_after_an_underscore_labels_nothing(text: str) -> None:
    assert find_quantities(text) == []


@pytest.mark.slow
def test_held_out_sheet_corpus(minilm: MiniLMEmbedder) -> None:
    """Written before round 7 and recorded then (6 of 9 pure, 3 fully right): money, counts and antenna
    branch codes are read, a pasted table and a form are compared as labelled fields, no template key absorbs a new
    concept, and the restating vehicle count modifies its key."""
    path = DATA / "heldout_sheet_corpus.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    report = replay(lines, minilm).to_dict()
    result = score(report, [json.loads(line)["label"] for line in lines], path.stem)
    assert not result.spurious and len(result.pure) >= 7, result
    assert {"cluster:sla_penalty", "cluster:hotline_calls", "cluster:mimo_mode", "cluster:config_change"} <= set(
        result.pure
    )
    described = {k["key_name"]: k["semantic_description"] for p in report["patches"] for k in p["new_keys"]}
    assert "Unit: eur." in described["sla_penalty_eur"]
    assert "Acceptable values: 1T1R, 2T2R, 4T4R, 8T8R." in described["mimo_mode"]
    assert "Format: date-time." in described["last_config_at"]  # occurred_at is not modified
    kinds = {k["key_name"]: k["key_type"] for p in report["patches"] for k in p["new_keys"]}
    assert kinds["hotline_call_count"] == "integer" and kinds["leased_line"] == "boolean"
    assert [k["key_name"] for p in report["patches"] for k in p["modified_keys"]] == ["affected_vehicle_count"]
    # Round 8: a cluster that restates the distance key joins its patch with the lines that state a length
    # only; the road-permit lines, the taxi fare and the speed limit of its cluster stay out (was 53 %).
    labels = [json.loads(line)["label"] for line in lines]
    clusters = {c["cluster_id"]: c["members"] for c in report["clusters"]}
    [distance] = [p for p in report["patches"] if p["new_keys"] and "distance" in p["new_keys"][0]["key_name"]]
    members = clusters[distance["cluster_id"]]
    others = [str(json.loads(line)["payload"].get("other", "")) for line in lines]
    assert not any(labels[m] == "weak:road_permit" for m in members)
    assert not any("EUR" in others[m] or "km/h" in others[m] for m in members)
    assert "cluster:break_distance" in result.pure or result.not_pure["cluster:break_distance"][0] >= 0.8


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("bh_util = 91 pct; peak = 20:00", "bh_util = 91 pct; peak = 20:00"),  # a form: was "peak = 20:00"
        ("mimo = 2T2R; hours = 01-05", "mimo = 2T2R; hours = 01-05"),
        ("last_change = 3/2/27 7:15 AM; by = NetOps", "last_change = 3/2/27 7:15 AM; by = NetOps"),
        # An export's row before a person's comment still goes, its comment label with it.
        ("AlarmId=64273;NE=RBS-4063;Text=Sync Loss;Note=heavy rain, 35 mm/h", "heavy rain, 35 mm/h"),
        ("AlarmId=94437;NE=RBS-3526;Text=Link Degraded;Note=ack'd 11:02Z", "ack'd 11:02Z"),
        ("ALM 40213 LINK_DEGRADED ne=RBS-4411 sev=MJ | opr: door left open", "door left open"),
        ("TX-ALM 18207 HIGH_TEMPERATURE hop=MW-505 | note: QCI: 8", "QCI: 8"),
    ],
)
def test_a_form_of_labelled_fields_is_no_machine_row(text: str, content: str) -> None:
    assert content_text(text) == content
