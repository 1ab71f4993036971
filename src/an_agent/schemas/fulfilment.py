"""FULFILLMENT judged by the requester: a task's result against the expected response it sent.

Draft-wang's FULFILLMENT negotiation asks whether a task's result meets what the assigner wanted. The
executor's "fulfilled" is its own say-so; the judgement that counts is the requester's, by its own
criteria. An `Expectation` holds them and travels in the task's ``expected-response`` leaf (and in the
FULFILLMENT request's content) as a JSON object, so the executor sees what it is judged by:

- ``keys``: keys the JSON result must give, each present and not empty (``null``, ``""``, ``[]``);
- ``ranges``: ``{"key": [min, max]}``, a number within (either bound may be ``null``);
- ``values``: ``{"key": [allowed, ...]}``, the value (or each item of a list) one of these;
- ``covers``: ``{"key": [item, ...]}``, a list value that includes every item.

`Expectation.parse` also reads the plain forms requesters write by hand: a comma-separated list of
keys (``"root_cause, recommendations"``); any other text expects nothing checkable beyond a finished
task. `Expectation.judge` returns a `Judgement` listing every criterion the result misses.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from an_agent.model import Task, TaskStatus, build_prompt, parse_prompt

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
Bounds = tuple[float | None, float | None]
Check = Callable[[dict[str, Any]], list[str]]
"""A requester's own outcome criterion on the JSON result: the problems it finds (empty: met)."""


@dataclass(frozen=True)
class Judgement:
    """The requester's verdict on a task's result: fulfilled, or every reason it is not."""

    fulfilled: bool
    problems: tuple[str, ...] = ()
    met: tuple[str, ...] = ()
    """The criteria the result met (for the record)."""

    @property
    def reason(self) -> str:
        if self.fulfilled:
            return "the result meets the expected response" + (f": {', '.join(self.met)}" if self.met else "")
        return "; ".join(self.problems)


@dataclass(frozen=True)
class Expectation:
    """What a requester expects of a task's result (module docstring). Empty: a finished task suffices."""

    keys: tuple[str, ...] = ()
    ranges: Mapping[str, Bounds] = field(default_factory=dict)
    values: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    covers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.keys or self.ranges or self.values or self.covers)

    def to_text(self) -> str:
        """The ``expected-response`` form: a JSON object (`parse` reads it back)."""
        value: dict[str, Any] = {}
        if self.keys:
            value["keys"] = list(self.keys)
        if self.ranges:
            value["ranges"] = {k: list(b) for k, b in sorted(self.ranges.items())}
        if self.values:
            value["values"] = {k: list(v) for k, v in sorted(self.values.items())}
        if self.covers:
            value["covers"] = {k: list(v) for k, v in sorted(self.covers.items())}
        return json.dumps(value, sort_keys=True)

    @classmethod
    def parse(cls, text: str | None) -> Expectation:
        """Read an ``expected-response``: the JSON form, a comma-separated key list, or free text (nothing)."""
        text = (text or "").strip()
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                return cls()
            return cls.from_dict(value) if isinstance(value, dict) else cls()
        words = [w.strip() for w in text.split(",")]
        if words and all(_KEY.match(w) for w in words):
            return cls(keys=tuple(words))
        return cls()

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Expectation:
        """The JSON form's object; members of the wrong shape are ignored (nothing to check there)."""

        def mapping(name: str) -> dict[str, list[Any]]:
            raw = value.get(name)
            if not isinstance(raw, dict):
                return {}
            return {str(k): list(v) for k, v in raw.items() if isinstance(v, list)}

        ranges: dict[str, Bounds] = {}
        for key, bounds in mapping("ranges").items():
            if len(bounds) == 2 and all(b is None or _number(b) for b in bounds):
                ranges[key] = (_float(bounds[0]), _float(bounds[1]))
        keys = value.get("keys")
        return cls(
            keys=tuple(str(k) for k in keys) if isinstance(keys, list) else (),
            ranges=ranges,
            values={k: tuple(v) for k, v in mapping("values").items()},
            covers={k: tuple(str(i) for i in v) for k, v in mapping("covers").items()},
        )

    def judge(self, task: Task | None, check: Check | None = None) -> Judgement:
        """The requester's verdict on ``task`` (its status and JSON result), ``check`` its own extra criterion."""
        if task is None:
            return Judgement(False, ("there is no such task",))
        if task.status != TaskStatus.FINISHED:
            why = [task.result.reason] if task.result and task.result.reason else []
            return Judgement(False, (f"task {task.task_id} is {task.status or 'unknown'}, not finished", *why))
        needs_json = not self.empty or check is not None
        result = _json_result(task)
        if result is None:
            if needs_json:
                return Judgement(False, (f"task {task.task_id} has no JSON object as its result",))
            return Judgement(True, met=(f"task {task.task_id} finished",))
        problems: list[str] = []
        met: list[str] = []
        for key in self.keys:
            if _absent(result.get(key)):
                problems.append(f"the result has no {key}")
            else:
                met.append(key)
        for key, (low, high) in sorted(self.ranges.items()):
            problems += _in_range(key, result.get(key), low, high, met)
        for key, allowed in sorted(self.values.items()):
            problems += _one_of(key, result.get(key), allowed, met)
        for key, wanted in sorted(self.covers.items()):
            have = result.get(key)
            missing = sorted(set(wanted) - {str(i) for i in have}) if isinstance(have, list) else sorted(wanted)
            if missing:
                problems.append(f"{key} does not cover {', '.join(missing)}")
            else:
                met.append(f"{key} covers {', '.join(wanted)}")
        if check is not None:
            problems += check(result)
        return Judgement(not problems, tuple(problems), tuple(met))


