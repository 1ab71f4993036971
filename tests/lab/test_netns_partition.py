"""``--chaos partition:A,B@SECONDS+DURATION``: parsing, and a partition played on the lab's simulated clock."""

from __future__ import annotations

from pathlib import Path

import pytest
from netnssupport import needs_root

from an_agent.errors import ConfigError
from an_agent.lab import netns
from an_agent.lab.kernel import SimKernel
from an_agent.lab.partition import Partition


def test_parse() -> None:
    fault = Partition.parse("ran-fault,ip-fault@600+300.5")
    assert fault == Partition("ran-fault", "ip-fault", 600.0, 300.5)
    assert fault.spec == "partition:ran-fault,ip-fault@600+300.5"
    assert fault.to_json() == {"kind": "partition", "agents": ["ran-fault", "ip-fault"], "at": 600.0, "duration": 300.5}
    fault.check({"ran-fault", "ip-fault", "x"})
    with pytest.raises(ConfigError, match="no agent ip-fault"):
        fault.check({"ran-fault"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,b@10", "expected partition:AGENT,AGENT@SECONDS"),
        ("a@10+5", "expected"),
        ("a,b@-1+5", "expected"),
        ("A,b@1+5", "expected"),
        ("a,a@1+5", "from itself"),
        ("a,b@1+0", "more than 0"),
    ],
)
def test_parse_refuses(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Partition.parse(text)


@needs_root
def test_partition_is_played_on_simulated_time(tmp_path: Path) -> None:
    net = netns.create(tmp_path / "run", ["a", "b", "c"])
    try:
        kernel = SimKernel(start=1000.0, stall_timeout=60.0)
        seen: dict[float, set[frozenset[str]]] = {}
        changes: list[tuple[str, float]] = []

        def probe(when: float) -> None:
            kernel.call_at(when, "probe", lambda: seen.__setitem__(when, net.partitions()))

        Partition.parse("a,b@100+50").schedule(kernel, 1000.0, net, lambda f, what, t: changes.append((what, t)))
        for when in (1050.0, 1125.0, 1200.0):
            probe(when)
        assert kernel.run() == "idle"
        kernel.close()
        assert changes == [("partitioned", 1100.0), ("healed", 1150.0)]
        assert seen == {1050.0: set(), 1125.0: {frozenset({"a", "b"})}, 1200.0: set()}
    finally:
        net.destroy(grace=1.0)
    assert net.lab_id not in netns.leftover_labs()
