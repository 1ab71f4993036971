"""Agents a topology brings from outside: a plugin behaviour, a program, a remote A2A agent.

What `an_agent.lab.topology` checks of them when it reads a file (``lab check`` says it before anything
starts), each problem as a sentence naming the agent.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from an_agent.errors import ConfigError
from an_agent.lab.spec import AgentSpec, ExternalSpec, ServiceSpec, UpstreamAuth

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
    for key in ("a2a_upstream_trust", "a2a_upstream_auth"):
        if key in raw and "a2a_upstream" not in raw:
            problems.append((key, f"agent {name}: {key} is for an a2a_upstream"))
    external = raw.get("external")
    if isinstance(external, dict):
        if "netconf" not in external and "a2a" not in external:
            problems.append(("external", f"agent {name}: an external agent needs netconf: HOST:PORT or a2a: URL"))
        if "port" in raw or "a2a_port" in raw or "host" in raw:
            problems.append(("external", f"agent {name}: the lab does not start an external agent: give its "
                             "netconf/a2a addresses under external, not port, a2a_port or host"))  # fmt: skip
    return problems


def outsider_fields(raw: dict[str, Any], base: Path) -> dict[str, Any]:
    """The `AgentSpec` fields of a topology agent's outsider keys (files relative to ``base``, the topology's
    directory)."""
    return {
        "behaviour": raw.get("behaviour"),
        "command": expand_argv(raw.get("command", ()), base),
        "behaviour_timeout": float(raw.get("behaviour_timeout", 300.0)),
        "a2a_upstream": raw.get("a2a_upstream"),
        "a2a_upstream_trust": base / raw["a2a_upstream_trust"] if "a2a_upstream_trust" in raw else None,
        "a2a_upstream_auth": upstream_auth_spec(raw.get("a2a_upstream_auth"), base),
        "external": external_spec(raw.get("external"), base),
    }


def expand_argv(argv: list[str] | tuple[str, ...], base: Path) -> tuple[str, ...]:
    """A topology's argv with ``{python}`` (the Python an-agent runs on) and ``{here}`` (the topology's
    directory) put in: a program of the topology runs the same from any working directory."""
    return tuple(str(a).replace("{python}", sys.executable).replace("{here}", str(base.resolve())) for a in argv)


def a2a_port_of(agent: AgentSpec) -> int | None:
    """Whether ``agent`` serves A2A, as ``talks_to``'s ``transport: a2a`` needs: its ``a2a_port``, or (an
    external agent with an ``a2a`` URL) 0; None when it does not."""
    if agent.external is None:
        return agent.a2a_port
    return 0 if agent.external.a2a else None


def upstream_auth_spec(raw: dict[str, str] | None, base: Path) -> UpstreamAuth | None:
    """An ``a2a_upstream_auth`` entry (schema-checked already: one of basic/bearer); its file relative to
    the topology's directory."""
    if raw is None:
        return None
    kind, file = next(iter(raw.items()))
    return UpstreamAuth("basic" if kind == "basic" else "bearer", base / file)


def external_spec(raw: dict[str, Any] | None, base: Path) -> ExternalSpec | None:
    """An ``external`` entry (schema-checked already); files relative to the topology's directory."""
    if raw is None:
        return None
    netconf = None
    if "netconf" in raw:
        host, _, port = str(raw["netconf"]).rpartition(":")
        netconf = (host.strip("[]"), int(port))
    return ExternalSpec(
        netconf=netconf,
        a2a=raw.get("a2a"),
        credentials=base / raw["credentials"] if "credentials" in raw else None,
        trust=base / raw["trust"] if "trust" in raw else None,
    )


def service_specs(raw: list[dict[str, Any]], base: Path) -> tuple[ServiceSpec, ...]:
    """The ``services`` entries (schema-checked already)."""
    return tuple(
        ServiceSpec(
            name=entry["name"],
            argv=expand_argv(entry["argv"], base),
            port=int(entry["port"]),
            ready_http=(entry.get("ready") or {}).get("http"),
            ready_seconds=float((entry.get("ready") or {}).get("seconds", 30.0)),
        )
        for entry in raw
    )


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
