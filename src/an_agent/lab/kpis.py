"""KPI time series: a step function of network samples, with values at a time, extremes and integrals."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from an_agent.lab.network import Kpis


@dataclass
class KpiSeries:
    samples: list[tuple[float, Kpis]]
    """(time, KPIs), time-ordered; each holds until the next."""

    def at(self, when: float) -> Kpis:
        """The KPIs in force at ``when`` (the first sample before the series starts)."""
        times = [t for t, _ in self.samples]
        index = bisect_right(times, when) - 1
        return self.samples[max(0, index)][1]

    def integral(self, field: str, start: float, end: float) -> float:
        """The integral of ``field`` over [start, end], in value x seconds."""
        total = 0.0
        for i, (t, kpis) in enumerate(self.samples):
            t_next = self.samples[i + 1][0] if i + 1 < len(self.samples) else end
            lo, hi = max(t, start), min(t_next, end)
            if hi > lo:
                total += float(getattr(kpis, field)) * (hi - lo)
        if self.samples and start < self.samples[0][0]:
            total += float(getattr(self.samples[0][1], field)) * (min(end, self.samples[0][0]) - start)
        return total

    def extreme(self, field: str, start: float, end: float, highest: bool = True) -> float:
        """The highest (or lowest) value of ``field`` in force during [start, end]."""
        values = [float(getattr(self.at(start), field))]
        values += [float(getattr(k, field)) for t, k in self.samples if start <= t <= end]
        return max(values) if highest else min(values)

    def first_time(self, start: float, predicate: object) -> float | None:
        """The first sample time >= start whose KPIs satisfy ``predicate`` (a callable), else None."""
        assert callable(predicate)
        for t, kpis in self.samples:
            if t >= start and predicate(kpis):
                return t
        return None
