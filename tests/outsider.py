"""An agent as an outsider meets it: ``an-agent serve`` in a process of its own, known by what it prints.

Nothing of an_agent is imported here, so a test built on this module plays a client that has only the
agent's addresses and a profile file of its own: a stock ncclient session (`netconf`), the a2a-sdk client
built from the card the agent serves (`a2a_client`, `data_message`), or plain httpx.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import AgentCard, Message, Part, Role, SendMessageRequest
from google.protobuf.struct_pb2 import Struct
from ncclient import manager

# "an-agent: serving NAME on 127.0.0.1:PORT[, A2A on URL/[ (certificate PEM, SHA-256 ...)]] ..."
SERVING = re.compile(r"serving .* on 127\.0\.0\.1:(\d+)(?:, A2A on (\S+/)(?: \(certificate (\S+),)?)?")


@dataclass(frozen=True)
class Served:
    """What ``an-agent serve`` said once it served: its NETCONF port and, with ``--a2a-port``, its A2A base
    URL (ending in ``/``) and the certificate it generated for HTTPS (None over plain HTTP)."""

    port: int
    a2a_url: str | None
    certificate: Path | None


@contextmanager
def serve(where: Path, *argv: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """``an-agent serve --port 0 --state-dir WHERE/state ARGV`` until the block ends, its output in
    WHERE/serve.log; stopped with SIGTERM as Ctrl-C would (SIGKILL when still there 20 s later).
    AssertionError with the log when it does not serve within 60 s."""
    log_path = where / "serve.log"
    command = [sys.executable, "-m", "an_agent.cli", "serve", "--port", "0", "--state-dir", str(where / "state")]
    with log_path.open("w+", encoding="utf-8") as log:
        proc = subprocess.Popen([*command, *argv], stdout=log, stderr=log, env=env, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while not (found := SERVING.search(log_path.read_text(encoding="utf-8"))):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"serve did not start (exit {proc.poll()}):\n{log_path.read_text()}")
                time.sleep(0.1)
            certificate = Path(found.group(3)) if found.group(3) else None
            yield Served(int(found.group(1)), found.group(2), certificate)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def netconf(port: int, host: str = "127.0.0.1", user: str = "admin", password: str = "admin") -> manager.Manager:
    """A stock ncclient session (password login, any host key: the agent's is generated on first start)."""
    return manager.connect(
        host=host,
        port=port,
        username=user,
        password=password,
        hostkey_verify=False,
        look_for_keys=False,
        allow_agent=False,
        timeout=30,
    )


def profile_file(where: Path, name: str = "byo-agent", output_modes: list[str] | None = None) -> Path:
    """A profile file (RFC 7951 JSON) of one skill taking text and fault_diagnosis_v1 payloads."""
    profile = {
        "irtf-agent:agent": {
            "name": name,
            "description": "an outsider's agent under test",
            "type": "ip-fault",
            "version": "1.0.0",
            "provider": "ACME",
            "domain": "IP transport",
            "skills": {
                "skill": [
                    {
                        "skill-name": "transport-diagnosis",
                        "skill-description": "diagnose backhaul faults",
                        "skill-tags": ["diagnose"],
                        "input-modes": ["text/plain", "application/json;schema=fault_diagnosis_v1"],
                        "output-modes": output_modes or ["application/json"],
                    }
                ]
            },
            "capability": {
                "streaming": False,
                "push-notifications": True,
                "negotiate": ["acp-task-feasibility-negotiation-v1.0", "acp-task-fulfillment-negotiation-v1.0"],
            },
        }
    }
    path = where / f"{name}.json"
    path.write_text(json.dumps(profile), encoding="utf-8")
    return path


def until(condition: Callable[[], object], what: str, seconds: float = 30) -> None:
    """Wait for ``condition()`` to be true, polling; AssertionError naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.1)


async def a2a_client(
    http: httpx.AsyncClient, url: str, binding: str = "JSONRPC", streaming: bool = True
) -> tuple[Client, AgentCard]:
    """The a2a-sdk client of the agent at ``url`` (over ``binding``, ``http``'s login and trust), built from the
    card it serves, and that card."""
    card = await A2ACardResolver(http, url).get_agent_card()
    config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding])
    return ClientFactory(config).create(card), card


def data_message(data: dict[str, Any], mime: str, text: str | None = None) -> SendMessageRequest:
    """A user message with one data part declaring ``mime`` (and a text part first when ``text``)."""
    part = Part(metadata=Struct())
    part.data.struct_value.update(data)
    part.metadata.update({"mimeType": mime})
    parts = [Part(text=text), part] if text else [part]
    return SendMessageRequest(message=Message(message_id="m1", role=Role.ROLE_USER, parts=parts))
