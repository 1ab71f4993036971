"""Helpers for the bring-your-own-agent tests: an ``an-agent serve`` process, tasks over NETCONF."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import outsider
from an_agent.model import (
    AgentProfile,
    CommuType,
    DataParam,
    DataType,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Task,
    build_prompt,
)
from an_agent.nc.agent_client import AgentClient

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO / "examples" / "a2a-transport" / "transport_a2a_agent.py"
"""An A2A agent built with a2a-sdk alone, with a schema of its own (transport_capacity_v1)."""


def profile_file(tmp_path: Path, name: str = "byo-agent", output_modes: list[str] | None = None) -> Path:
    """`outsider.profile_file` (one skill taking fault_diagnosis_v1 payloads), checked by our own loader."""
    path = outsider.profile_file(tmp_path, name, output_modes)
    AgentProfile.load(path)  # the test's own profile must be valid
    return path


def env_with(*paths: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in paths), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@contextmanager
def serve(tmp_path: Path, *argv: str, env: dict[str, str] | None = None) -> Iterator[int]:
    """``an-agent serve ARGV --port 0`` until the block ends (`outsider.serve`); yields its NETCONF port."""
    with outsider.serve(tmp_path, *argv, env=env) as served:
        yield served.port


def run_cli(*argv: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "an_agent.cli", *argv], capture_output=True, text=True, env=env, timeout=timeout
    )


def diagnosis_param(task_id: str, payload: dict[str, Any]) -> DataParam:
    text = json.dumps({"schema_id": "fault_diagnosis_v1", "payload": payload})
    return DataParam(
        id=f"{task_id}.payload",
        data_type=DataType.TEXT,
        format="application/json;schema=fault_diagnosis_v1",
        data=text,
    )


def assign(client: AgentClient, task_id: str, description: str, payload: dict[str, Any] | None = None) -> None:
    params = [diagnosis_param(task_id, payload)] if payload is not None else []
    task = Task(
        task_id=task_id,
        send_from="admin",
        commu_type=CommuType.TASK_ASSIGN,
        content=build_prompt("SITE-09", description),
        task_async=True,
        msg_data=[p.id for p in params],
    )
    client.assign_task(task, params)


def wait_end(client: AgentClient, task_id: str, timeout: float = 30) -> Task:
    deadline = time.monotonic() + timeout
    while True:
        task = client.get_task(task_id)
        if task.status is not None and task.status.terminal:
            return task
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} still {task.status} after {timeout} s")
        time.sleep(0.05)


def wait_status(client: AgentClient, task_id: str, status: str, timeout: float = 30) -> Task:
    deadline = time.monotonic() + timeout
    while True:
        task = client.get_task(task_id)
        if task.status is not None and task.status.value == status:
            return task
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} is {task.status}, not {status}, after {timeout} s")
        time.sleep(0.05)


def feasibility(client: AgentClient, task_id: str, description: str, payload: dict[str, Any]) -> NegotiationResult:
    environment = json.dumps({"schema_id": "fault_diagnosis_v1", "payload": payload})
    return client.negotiate(
        NegotiationRequest(
            task_id,
            NegotiationType.FEASIBILITY,
            [build_prompt("SITE-09", description, environment=environment)],
            "admin",
            None,
        )
    )


def connect(port: int) -> AgentClient:
    return AgentClient.connect("127.0.0.1", port, username="admin", password="admin", timeout=20)


def start_upstream(*extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(UPSTREAM), "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("listening on "), (line, proc.stderr.read() if proc.stderr else "")
    return proc, line.split()[-1]


def capacity_task(client: AgentClient, task_id: str, payload: dict[str, object]) -> None:
    text = json.dumps({"schema_id": "transport_capacity_v1", "payload": payload})
    param = DataParam(
        id=f"{task_id}.p", data_type=DataType.TEXT, format="application/json;schema=transport_capacity_v1", data=text
    )
    task = Task(
        task_id=task_id,
        send_from="admin",
        commu_type=CommuType.TASK_ASSIGN,
        content=build_prompt(str(payload.get("link_id")), "Check the spare capacity"),
        task_async=True,
        msg_data=[param.id],
    )
    client.assign_task(task, [param])
