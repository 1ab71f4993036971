"""``an-agent lab soak``: a topology under a workload that never runs dry and a seeded chaos schedule, watched
by checkers over the journal and every agent's durable state (`an_agent.lab.soak.run.run_soak`)."""
