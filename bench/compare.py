"""Print two benchmark runs side by side, so that a change's effect is visible.

    python -m bench.compare                      # the last two runs in bench/results/
    python -m bench.compare OLD.json NEW.json    # two given runs
    python -m bench.compare --mode quick         # the last two --quick runs only

For every metric present in either run: our value in each run, the change in
per cent, the ratio to netconfd in each run (when netconfd was measured), and
whether the target was met in each. Rows are matched by metric name.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from bench.run import RESULTS


def load(path: Path) -> dict[str, Any]:
    """One run's JSON document (as written by `bench.run`)."""
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if "rows" not in doc:
        raise ValueError(f"{path} is not a bench.run result (no 'rows')")
    return doc


def last_two(directory: Path, mode: str | None) -> tuple[Path, Path]:
    """The two newest result files (by the timestamp in their names) of ``mode`` (any mode when None)."""
    pattern = f"bench-{mode}-*.json" if mode else "bench-*.json"
    runs = sorted(directory.glob(pattern), key=lambda p: p.stem.rsplit("-", 1)[-1])
    if len(runs) < 2:
        raise FileNotFoundError(
            f"need two runs in {directory} matching {pattern}, found {len(runs)}: run `make bench-quick` twice"
        )
    return runs[-2], runs[-1]


def _value(row: dict[str, Any] | None, field: str) -> float | None:
    if row is None:
        return None
    value = row.get(field)
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    text = f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"{text} {unit}".strip()


def _met(row: dict[str, Any] | None) -> str:
    if row is None or row.get("met") is None:
        return "n/a"
    return "yes" if row["met"] else "NO"


def compare_rows(old: dict[str, Any], new: dict[str, Any]) -> list[list[str]]:
    """Table cells, one list per metric, in the new run's order then metrics only the old run has."""
    old_rows = {row["metric"]: row for row in old["rows"]}
    new_rows = {row["metric"]: row for row in new["rows"]}
    metrics = list(new_rows) + [m for m in old_rows if m not in new_rows]
    out: list[list[str]] = []
    for metric in metrics:
        before, after = old_rows.get(metric), new_rows.get(metric)
        unit = (after or before or {}).get("unit", "")
        a, b = _value(before, "ours"), _value(after, "ours")
        change = "-" if a is None or b is None or a == 0 else f"{(b - a) / a * 100:+.0f}%"
        out.append(
            [
                metric,
                _fmt(a, unit),
                _fmt(b, unit),
                change,
                _fmt(_value(before, "ratio")),
                _fmt(_value(after, "ratio")),
                f"{_met(before)} -> {_met(after)}",
            ]
        )
    return out


def render(old_name: str, new_name: str, cells: list[list[str]]) -> str:
    """The side-by-side table as text."""
    header = ["metric", f"ours {old_name}", f"ours {new_name}", "change", "ratio old", "ratio new", "target met"]
    widths = [max(len(r[i]) for r in [header, *cells]) for i in range(len(header))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in [header, *cells]]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.compare", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="*", type=Path, metavar="RUN.json", help="two result files (old, new)")
    parser.add_argument(
        "--mode", choices=["quick", "full"], help="with no files: compare the last two runs of this mode"
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = parser.parse_args(argv)
    try:
        if args.runs:
            if len(args.runs) != 2:
                parser.error("give exactly two result files (old, new), or none")
            old_path, new_path = args.runs
        else:
            old_path, new_path = last_two(RESULTS, args.mode)
        old, new = load(old_path), load(new_path)
    except (OSError, ValueError) as exc:
        print(f"bench.compare: {exc}", file=sys.stderr)
        return 1
    cells = compare_rows(old, new)
    if args.json:
        keys = ["metric", "old", "new", "change", "ratio_old", "ratio_new", "target_met"]
        doc = {"old": str(old_path), "new": str(new_path), "rows": [dict(zip(keys, c, strict=True)) for c in cells]}
        print(json.dumps(doc, indent=1))
    else:
        print(f"old: {old_path} ({old.get('started', '?')})\nnew: {new_path} ({new.get('started', '?')})\n")
        print(render(old.get("started", "old"), new.get("started", "new"), cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
