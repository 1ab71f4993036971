#!/usr/bin/env python3
"""An IP/transport fault agent as a command behaviour (protocol an-agent-command/1), in plain Python.

It imports nothing of an-agent: it reads the task from stdin, the network from the lab's transport
element manager over NETCONF (ncclient), and answers JSON lines on stdout.

    command_agent.py --em HOST:PORT --login FILE [--name NAME]

FILE holds ``user:password``, a login on the element manager (group operators, to restart links).
"""

import argparse
import json
import sys

import em_diagnosis


def send(message):
    print(json.dumps(message), flush=True)


def main():
    parser = argparse.ArgumentParser(description="IP/transport fault agent over an element manager")
    parser.add_argument("--em", required=True, help="HOST:PORT of the transport element manager")
    parser.add_argument("--login", required=True, help="file holding user:password for it")
    parser.add_argument("--name", default="acme-command", help="who the findings say diagnosed them")
    args = parser.parse_args()
    request = json.loads(sys.stdin.readline())
    payload = request.get("payload") or {}
    words = (request.get("description") or "").split()
    verb = words[0].lower() if words else ""
    if request.get("negotiate") == "feasibility":
        if request.get("schema") != "fault_diagnosis_v1":
            send({"feasible": False, "reason": "I take fault_diagnosis_v1 tasks (diagnose, repair)"})
        elif verb not in ("diagnose", "repair", "report"):
            send({"feasible": False, "reason": f"I diagnose and repair transport links; I cannot {verb!r}"})
        else:
            send({"feasible": True, "reason": "the transport element manager shows that backhaul"})
        return 0
    if request.get("schema") != "fault_diagnosis_v1":
        send({"error": "I take fault_diagnosis_v1 tasks (diagnose, repair)"})
        return 0
    send({"status": "processing", "reason": f"asking the transport element manager at {args.em}"})
    with em_diagnosis.connect(args.em, em_diagnosis.read_login(args.login)) as em:
        if verb == "diagnose":
            summary, result = em_diagnosis.diagnose(em, payload, args.name)
        elif verb == "repair":
            try:
                summary, result = em_diagnosis.repair(em, payload)
            except ValueError as exc:
                send({"error": str(exc)})
                return 0
        else:
            send({"error": f"I diagnose and repair transport links; I cannot {verb!r}"})
            return 0
    send({"result": result, "summary": summary})
    return 0


if __name__ == "__main__":
    sys.exit(main())
