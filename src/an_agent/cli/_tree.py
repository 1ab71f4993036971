"""The command tree of an argparse parser, read once for shell completion and the CLI reference.

`walk` turns the parser `an_agent.cli.build_parser` returns into plain `Command` values: each
command's path (``("task", "assign")``), its options with the values they take, and its subcommands.
Both the completion scripts (`an_agent.cli.completion`) and the manual's CLI reference are generated
from it, so neither can drift from what the parser accepts. argparse keeps its tree in private
attributes (``_actions``, ``_SubParsersAction.choices``); this module is the one place that reads them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Option:
    """One optional argument: its flags, whether it takes a value, and the values it accepts if fixed."""

    flags: tuple[str, ...]
    takes_value: bool
    choices: tuple[str, ...]


@dataclass(frozen=True)
class Command:
    """A command (the root has the empty path) with its parser, options and subcommands."""

    path: tuple[str, ...]
    help: str
    parser: argparse.ArgumentParser
    options: tuple[Option, ...]
    subcommands: tuple[Command, ...]

    def walk(self) -> Iterator[Command]:
        """This command and every command below it, depth first, in the order --help lists them."""
        yield self
        for sub in self.subcommands:
            yield from sub.walk()


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = (), help: str = "") -> Command:
    """The tree of commands under ``parser`` (aliases of a subcommand are not listed twice)."""
    options: list[Option] = []
    subcommands: list[Command] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:
                    continue
                seen.add(id(sub))
                subcommands.append(walk(sub, (*path, name), helps.get(name, "")))
        elif action.option_strings and action.help != argparse.SUPPRESS:
            choices = tuple(str(c) for c in action.choices) if action.choices is not None else ()
            options.append(Option(tuple(action.option_strings), action.nargs != 0, choices))
    return Command(path, help, parser, tuple(options), tuple(subcommands))
