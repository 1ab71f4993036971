"""Inline SVG step charts for the HTML report (no scripts, no external resources).

A chart draws step series (each value holds until the next point) over [0, t_end] seconds, with
optional horizontal target lines and vertical marks (events). Times on the axis are shown through
``clock`` (seconds after the run's start -> ``HH:MM:SS``).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Points = Sequence[tuple[float, float]]


@dataclass(frozen=True)
class Line:
    """A step series and how it is drawn (``dash``: an SVG dash array, empty for a solid line)."""

    points: Points
    colour: str = "#1f6feb"
    dash: str = ""
    label: str = ""


@dataclass(frozen=True)
class Level:
    """A horizontal line at ``value`` (a target), drawn from ``start`` to ``end`` seconds (None: the whole chart)."""

    value: float
    label: str
    colour: str = "#b91c1c"
    start: float | None = None
    end: float | None = None


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def step_chart(
    title: str,
    lines: Sequence[Line],
    t_end: float,
    clock: Callable[[float], str],
    levels: Sequence[Level] = (),
    marks: Sequence[tuple[float, str]] = (),
    width: int = 460,
    height: int = 220,
    from_zero: bool = True,
) -> str:
    """A ``<figure>`` with the chart; empty when no line has a point.

    ``from_zero``: the value axis starts at 0 (else just below the lowest value, for a KPI such as a
    coverage percentage whose changes are small next to its size).
    """
    drawn = [line for line in lines if line.points]
    if not drawn:
        return ""
    t_end = (t_end or 1.0) * 1.05
    values = [v for line in drawn for _, v in line.points] + [lv.value for lv in levels]
    low, high = min(values), max(values)
    y_min = min(0.0, low) if from_zero else low - 0.1 * ((high - low) or abs(low) or 1.0)
    y_max = (high + 0.05 * ((high - y_min) or 1.0)) or 1.0
    w, h, left, bottom, top, right = width, height, 56, 30, 24, 26
    pw, ph = w - left - right, h - top - bottom

    def x(t: float) -> float:
        return left + pw * max(0.0, min(t, t_end)) / t_end

    def y(v: float) -> float:
        return top + ph * (1 - (v - y_min) / ((y_max - y_min) or 1.0))

    def steps(points: Points) -> str:
        coords: list[str] = []
        for i, (t, v) in enumerate(points):
            if i:
                coords.append(f"{x(t):.1f},{y(points[i - 1][1]):.1f}")
            coords.append(f"{x(t):.1f},{y(v):.1f}")
        coords.append(f"{x(t_end):.1f},{y(points[-1][1]):.1f}")
        return " ".join(coords)

    parts = [
        f"<figure><svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' viewBox='0 0 {w} {h}' "
        f"role='img' aria-label='{_e(title)}'><text x='{left}' y='16' class='title'>{_e(title)}</text>"
    ]
    for i in range(6):
        t = t_end * i / 5
        parts.append(
            f"<line x1='{x(t):.1f}' y1='{top + ph}' x2='{x(t):.1f}' y2='{top + ph + 4}' stroke='#555'/>"
            f"<text x='{x(t):.1f}' y='{h - 8}' text-anchor='middle'>{_e(clock(t)[:5])}</text>"
        )
        v = y_min + (y_max - y_min) * i / 5
        parts.append(
            f"<line x1='{left - 4}' y1='{y(v):.1f}' x2='{left + pw}' y2='{y(v):.1f}' stroke='#eee'/>"
            f"<text x='{left - 6}' y='{y(v) + 4:.1f}' text-anchor='end'>{v:,.0f}</text>"
        )
    parts.append(f"<line x1='{left}' y1='{top + ph}' x2='{left + pw}' y2='{top + ph}' stroke='#555'/>")
    for t, label in marks:
        parts.append(
            f"<g><title>{_e(clock(t))} {_e(label)}</title><line x1='{x(t):.1f}' y1='{top}' x2='{x(t):.1f}' "
            f"y2='{top + ph}' stroke='#a855f7' stroke-dasharray='2 3'/></g>"
        )
    for level in levels:
        x1 = x(level.start if level.start is not None else 0.0)
        x2 = x(level.end if level.end is not None else t_end)
        parts.append(
            f"<g><title>{_e(level.label)}</title><line x1='{x1:.1f}' y1='{y(level.value):.1f}' x2='{x2:.1f}' "
            f"y2='{y(level.value):.1f}' stroke='{level.colour}' stroke-width='1.5' stroke-dasharray='8 3'/>"
            f"<text x='{x2 - 2:.1f}' y='{y(level.value) - 3:.1f}' text-anchor='end' fill='{level.colour}' "
            f"class='level'>{_e(level.label)}</text></g>"
        )
    for line in drawn:
        dash = f" stroke-dasharray='{line.dash}'" if line.dash else ""
        parts.append(
            f"<polyline fill='none' stroke='{line.colour}' stroke-width='2'{dash} points='{steps(line.points)}'>"
            f"<title>{_e(line.label)}</title></polyline>"
        )
    parts.append("</svg></figure>")
    return "".join(parts)
