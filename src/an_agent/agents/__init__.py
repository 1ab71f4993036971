"""Agent behaviours: what each lab role does with its tasks, its negotiations and its network.

One module per role — `service` (cross-domain fault), `ran`, `ip`, `optimization`, `energy`,
`complaint` — on the common `base.LabBehaviour`; `roles` maps role names to them. `environment` is
their contract with the world (simulated time, the managed network), `peers` their NETCONF sessions
to other agents, `payloads` the structured payloads they exchange, `schema_use` how they negotiate
templates and fill evolved keys. `default` is the behaviour of an agent served with a profile and no
role (the task lifecycle, no network behind it); the quick-tour agent (`an-agent serve` with no
profile) is the `ran` role on a built-in simulated network (`an_agent.lab.tour`).
"""
