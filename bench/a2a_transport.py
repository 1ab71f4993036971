"""What HTTPS and the login schemes cost on the A2A face: GetTask latency per request, same agent, same run.

    python -m bench.a2a_transport [--requests 300]

Starts one agent (127.0.0.1, free ports) with a users file holding a scrypt-hashed password and a bearer
token, creates one task, then sends ``--requests`` JSON-RPC GetTask calls on one keep-alive connection
for each case: plain HTTP + Basic, HTTPS + Basic, HTTPS + Bearer (Basic pairs are remembered after the
first scrypt check). Prints median and 95th percentile in ms. Alternates the cases in rounds so machine
load hits them alike.
"""

from __future__ import annotations

import argparse
import ssl
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from an_agent.access.users import hash_password, new_token
from an_agent.agents.default import DefaultBehaviour
from an_agent.model import Task
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig


def _serve(state: Path, users: Path, tls: bool) -> AgentServer:
    config = ServerConfig(
        state_dir=state, port=0, a2a_port=0, a2a_tls=tls, users_file=users, behaviour=DefaultBehaviour(0.0),
        schemas="off",
    )  # fmt: skip
    return AgentServer(config).start()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    token, token_hash = new_token()
    with tempfile.TemporaryDirectory() as tmp:
        users = Path(tmp) / "users.yaml"
        users.write_text(
            "users:\n  - name: admin\n"
            f'    password: "{hash_password("pw")}"\n    groups: [admin]\n    tokens: ["{token_hash}"]\n',
            encoding="utf-8",
        )
        users.chmod(0o600)
        plain, secure = _serve(Path(tmp) / "plain", users, False), _serve(Path(tmp) / "tls", users, True)
        try:
            for server in (plain, secure):
                with AgentClient.connect("127.0.0.1", server.port, username="admin", password="pw") as nc:
                    nc.assign_task(Task("t1", task_async=True, content="## target object\nX\n## task description\ny"))
            assert plain.a2a is not None and secure.a2a is not None and secure.a2a.certificate is not None
            trust = ssl.create_default_context(cafile=str(secure.a2a.certificate))
            body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t1"}}
            headers = {"A2A-Version": "1.0"}
            cases = {
                "http + basic": httpx.Client(auth=("admin", "pw"), headers=headers),
                "https + basic": httpx.Client(auth=("admin", "pw"), headers=headers, verify=trust),
                "https + bearer": httpx.Client(headers={**headers, "Authorization": f"Bearer {token}"}, verify=trust),
            }
            urls = {"http + basic": plain.a2a.url + "/"}
            samples: dict[str, list[float]] = {name: [] for name in cases}
            rounds = 10
            for _ in range(rounds):
                for name, client in cases.items():
                    url = urls.get(name, secure.a2a.url + "/")
                    for _ in range(args.requests // rounds):
                        start = time.perf_counter()
                        reply = client.post(url, json=body)
                        samples[name].append((time.perf_counter() - start) * 1000)
                        assert reply.status_code == 200 and "result" in reply.json(), reply.text
            print(f"{'case':<28} {'median ms':>10} {'p95 ms':>10}   ({args.requests} GetTask each, keep-alive)")
            for client in cases.values():
                client.close()  # before the servers stop: no keep-alive connection left open
            for name, values in samples.items():
                values.sort()
                print(f"{name:<28} {statistics.median(values):>10.2f} {values[int(len(values) * 0.95) - 1]:>10.2f}")
        finally:
            plain.stop()
            secure.stop()


if __name__ == "__main__":
    main()
