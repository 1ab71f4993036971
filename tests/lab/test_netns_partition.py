"""``--chaos partition:A,B@SECONDS+DURATION``: parsing, and a partition played on the lab's simulated clock."""

from __future__ import annotations

from pathlib import Path

import pytest
from netnssupport import needs_root

from an_agent.errors import ConfigError
from an_agent.lab import netns
from an_agent.lab.journal import Journal
from an_agent.lab.kernel import SimKernel
from an_agent.lab.partition import Cuts, Partition


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
        journal = Journal(kernel.now)
        seen: dict[float, set[frozenset[str]]] = {}

        def probe(when: float) -> None:
            kernel.call_at(when, "probe", lambda: seen.__setitem__(when, net.partitions()))

        Partition.parse("a,b@100+50").schedule(kernel, 1000.0, Cuts(net, journal, kernel))
        for when in (1050.0, 1125.0, 1200.0):
            probe(when)
        assert kernel.run() == "idle"
        kernel.close()
        assert [(n.time, n.kind) for n in journal.notes()] == [(1100.0, "partition"), (1150.0, "partition_healed")]
        assert seen == {1050.0: set(), 1125.0: {frozenset({"a", "b"})}, 1200.0: set()}
    finally:
        net.destroy(grace=1.0)
    assert net.lab_id not in netns.leftover_labs()


@needs_root
def test_overlapping_partitions_of_one_pair_hold_until_the_last_heals(tmp_path: Path) -> None:
    """A partition of a and b inside an isolation of a (a soak draws both): the first heal must not end
    the other; the pair reaches again at the last heal, whichever order they end in."""
    net = netns.create(tmp_path / "run", ["a", "b", "c"])
    try:
        kernel = SimKernel(start=0.0, stall_timeout=60.0)
        journal = Journal(kernel.now)
        cuts = Cuts(net, journal, kernel)
        seen: dict[float, set[frozenset[str]]] = {}
        # isolate a from 100 to 400; a-b also from 200 to 300 (inside) and b-c from 350 to 500 (across its end)
        for spec in ("a,b@100+300", "a,c@100+300", "a,b@200+100", "b,c@350+150"):
            Partition.parse(spec).schedule(kernel, 0.0, cuts)
        for when in (150.0, 250.0, 320.0, 380.0, 450.0, 600.0):
            kernel.call_at(when, "probe", lambda w=when: seen.__setitem__(w, net.partitions()))
        assert kernel.run() == "idle"
        kernel.close()
        ab, ac, bc = frozenset("ab"), frozenset("ac"), frozenset("bc")
        assert seen == {
            150.0: {ab, ac},
            250.0: {ab, ac},
            320.0: {ab, ac},  # the inner a-b partition healed: a is still isolated
            380.0: {ab, ac, bc},
            450.0: {bc},
            600.0: set(),
        }
        inner_heal = [n for n in journal.notes() if n.time == 300.0]
        assert [(n.kind, n.text) for n in inner_heal] == [
            ("partition_healed", "a and b still cut apart by another fault")
        ]
    finally:
        net.destroy(grace=1.0)
    assert net.lab_id not in netns.leftover_labs()
