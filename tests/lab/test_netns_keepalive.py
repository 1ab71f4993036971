"""A session whose peer vanished without a word ends: TCP keepalive on the sessions between agents.

The agent (a real ``an-agent serve``) runs in a network namespace; a NETCONF client outside holds an idle
subscription to it. The agent's process is killed while its namespace drops everything it sends (its FIN
never leaves), and then its namespace is removed: nothing will ever answer again, as when a peer's
machine is gone. Without keepalive the subscription would wait for ever; with it the read fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from netnssupport import needs_root

from an_agent.errors import RequestTimeout, TransportError
from an_agent.lab import netns
from an_agent.lab.iproute import run_ip
from an_agent.nc.client import NetconfClient

pytestmark = [needs_root, pytest.mark.slow]

PORT = 8830


def _serve(net: netns.LabNetwork, state: Path) -> subprocess.Popen[bytes]:
    command = [*net.prefix("peer"), sys.executable, "-m", "an_agent.cli", "serve", "--host", net.address("peer")]
    command += ["--port", str(PORT), "--state-dir", str(state), "--user", "admin:admin"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _connect(address: str) -> NetconfClient:
    deadline = time.monotonic() + 60
    while True:
        try:
            return NetconfClient.connect(address, PORT, username="admin", password="admin", timeout=10)
        except TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_a_subscription_to_a_peer_that_vanished_ends(tmp_path: Path) -> None:
    net = netns.create(tmp_path / "run", ["peer", "other"])
    server = None
    try:
        server = _serve(net, tmp_path / "state")
        client = _connect(net.address("peer"))
        try:
            subscription = client.subscribe()
            run_ip("-n", net.slot("peer").netns, "route", "add", "unreachable", f"{net.host_address}/32")
            os.kill(server.pid, signal.SIGKILL)  # its FIN and any reset die in its own namespace
            server.wait(30)
            run_ip("netns", "del", net.slot("peer").netns)  # and then the peer is gone for good
            # Nothing is ever sent again: only the keepalive probes can end the session (within about
            # 35 s); RequestTimeout (2 minutes without an end) is the failure this test is about.
            with pytest.raises(TransportError) as ended:
                subscription.next(timeout=120)
            assert not isinstance(ended.value, RequestTimeout), "the subscription outlived its peer"
            assert not client.connected
        finally:
            client.abort()
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.wait(30)
        net.destroy(grace=1.0)
    assert net.lab_id not in netns.leftover_labs()