def _json_result(task: Task) -> dict[str, Any] | None:
    data = task.result.data if task.result else None
    if not data:
        return None
    try:
        value = json.loads(data)
    except json.JSONDecodeError:
        return None
    if isinstance(value, dict) and isinstance(value.get("payload"), dict) and "schema_id" in value:
        return dict(value["payload"])  # a structured result: judge its payload
    return value if isinstance(value, dict) else None


def _absent(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _in_range(key: str, value: Any, low: float | None, high: float | None, met: list[str]) -> list[str]:
    span = f"[{'' if low is None else f'{low:g}'}, {'' if high is None else f'{high:g}'}]"
    if not _number(value):
        return [f"{key} is {json.dumps(value)}, not a number in {span}"]
    if (low is not None and value < low) or (high is not None and value > high):
        return [f"{key} = {value:g} is outside {span}"]
    met.append(f"{key} in {span}")
    return []


def _one_of(key: str, value: Any, allowed: tuple[Any, ...], met: list[str]) -> list[str]:
    items = value if isinstance(value, list) else [value]
    wrong = [i for i in items if i not in allowed]
    if value is None or wrong:
        shown = ", ".join(json.dumps(i) for i in (wrong or [value]))
        return [f"{key} is {shown}, not one of {', '.join(json.dumps(a) for a in allowed)}"]
    met.append(f"{key} one of the allowed values")
    return []


@dataclass(frozen=True)
class Fulfilment:
    """A FULFILLMENT exchange as the requester ends it: its own judgement, and what the executor said.

    `fulfilled` and `reason` are the requester's (the executor's answer is recorded, never trusted).
    """

    judgement: Judgement
    executor_fulfilled: bool | None = None
    executor_reason: str | None = None

    @property
    def fulfilled(self) -> bool:
        return self.judgement.fulfilled

    @property
    def disagrees(self) -> bool:
        """The executor's answer differs from the requester's judgement."""
        return self.executor_fulfilled is not None and self.executor_fulfilled != self.fulfilled

    @property
    def reason(self) -> str:
        said = "fulfilled" if self.executor_fulfilled else "not fulfilled"
        executor = f" (the executor said {said}: {self.executor_reason})" if self.disagrees else ""
        return self.judgement.reason + executor

    def to_dict(self) -> dict[str, Any]:
        return {
            "fulfilled": self.fulfilled,
            "reason": self.judgement.reason,
            "problems": list(self.judgement.problems),
            "met": list(self.judgement.met),
            "executor": {"fulfilled": self.executor_fulfilled, "reason": self.executor_reason},
        }


def fulfilment_request_content(task_id: str, expectation: Expectation) -> str:
    """The FULFILLMENT request's prompt: the task, and the criteria the requester judges it by (JSON)."""
    return build_prompt(task_id, "evaluate the result against the expected response", expectation.to_text())


def request_expectation(content: list[str]) -> Expectation | None:
    """The criteria in a FULFILLMENT request's content (`fulfilment_request_content`), None when there are none."""
    for text in content:
        environment = parse_prompt(text).environment
        if environment and environment.strip().startswith("{"):
            return Expectation.parse(environment)
    return None
