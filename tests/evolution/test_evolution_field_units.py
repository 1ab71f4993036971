"""Issue 31 round 8: quantities per a length or an area that are units of their own (an EMF field
strength in V/m, a solar irradiance in W/m²) are read whole, never as their first part (volt, kW), with
their other spellings converted; a key of one is named with it and maps it."""

from __future__ import annotations

import pytest
from test_evolution_synthesis import induce

from an_agent.schemas.extract import find_quantities
from an_agent.schemas.mapping import map_text
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.sanitize import sanitize_other
from fake_embedder import FakeEmbedder


def _clean(text: str) -> str:
    [clean] = sanitize_other(text, 500, 1).fragments  # as `other` is read: NFKC, so m² and ㎡ are m2
    return clean


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("field strength at the balcony 1,9 V/m", [(1.9, "v_per_m")]),
        ("3,1 volts per metre measured", [(3.1, "v_per_m")]),
        ("4.6 volt per meter near the school", [(4.6, "v_per_m")]),
        ("E-field 850 mV/m at the playground", [(0.85, "v_per_m")]),
        ("irradiance approx 540 W/m2", [(540.0, "w_per_m2")]),
        ("1.050 W/m² at noon", [(1050.0, "w_per_m2")]),
        ("880 W/㎡ today", [(880.0, "w_per_m2")]),
        ("0,78 kW/m² at the panel", [(780.0, "w_per_m2")]),
        ("only 210 watt per square meter, cloudy", [(210.0, "w_per_m2")]),
        ("the rectifier draws 800 W", [(0.8, "kw")]),  # a power stays a power
        ("battery string at 48 V", [(48.0, "volt")]),  # a potential stays a potential
        ("ramp of 5 V/min", [(5.0, "volt")]),  # per minute is no field strength
        # Composed, as dB/km is: every spelling of the amount with every length or area, converted to the
        # unit's canonical denominator (per m, per m²).
        ("120 mV per metre by the gate", [(0.12, "v_per_m")]),
        ("1.2 volts/m at the fence", [(1.2, "v_per_m")]),
        ("0.6 kW per sqm at noon", [(600.0, "w_per_m2")]),
        ("5 W/m along the cable", [(0.005, "kw")]),  # a watt per metre is no irradiance
        ("loss/km = 1.2 dB", [(1.2, "db_per_km")]),  # a label's length: decibels only
        ("per m: 48 V", [(48.0, "volt")]),
    ],
)
def test_a_quantity_per_a_length_or_an_area_is_one_unit(text: str, read: list[tuple[float, str]]) -> None:
    assert [(q.value, q.unit) for q in find_quantities(_clean(text))] == read


def test_a_field_strength_key_is_named_with_its_unit_and_maps_its_values() -> None:
    texts = [
        _clean(t)
        for t in (
            "EMF near the school 2,9 V/m",
            "EMF at the roof 3.5 V/m",
            "EMF reading 850 mV/m",
            "EMF at the gate 4,2 volts per metre",
            "EMF by the hospital 2.7 V/m",
        )
    ]
    key = induce(texts, FakeEmbedder()).key
    assert key.key_type == "number" and key.constraints.unit == "v_per_m", key
    assert key.key_name.endswith("_v_per_m"), key.key_name
    template = TemplateRegistry.default().get("coverage_compensation_v1").with_keys([key])
    result = map_text(template, "the EMF is 1200 mV/m", FakeEmbedder(), now=1_790_000_000.0)
    assert result.payload.get(key.key_name) == 1.2, result.payload
