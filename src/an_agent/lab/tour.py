"""The quick-tour agent: the RAN fault behaviour on a small built-in simulated network with faults in it.

`an-agent serve` with no profile and ``python -m an_agent.quickstart`` serve this agent, so that a
newcomer's first tasks do real work: the profile is the built-in example profile
(``src/an_agent/data/example-profile.json``, a ``ran-fault`` agent whose skills are the role's), the
behaviour is `an_agent.agents.ran.RanFaultBehaviour`, and its network is the lab's simulated network
(`an_agent.lab.network.SimNetwork`) built from ``src/an_agent/data/tour-topology.yaml``: six base
stations of the city-north cluster, with the topology's faults injected at start (a base-station
software hang on SITE-02, a mains power failure on SITE-05, an antenna tilt off plan on CELL-0401).

A ``Diagnose`` task finds the root cause and recommends an action, ``Repair`` carries out what may be
done remotely (restart, planned configuration), ``Verify`` finishes when the elements are back in
service; payloads are ``fault_diagnosis_v1`` (or a prompt naming the sites and cells). Simulated time
runs as fast as the agent's work allows, so a 10-minute site restart takes milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from importlib import resources

from an_agent.agents.environment import SchemaMode
from an_agent.lab.agent import StandaloneAgent, assemble_agent
from an_agent.lab.journal import Note
from an_agent.lab.spec import Topology
from an_agent.lab.topology import load_topology
from an_agent.server import example_profile

TOUR_AGENT = "tour"
"""The agent's name in the built-in topology (served under the example profile's name)."""


def tour_topology() -> Topology:
    """The built-in topology of the quick-tour agent (validated like any topology file)."""
    with resources.as_file(resources.files("an_agent").joinpath("data/tour-topology.yaml")) as path:
        return load_topology(path)


def tour_agent(schemas: SchemaMode = "evolve", on_note: Callable[[Note], None] | None = None) -> StandaloneAgent:
    """The quick-tour agent (module docstring), its faults injected and its clock running.

    ``schemas`` must be the server's setting (`an_agent.server.ServerConfig.schemas`); ``on_note``
    receives what the agent does on the network (journal notes); default: logged.
    """
    topology = tour_topology()
    profile = example_profile()
    # The behaviour acts, and signs its findings, under the profile's name.
    spec = replace(topology.agent(TOUR_AGENT), name=profile.name, schemas=schemas)
    topology = replace(topology, agents=(spec,))
    agent = assemble_agent(topology, profile.name, on_note)
    # Every fault of the built-in scenario is there from the start: the tour has no timeline to play.
    for event in topology.events:
        if event.fault is not None:
            agent.network.inject(event.fault)
    agent.profile = profile
    agent.start_clock()
    return agent
