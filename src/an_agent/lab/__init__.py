"""Multi-agent labs: topology files -> running agents on a simulated network and clock, and reports.

`topology` (format, validation with line numbers), `agent` (one agent assembled; `load_agent` for
``an-agent serve``), `network`
(the simulated network), `kernel` (simulated time over real threads), `runner` (`Lab`: agents as
NETCONF servers on loopback, scenario), `run` (`run_topology`), `outcome`/`kpis`/`baseline`
(results and the comparison without collaboration), `text`/`report` (timeline, outcome, HTML),
`generate` (large topologies), `daemon` (``lab up``/``lab down``).
"""
