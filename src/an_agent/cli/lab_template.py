"""The lab's template process: ``python -m an_agent.cli.lab_template --channel-fd N [--topology FILE]``.

Started by a lab (`an_agent.lab.zygote.Zygote`), never by a person: it loads once what every agent process
of the lab needs (the command line, the server, both faces, the roles, the YANG context, the topology),
then forks an agent per request, each running ``an-agent serve ...`` (`an_agent.cli.main`). It lives in
the command-line layer because that is what its children run.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from pathlib import Path

PRELOADED = (
    "an_agent.server",
    "an_agent.nc.server",
    "an_agent.a2a.server",  # the A2A face, for agents that serve one
    "an_agent.agents.roles",
    "an_agent.lab.remote",
    "an_agent.lab.upstream",  # `serve` reads a topology agent's templates through it (a2a.client, gateway)
    "an_agent.logs",  # `serve` configures its log with it
    "an_agent.metrics_http",  # /metrics of an agent outside a namespace (uvicorn in a thread)
    # what uvicorn imports only when a server starts (`uvicorn.Config.load`): /metrics and the A2A face
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.lifespan.off",
    "encodings.idna",  # the codec socket.getaddrinfo looks up on an agent's first connection
    "encodings.ascii",
)
"""What an agent process imports beyond the command line: never torch or sentence-transformers (an agent
that needs the embedding model loads it itself, lazily). A module an idle agent imports after the fork
is paid for by every agent: ~2 MiB of private pages each for the few modules the observability work
added to `serve` (the import writes to objects all over the template's heap, copying their pages),
~4 MiB with /metrics' uvicorn and h11 (bench/README.md, issue 30 round 3). The lab tests check that an
idle agent process imports nothing (``tests/lab/test_lab_processes.py``)."""


def preload(topology_file: Path | None, host_key: Path | None) -> argparse.ArgumentParser:
    """Import and build what every agent needs; starts no thread (the template forks). The command line's
    parser, built once (it imports every command module; building it costs each agent ~0.1 s of CPU)."""
    from an_agent.cli import build_parser

    parser = build_parser()
    for module in PRELOADED:
        importlib.import_module(module)
    from an_agent.yang.context import YangContext

    YangContext.default()
    if topology_file is not None:
        from an_agent.lab.topology import load_topology
        from an_agent.lab.topology_memo import remember

        remember(topology_file, load_topology(topology_file))
    if host_key is not None and host_key.exists():
        from an_agent.nc.ssh_auth import load_or_create_host_key

        load_or_create_host_key(host_key)  # each agent's copy of the lab's key is then not checked again
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m an_agent.cli.lab_template", description=__doc__)
    parser.add_argument("--channel-fd", type=int, required=True, help="the template's end of the lab's socket pair")
    parser.add_argument("--topology", type=Path, help="the lab's topology, read and checked once here")
    parser.add_argument("--host-key", type=Path, help="the lab's SSH host key (each agent has a copy), loaded once")
    args = parser.parse_args(argv)
    from an_agent.cli import main as run
    from an_agent.lab.zygote import serve_template

    built: list[argparse.ArgumentParser] = []
    return serve_template(
        args.channel_fd,
        lambda: built.append(preload(args.topology, args.host_key)),
        lambda arguments: run(arguments, built[0]),
    )


if __name__ == "__main__":
    raise SystemExit(main())
