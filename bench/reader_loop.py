"""CPU per request of the agent's own work, without SSH: the session's reader loop over an in-memory stream.

    python -m bench.reader_loop [--requests 10000] [--request profile|tasks] [--runs 3]

Runs an agent in this process (the bench profile, ``--schemas off``, 100
tasks for ``tasks``), opens one `NetconfSession` on a stream that hands it
the same framed ``<rpc>`` (base:1.1) again and again and drops the replies,
and runs the session's reader loop (receive, frame, parse, handle, reply)
until the stream ends. Prints process CPU seconds per request. No sockets,
no SSH, no other process: what is left is the Python work per request that
every transport pays, the number the memo's hit path is about (bench/README,
"What moved each number"). Timing goals live in `bench.run`, not here.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

from an_agent.model import AgentProfile
from an_agent.nc.face import NetconfFace
from an_agent.nc.server import NetconfSession
from an_agent.nc.wire import frame
from an_agent.server import AgentServer, ServerConfig
from bench import data

TASKS = 100


class _Replay:
    """A byte stream that yields one framed message `count` times, then the end of the stream."""

    def __init__(self, message: bytes, count: int) -> None:
        self._message = message
        self.left = count
        self.replies = 0  # writes

    def recv(self, size: int) -> bytes:
        if self.left <= 0:
            return b""
        self.left -= 1
        return self._message

    def sendall(self, data: bytes) -> None:
        self.replies += 1

    def close(self) -> None:
        pass


def _rpc(body: str, message_id: int = 1) -> str:
    return f'<rpc xmlns="urn:ietf:params:xml:ns:netconf:base:1.0" message-id="{message_id}">{body}</rpc>'


def cpu_per_request(server: AgentServer, body: str, requests: int, session_id: int) -> float:
    """CPU seconds of this process per request over `requests` copies of `body` on a fresh session."""
    listener = server._listener
    stream = _Replay(frame(_rpc(body), True), requests)
    session = NetconfSession(stream, listener, session_id, "admin", "bench", lambda: None)
    # The hello is not exchanged: the session is put straight into the state after it.
    session.session_open = True
    session.new_framing = True
    session.reader_thread = threading.current_thread()
    session.reader_thread.keep_running = True  # type: ignore[attr-defined]
    listener.handler.session_opened(session)
    began = time.process_time()
    session._read_message_thread()
    spent = time.process_time() - began
    if stream.replies < requests:  # a large reply may take several writes
        raise RuntimeError(f"{stream.replies} writes for {requests} requests")
    return spent / requests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reader_loop", description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=10000, help="requests per run (default 10000)")
    parser.add_argument("--request", choices=("profile", "tasks"), default="profile", help="which request")
    parser.add_argument("--runs", type=int, default=3, help="runs (default 3); the median is printed")
    args = parser.parse_args(argv)
    body = data.GET_PROFILE if args.request == "profile" else data.GET_CONFIG_TASKS
    with tempfile.TemporaryDirectory(prefix="an-bench-loop-") as tmp:
        config = ServerConfig(
            state_dir=Path(tmp) / "state",
            port=0,
            users={"admin": "admin"},
            schemas="off",
            profile=AgentProfile.from_json(data.profile_json()),
        )
        with AgentServer(config) as server:
            if args.request == "tasks":
                cpu_per_request(server, data.edit_config(data.tasks_xml(TASKS)), 1, 1)
            results = sorted(cpu_per_request(server, body, args.requests, 10 + run) for run in range(args.runs))
            face = server._listener.handler
            hits = face.replies.hits if isinstance(face, NetconfFace) else 0
    median = results[len(results) // 2]
    print(
        f"{args.request}: {median * 1e6:.1f} us CPU per request in the reader loop "
        f"(runs: {', '.join(f'{r * 1e6:.1f}' for r in results)}; memo hits {hits})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
