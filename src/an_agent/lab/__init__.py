"""Multi-agent labs: topology files -> running agents on a simulated network and clock, and reports.

`topology` (format, validation with line numbers), `agent` (one topology agent assembled; `load_agent`
for ``an-agent serve --topology``), `network` (the simulated network, a facade over `simnet`: radio,
transport, energy and their shared state), `kernel` (simulated time over real threads), `runner`
(`Lab`: agents as NETCONF servers on loopback, scenario), `run` (`run_topology`),
`outcome`/`kpis`/`baseline` (results and the comparison without collaboration), `text`/`report`
(timeline, outcome, HTML), `generate` (large topologies), `daemon` (``lab up``/``lab down``).
"""
