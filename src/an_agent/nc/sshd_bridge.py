"""The forced command of the sshd path: hand this SSH session's byte stream to the agent, then wait.

OpenSSH's sshd runs it (``python -I -S sshd_bridge.py SOCKET USER``) as the
forced command of each user's key (`an_agent.nc.sshd`), with the session's
stdin and stdout connected to the SSH channel. It passes those two
descriptors and the user name to the agent over the agent's Unix socket
(``SCM_RIGHTS``), so the agent reads and writes the channel directly and no
process copies the bytes. sshd keeps a channel's input open only while its
child lives, so the bridge then becomes ``cat`` reading the Unix socket: a
small process that ends when the agent closes the session.

Standard library only, run without site packages: nothing of the agent is
imported, so it starts in a few milliseconds.
"""

from __future__ import annotations

import os
import socket
import sys

SUBSYSTEM_COMMAND = "an-agent-netconf"
"""The ``Subsystem netconf`` command in the sshd config; sshd gives it as ``SSH_ORIGINAL_COMMAND``."""


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: sshd_bridge.py SOCKET USER\n")
        return 2
    socket_path, user = argv
    # The forced command runs for every request of this key: only the netconf subsystem is served.
    if os.environ.get("SSH_ORIGINAL_COMMAND") != SUBSYSTEM_COMMAND:
        sys.stderr.write("this key opens only the NETCONF subsystem (ssh -s ... netconf)\n")
        return 1
    agent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        agent.connect(socket_path)
        socket.send_fds(agent, [user.encode("utf-8")], [0, 1])
    except OSError as exc:
        sys.stderr.write(f"the agent is not accepting sessions: {exc.strerror}\n")
        return 1
    os.dup2(agent.fileno(), 0)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.execv("/bin/cat", ["cat"])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
