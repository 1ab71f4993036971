"""A lab's element managers: the simulated network served over NETCONF per domain (docs/element-managers.md).

`manager.ElementManager` composes one (the same NETCONF face, users and NACM as an agent's server);
`operations` is its operation layer, `render` the simulator as YANG data, `edits` the cell changes,
`windows` the energy-saving windows.
"""
