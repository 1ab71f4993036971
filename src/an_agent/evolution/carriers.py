"""Value carriers: a typed key's fragments state its value; a fragment that states none says something else.

Why (issue 31, round 3): on MiniLM a one-off that shares a cluster's topic word ("the fan in the NOC
meeting room is broken" next to "Fan speed: 4200 rpm", "vendor invoice for December is pending" next
to "Vendor case: CSR-4412098") is as close to the centroid as the intent's own loose paraphrases, so
no similarity cut tells them apart (docs/evolution.md section 4, "Purity"). What does is the part of a
fragment that bears the intent: when the cluster's key is typed, the intent's fragments state a value
of that type (a speed in rpm, an id of one prefix, a moment, a code of the set) and the one-off does
not. Two uses, both only when the key is typed and at least half of its core states a value:

- **the core** (`value_core`): when at least ``CARRY_SHARE`` of the core's fragments carry a value of
  the induced `ValueSpec`, the others are set aside (they leave the cluster at its patch, `release`);
- **after the patch** (`value_test`): a fragment joins the cluster, and a cluster merges into it, only
  when it carries such a value (`pool.SchemaPool.choose`, `ingest.PoolKeeper`), so the cluster behind
  a typed key does not drift to its topic word.

Booleans and free-form names have no value a one-off could lack (every fragment of a flag "carries"
it; a name is any capitalised span), and a closed set of words (on battery / on mains; a new cause
widening `suspected_root_cause`) is often paraphrased without naming one of its words: they are never
tested. Closed sets of codes (2G-5G, P1-P4) are: a code is what such a fragment is written for. Below
``CARRY_SHARE`` (a key typed by a few of its fragments) the value is not what holds the cluster
together and nothing is set aside.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from an_agent.evolution.alternatives import word_stem
from an_agent.evolution.codes import codes_in
from an_agent.evolution.cohesion import Core, rejoin, set_aside
from an_agent.evolution.inference import ValueSpec
from an_agent.evolution.moments import duration_of, find_moment
from an_agent.schemas.embedding import Vectors
from an_agent.schemas.extract import find_clock_ranges, find_counts, find_ids, find_quantities
from an_agent.schemas.units import in_unit, kindred

CARRY_SHARE = 0.5  # share of a core's fragments that must carry a value for the others to be set aside
_TOKEN = re.compile(r"[a-z0-9]+")


def is_tested(spec: ValueSpec) -> bool:
    """True when ``spec`` has a value a fragment can lack (not a flag, a free-form name or a set of words)."""
    if spec.key_type == "boolean" or spec.info.get("freeform"):
        return False
    return not spec.enum or bool(spec.info.get("codes"))


def carries_value(spec: ValueSpec, text: str, now: float) -> bool:
    """True when ``text`` states a value of the kind ``spec`` describes (always True for untested kinds)."""
    if not is_tested(spec):
        return True
    if spec.value_format == "date-time":
        return find_moment(text, now) is not None or duration_of(text) is not None
    if spec.value_format == "duration":
        return duration_of(text) is not None
    if spec.unit is not None:
        # A key holds its unit's kindred units, converted (`units.kindred`: a distance in m holds "4,37 km").
        units = {spec.unit, "degrees"} if spec.unit == "celsius" else set(kindred(spec.unit))
        # ... and within the key's range: a value the key would refuse is about another thing ("van mileage
        # = 182 340 km" next to distances to a fibre break of 0.65 to 12.6 km; Range: 0 to 50000 m).
        low, high = spec.info.get("range", (-math.inf, math.inf))
        return any(q.unit in units and low <= in_unit(q, spec.unit).value <= high for q in find_quantities(text))
    if spec.id_prefix is not None:
        return any(f.prefix == spec.id_prefix for f in find_ids(text))
    if spec.info.get("count"):
        return bool(find_counts(text))
    if spec.enum:
        stems = {word_stem(t) for t in _TOKEN.findall(text.lower())}
        if any(all(word_stem(p) in stems for p in _TOKEN.findall(v.lower())) for v in spec.enum):
            return True
        # A code in another spelling ("IP 65", "Poland" for PL): every code pattern is run, so only after
        # the word test, on the pool's join path.
        return bool(spec.info.get("codes")) and bool(codes_in(text) & set(spec.enum))
    return bool(find_clock_ranges(text))


def value_test(spec: ValueSpec, now: float) -> Callable[[str], bool] | None:
    """The test a fragment must pass to join a cluster whose key ``spec`` typed (None: no test)."""
    if not is_tested(spec):
        return None
    return lambda text: carries_value(spec, text, now)


def value_core(spec: ValueSpec, texts: Sequence[str], now: float) -> tuple[int, ...]:
    """Positions (in ``texts``, the fragments ``spec`` was inferred from) of those to set aside; () for none.

    The fragments that carry no value (`carries_value`, the test later fragments pass too), only when
    ``spec`` is tested and at least ``CARRY_SHARE`` of the fragments carry one.
    """
    if not is_tested(spec) or not texts:
        return ()
    missing = tuple(i for i, text in enumerate(texts) if not carries_value(spec, text, now))
    if len(texts) - len(missing) < CARRY_SHARE * len(texts):
        return ()
    return missing


def carried_core(
    core: Core, texts: Sequence[str], vectors: Vectors, infer: Callable[[Core], ValueSpec], now: float
) -> tuple[Core, ValueSpec]:
    """``core`` without the fragments that carry no value of its key (`value_core`), and the key's spec.

    ``texts``/``vectors``: every fragment examined (``core`` indexes them); ``infer``: the `ValueSpec` of a
    core's fragments, asked again when some leave (the key is typed and named without them).
    """
    spec = infer(core)
    if "_per_" in (spec.unit or "") and (back := {i for i in core.outliers if carries_value(spec, texts[i], now)}):
        # An outlier that states a value in the key's compound unit ("720 euros a year" by "€49.99 a month",
        # money per a period; dB per km) is the key's: the outlier test compares words, and the words of a
        # value said per a period or a length differ where the value does not. A simple unit (GB, ms) is
        # no such evidence: one-offs of the topic state one too (the ledger corpus's data volume).
        core = rejoin(core, vectors, back)
        spec = infer(core)
    missing = value_core(spec, [texts[i] for i in core.members], now)
    if not missing:
        return core, spec
    core = set_aside(core, vectors, {core.members[i] for i in missing})
    return core, infer(core)
