"""The parts of the simulated network behind `an_agent.lab.network.SimNetwork` (its facade).

`state` (elements, fault records, change log, alarms: what every part shares), `radio` (sites and
cells, coverage, RAN actions), `transport` (links, backhaul, IP actions), `energy` (energy saving and
power draw).
"""
