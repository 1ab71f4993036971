"""MkDocs hooks of the manual: reference pages generated at build time, so they cannot drift.

A page asks for generated text with a marker on a line of its own, ``<!-- generate: NAME -->``:

- ``cli``: every command's ``--help``, from the argparse parsers of `an_agent.cli.build_parser`;
- ``yang-trees``: the ``pyang -f tree`` output of each shipped YANG module;
- ``module-sizes``: the ten largest modules of ``src/an_agent`` by lines (what
  ``find src -name '*.py' | xargs wc -l | sort -n | tail`` lists).

The topology JSON Schema is published as the file ``reference/topology.schema.json`` of the site,
read from ``src/an_agent/lab/topology.schema.json`` (the file ``an-agent lab check`` enforces).
An unknown marker fails the build.
"""

from __future__ import annotations

import argparse
import functools
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGY_SCHEMA = ROOT / "src" / "an_agent" / "lab" / "topology.schema.json"
SCHEMA_URI = "reference/topology.schema.json"
HELP_WIDTH = 100
_MARKER = re.compile(r"^<!-- generate: ([a-z-]+) -->$", re.MULTILINE)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, SCHEMA_URI, abs_src_path=str(TOPOLOGY_SCHEMA)))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    def generate(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in _GENERATORS:
            raise PluginError(f"{page.file.src_uri}: no generator '{name}' (known: {', '.join(_GENERATORS)})")
        return _GENERATORS[name]()

    return _MARKER.sub(generate, markdown)


def cli_reference() -> str:
    """A section per command, in --help order: its path as the heading, its --help as the text."""
    from an_agent.cli import build_parser
    from an_agent.cli._tree import walk

    out: list[str] = []
    for command in walk(build_parser()).walk():
        name = " ".join(("an-agent", *command.path))
        level = "#" * min(2 + max(len(command.path) - 1, 0), 4)
        out.append(f"{level} `{name}`\n")
        if command.help:
            out.append(f"{command.help[:1].upper()}{command.help[1:]}.\n")
        out.append(f"```text\n{_help(command.parser).rstrip()}\n```\n")
    return "\n".join(out)


def _help(parser: argparse.ArgumentParser) -> str:
    # A fixed width, whatever the terminal of the build: the page is the same on every machine.
    formatter: Any = parser.formatter_class
    parser.formatter_class = functools.partial(formatter, width=HELP_WIDTH)
    try:
        return parser.format_help()
    finally:
        parser.formatter_class = formatter


def yang_trees() -> str:
    """A section per shipped module with its pyang tree."""
    from an_agent.yang.context import MODULES_DIR
    from an_agent.yang.tools import tree

    out: list[str] = []
    for path in sorted(Path(MODULES_DIR).glob("*.yang")):
        module, revision = path.stem.split("@", 1)
        drawn = tree(names=[module]).rstrip() or "(groupings and types only: no data nodes, RPCs or notifications)"
        out.append(f"### {module}\n\nRevision {revision}.\n\n```text\n{drawn}\n```\n")
    return "\n".join(out)


def module_sizes(top: int = 10) -> str:
    """A table of the ``top`` largest modules of the package by lines (``wc -l``), largest first."""
    package = ROOT / "src" / "an_agent"
    sizes = [(path.read_bytes().count(b"\n"), path.relative_to(package).as_posix()) for path in package.rglob("*.py")]
    rows = [f"| {lines} | {module} |" for lines, module in sorted(sizes, key=lambda s: (-s[0], s[1]))[:top]]
    return "\n".join(["| lines | module |", "|---|---|", *rows]) + "\n"


_GENERATORS = {"cli": cli_reference, "yang-trees": yang_trees, "module-sizes": module_sizes}
