"""A topology's ``a2a_upstream`` agent is the same gateway as ``serve --a2a-upstream``: it serves the card's
schemas as templates and logs in to the upstream as ``a2a_upstream_auth`` says (here a bearer token that
the a2a-sdk agent, nothing of ours imported, demands of every request but its card's)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from byosupport import REPO, capacity_task, start_upstream, wait_end

from an_agent.nc.agent_client import AgentClient


def _topology(tmp_path: Path, url: str, auth: str) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            format: an-agent-lab/1
            name: gateway-alone
            agents:
              - {{name: capacity, role: ip-fault, port: 0, regions: [metro], a2a_upstream: "{url}"{auth}}}
            talks_to: {{}}
            network:
              regions: [{{name: metro}}]
              routers: [{{id: CR-1, region: metro, role: core}}, {{id: AGG-1, region: metro}}]
              links: [{{id: LINK-1, a: CR-1, b: AGG-1}}]
              sites: [{{id: SITE-01, region: metro, pos: [0, 0], backhaul: [LINK-1], cells: 1}}]
            scenario:
              events: [{{at_minutes: 600, fault: {{type: link_cut, target: LINK-1, repair_minutes: 1}}}}]
            """
        ),
        encoding="utf-8",
    )
    return path


def _lab(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "an_agent.cli", "lab", *argv], capture_output=True, text=True, timeout=180, cwd=REPO
    )


@contextmanager
def _upstream(*extra: str) -> Iterator[str]:
    proc, url = start_upstream(*extra)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def _lab_up(topology: Path, run_dir: Path) -> Iterator[dict[str, Any]]:
    up = _lab("up", str(topology), "--idle", "--run-dir", str(run_dir), "--json")
    assert up.returncode == 0, up.stderr
    try:
        yield json.loads(up.stdout)
    finally:
        down = _lab("down", "--run-dir", str(run_dir))
        assert down.returncode == 0, down.stderr


@pytest.mark.slow  # a lab with an agent process and an A2A agent process
def test_a_topology_gateway_serves_the_cards_schemas_and_logs_in(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token\n", encoding="utf-8")
    token.chmod(0o600)
    with _upstream("--token", str(token)) as url:
        topology = _topology(tmp_path, url, ", a2a_upstream_auth: {bearer: token}")
        with _lab_up(topology, tmp_path / "run") as lab:
            port = lab["agents"][0]["port"]
            with AgentClient.connect("127.0.0.1", port, username="admin", password="admin") as client:
                # transport_capacity_v1 is no shipped template: it is the card's JSON Schema projected back
                template = client.schemas.template("transport_capacity", refresh=True).template
                assert [(k.key_name, k.key_type, k.required) for k in template.keys] == [
                    ("link_id", "string", True),
                    ("direction", "string", False),
                    ("min_gbps", "number", False),
                ]
                gbps = template.key("min_gbps")
                assert gbps is not None and (gbps.constraints.minimum, gbps.constraints.maximum) == (0, 400)
                # the task reaches the upstream only with the token: it answers 401 to anything else
                capacity_task(client, "t1", {"link_id": "LINK-1", "min_gbps": 5})
                done = wait_end(client, "t1")
                assert done.status is not None and done.status.value == "finished", done.result
                assert json.loads(done.result.data or "")["spare_gbps"] == 42.0  # type: ignore[union-attr]
        served = tmp_path / "run" / "agents" / "capacity" / "upstream-templates" / "transport_capacity_v1.json"
        assert served.stat().st_mode & 0o077 == 0

        # the same lab without the login: the gateway starts (the card is public) and the task fails, saying why
        with _lab_up(_topology(tmp_path, url, ""), tmp_path / "run-nologin") as lab:
            port = lab["agents"][0]["port"]
            with AgentClient.connect("127.0.0.1", port, username="admin", password="admin") as client:
                capacity_task(client, "t2", {"link_id": "LINK-1"})
                failed = wait_end(client, "t2")
                assert failed.status is not None and failed.status.value == "failed"
                assert "401" in (failed.result.reason or ""), failed.result  # type: ignore[union-attr]


@pytest.mark.slow  # a lab that refuses to start
def test_a_lab_refuses_an_upstream_it_cannot_serve_naming_the_agent(tmp_path: Path) -> None:
    with _upstream("--bad-schema") as url:
        refused = _lab("up", str(_topology(tmp_path, url, "")), "--idle", "--run-dir", str(tmp_path / "run"))
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "agent capacity" in refused.stderr and "declares a schema the gateway cannot serve" in refused.stderr

    missing = _topology(tmp_path, "http://127.0.0.1:9", ", a2a_upstream_auth: {basic: no-such-file}")
    refused = _lab("up", str(missing), "--idle", "--run-dir", str(tmp_path / "run2"))
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "agent capacity" in refused.stderr and "no-such-file" in refused.stderr
