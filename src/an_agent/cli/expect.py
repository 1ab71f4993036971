"""``--expect-*`` options: the requester's criteria for a task's result (FULFILLMENT judged by the requester).

On ``task assign`` they become the task's ``expected-response`` (the JSON form of
`an_agent.schemas.fulfilment.Expectation`, so the executor sees what it is judged by); on ``task negotiate
--type fulfillment`` they are what the CLI judges the result by (default: the task's expected-response).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from an_agent.errors import ConfigError
from an_agent.schemas.fulfilment import Bounds, Expectation


def add_expect_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "expected response (the requester's criteria)",
        "How the result is judged, by the requester: keys it must give, numbers in a range, values from a set, "
        "lists covering items. The executor's own 'fulfilled' is shown but does not decide.",
    )
    group.add_argument("--expect-key", action="append", default=[], metavar="KEY", help="the result must give KEY")
    group.add_argument(
        "--expect-range",
        action="append",
        default=[],
        metavar="KEY=MIN..MAX",
        help="KEY must be a number within MIN..MAX (either end may be empty: 5.., ..10)",
    )
    group.add_argument(
        "--expect-value",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="KEY (or each item of it) must be one of these (JSON values, or plain text)",
    )
    group.add_argument(
        "--expect-covers",
        action="append",
        default=[],
        metavar="KEY=A,B",
        help="the list KEY must include every item",
    )


def expectation_from(args: argparse.Namespace) -> Expectation | None:
    """The criteria the ``--expect-*`` options give, None when there are none; `ConfigError` when malformed."""
    if not (args.expect_key or args.expect_range or args.expect_value or args.expect_covers):
        return None
    ranges: dict[str, Bounds] = {}
    for text in args.expect_range:
        key, low, high = _range(text)
        ranges[key] = (low, high)
    values = {key: tuple(_value(v) for v in items) for key, items in map(_pair, args.expect_value)}
    covers = {key: tuple(items) for key, items in map(_pair, args.expect_covers)}
    return Expectation(keys=tuple(args.expect_key), ranges=ranges, values=values, covers=covers)


def _pair(text: str) -> tuple[str, list[str]]:
    key, sep, rest = text.partition("=")
    if not sep or not key or not rest:
        raise ConfigError(f"expected KEY=V1,V2, got {text!r}")
    return key, [v.strip() for v in rest.split(",") if v.strip()]


def _range(text: str) -> tuple[str, float | None, float | None]:
    key, sep, rest = text.partition("=")
    low, dots, high = rest.partition("..")
    try:
        bounds = (float(low) if low.strip() else None, float(high) if high.strip() else None)
    except ValueError:
        bounds = None
    if not sep or not key or not dots or bounds is None or bounds == (None, None):
        raise ConfigError(f"--expect-range expects KEY=MIN..MAX (numbers, one end may be empty), got {text!r}")
    return key, bounds[0], bounds[1]


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
