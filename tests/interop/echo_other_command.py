#!/usr/bin/env python3
"""A command behaviour (protocol an-agent-command/1) that is not ours: it answers each task with the
``other`` of its payload, as the agent handed it over, so that a client can read what the agent acts on.

It imports nothing of an-agent; FEASIBILITY questions are answered feasible.
"""

import json
import sys

request = json.loads(sys.stdin.readline())
if request.get("negotiate"):
    print(json.dumps({"feasible": True}), flush=True)
else:
    other = (request.get("payload") or {}).get("other")
    print(json.dumps({"result": {"other": other}, "summary": "the other I was handed"}), flush=True)
