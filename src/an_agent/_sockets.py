"""TCP keepalive for the long-lived sessions between agents: a peer that vanished without a word is found.

A subscription (a NETCONF notification session, an A2A stream) waits for the peer's next message as long
as it takes, and sends nothing meanwhile. When the peer's host or process goes away without closing the
connection — it was killed while a partition dropped its FIN, its machine lost power, a firewall forgot
the flow — the waiting side never learns: it keeps a session to nobody and misses every later
notification (found by lab soak ``--netns``: an agent killed inside a partition). Kernel keepalive probes
on the idle connection end it: after ``KEEPALIVE_IDLE`` seconds of silence a probe every
``KEEPALIVE_INTERVAL`` seconds, and after ``KEEPALIVE_PROBES`` unanswered ones (or at once, when a
restarted peer's kernel answers with a reset) the read fails and the session is opened again (with
replay, for notifications). A peer that is only slow answers probes from its kernel: nothing is lost.
"""

from __future__ import annotations

import socket

KEEPALIVE_IDLE = 15
KEEPALIVE_INTERVAL = 5
KEEPALIVE_PROBES = 4

KEEPALIVE_OPTIONS: list[tuple[int, int, int]] = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)] + [
    (socket.IPPROTO_TCP, getattr(socket, name), value)
    for name, value in (
        ("TCP_KEEPIDLE", KEEPALIVE_IDLE),
        ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
        ("TCP_KEEPCNT", KEEPALIVE_PROBES),
    )
    if hasattr(socket, name)  # Linux (and most others); elsewhere the system's defaults (hours) stay
]
"""The options as ``(level, option, value)``, for APIs that take them (httpx's ``socket_options``)."""


def keep_alive(sock: socket.socket) -> None:
    """Turn on the keepalive of the module docstring on ``sock`` (a listening socket passes it on to the
    connections it accepts, on Linux)."""
    for level, option, value in KEEPALIVE_OPTIONS:
        sock.setsockopt(level, option, value)
