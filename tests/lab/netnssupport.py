"""Helpers for the tests of lab network namespaces (`an_agent.lab.netns`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence

import pytest

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip", path="/usr/sbin:/sbin:" + os.environ.get("PATH", "")) is None,
    reason="needs root and iproute2 (network namespaces)",
)

# One TCP connect to argv[1]:argv[2] (a name goes through the namespace's /etc/hosts); prints the result.
CONNECT = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()
    print("connected")
except OSError as exc:
    print(f"failed {exc.errno}")
"""


def connect_in(prefix: Sequence[str], host: str, port: int) -> str:
    """``connected`` or ``failed ERRNO``: a TCP connect made by a program run behind ``prefix``."""
    done = subprocess.run(
        [*prefix, sys.executable, "-c", CONNECT, host, str(port)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()
