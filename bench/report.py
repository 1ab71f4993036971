"""Rows of the benchmark table, the table as text, and the JSON document."""

from __future__ import annotations

import math
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.stats import ratio


@dataclass
class Row:
    """One line of the table: a metric for both servers (netconfd may be None), its target and verdict.

    `met` is None when the target does not apply to what was measured (e.g. a
    --quick run that does not try 500 sessions); `note` says why, or how a
    number was obtained.
    """

    metric: str
    unit: str
    ours: float | None
    netconfd: float | None = None
    target: str = ""
    met: bool | None = None
    note: str = ""
    runs: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        return ratio(self.ours, self.netconfd)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


def at_most(value: float | None, limit: float) -> bool | None:
    """value <= limit, or None when there is no value."""
    return None if value is None or math.isnan(value) else value <= limit


def at_least(value: float | None, limit: float) -> bool | None:
    """value >= limit, or None when there is no value."""
    return None if value is None or math.isnan(value) else value >= limit


def _num(value: float | None, unit: str) -> str:
    if value is None or math.isnan(value):
        return "-"
    text = f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"{text} {unit}".strip()


def table(rows: list[Row]) -> str:
    """The rows as a fixed-width text table with the columns metric, ours, netconfd, ratio, target, met?."""
    head = ("metric", "ours", "netconfd", "ratio", "target", "met?")
    body = [
        (
            row.metric,
            _num(row.ours, row.unit),
            _num(row.netconfd, row.unit),
            "-" if row.ratio is None else f"{row.ratio:.2f}",
            row.target or "-",
            {True: "yes", False: "NO", None: "n/a"}[row.met],
        )
        for row in rows
    ]
    widths = [max(len(str(line[i])) for line in [head, *body]) for i in range(len(head))]
    fmt = " | ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), "-+-".join("-" * w for w in widths)]
    lines += [fmt.format(*line) for line in body]
    notes = [f"  [{row.metric}] {row.note}" for row in rows if row.note]
    return "\n".join(lines + (["", "notes:", *notes] if notes else []))


def machine() -> dict[str, Any]:
    """What the numbers were measured on: CPU, cores, memory, kernel, and the versions that matter."""
    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "kernel": platform.release(),
        "python": sys.version.split()[0],
    }
    for pkg in ("netconfd", "openssh-server"):
        info[pkg] = _dpkg_version(pkg)
    import paramiko  # the client library both servers are measured with

    info["paramiko"] = paramiko.__version__
    return info


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        text = ""
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _dpkg_version(package: str) -> str:
    done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "not installed"
