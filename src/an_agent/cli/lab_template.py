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
    "encodings.idna",  # the codec socket.getaddrinfo looks up on an agent's first connection
)
"""What an agent process imports beyond the command line: never torch or sentence-transformers (an agent
that needs the embedding model loads it itself, lazily)."""


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
