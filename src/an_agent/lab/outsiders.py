"""Agents a topology brings from outside: a plugin behaviour, a program, a remote A2A agent.

What `an_agent.lab.topology` checks of them when it reads a file (``lab check`` says it before anything
starts), each problem as a sentence naming the agent.
"""

from __future__ import annotations

from typing import Any

from an_agent.errors import ConfigError

OUTSIDERS = ("behaviour", "command", "a2a_upstream", "external")
"""The keys of a topology agent that bring its logic from outside; an agent has at most one."""


def outsider_problems(raw: dict[str, Any]) -> list[tuple[str, str]]:
    """``(key, problem)`` for a topology agent's outsider keys (the file is already schema-valid)."""
    name = raw["name"]
    given = [key for key in OUTSIDERS if key in raw]
    problems = [(key, f"agent {name}: {key} and {given[0]} both say who does the work: give one") for key in given[1:]]
    if "behaviour" in raw:
        problem = plugin_problem(name, raw["behaviour"])
        if problem:
            problems.append(("behaviour", problem))
    if "behaviour_timeout" in raw and "command" not in raw:
        problems.append(("behaviour_timeout", f"agent {name}: behaviour_timeout is for a command"))
    return problems


def plugin_problem(name: str, ref: str) -> str | None:
    """Why agent ``name``'s ``behaviour`` cannot play a lab role (None: it can).

    It must load (`an_agent.agents.plugins`) and subclass `LabBehaviour`, which gets the lab's network,
    time and peers.
    """
    from an_agent.agents.plugins import load_behaviour_class
    from an_agent.agents.sdk import LabBehaviour

    try:
        cls = load_behaviour_class(ref)
    except ConfigError as exc:
        return f"agent {name}: {exc}"
    if not issubclass(cls, LabBehaviour):
        return (
            f"agent {name}: {ref} is a Behaviour but a lab agent's must subclass an_agent.agents.sdk.LabBehaviour "
            "(it gets the lab's network, time and peers); serve a plain Behaviour with 'an-agent serve --behaviour'"
        )
    return None
