"""A table pasted into a payload's ``other``, seen from outside: ``an-agent serve`` in a process of its own,
stock ncclient and the a2a-sdk client, nothing of an_agent imported here (docs/evolution.md, section 2).

The agent's work is done by a program that is not ours either (`echo_other_command.py`, a command
behaviour) and that answers with the ``other`` it was handed: what the agent acts on, which a client reads
back as the task's result. A table pasted with its header line (a markdown table with its rule line, a CSV)
reaches it as labelled fields, a row at a time, whichever face the task came through; two lines of prose
with a comma each stay text. The task's data-param keeps the payload as the client sent it. The note
"table rows written as labelled fields" reaches neither face (documented there).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import ssl
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import GetTaskRequest
from google.protobuf.json_format import MessageToDict
from lxml import etree
from ncclient import manager

from outsider import Served, a2a_client, data_message, netconf, profile_file, serve, until
from support import IRTF, payload_param_xml, task_xml

pytestmark = [pytest.mark.interop, pytest.mark.slow]

PROGRAM = Path(__file__).with_name("echo_other_command.py")
SCHEMA = "fault_diagnosis_v1"
NS = {"a": IRTF}

PASTED = [
    pytest.param(
        "| Site | Setpoint degC |\n|---|---|\n| LIS-114 | 27 |\n| LIS-115 | 26 |",
        ["Site: LIS-114, Setpoint degC: 27. Site: LIS-115, Setpoint degC: 26"],
        id="markdown",
    ),
    pytest.param(
        "Site,Rx level (dBm),Status\nKA-114,-97,degraded\nKA-115,-88,ok",
        ["Site: KA-114, Rx level (dBm): -97, Status: degraded. Site: KA-115, Rx level (dBm): -88, Status: ok"],
        id="csv",
    ),
    pytest.param(
        "the site is down, again\nplease check it, thanks",
        ["the site is down, again please check it, thanks"],
        id="prose",
    ),
]


def payload(other: str) -> dict[str, Any]:
    return {"fault_type": "transmission_failure", "affected_site_ids": ["SITE-09"], "other": other}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    where = tmp_path_factory.mktemp("other-table")
    command = shlex.join([sys.executable, str(PROGRAM)])
    argv = ["--profile", str(profile_file(where)), "--behaviour-command", command, "--a2a-port", "0"]
    with serve(where, *argv, "--schemas", "validate") as served:
        yield served


def get(nc: manager.Manager, subtree: str) -> etree._Element:
    data: etree._Element = etree.fromstring(nc.get(("subtree", subtree)).data_xml.encode())
    return data


@pytest.mark.parametrize(("pasted", "fields"), PASTED)
def test_over_netconf_the_agent_acts_on_labelled_fields_and_keeps_what_was_sent(
    agent: Served, pasted: str, fields: list[str], request: pytest.FixtureRequest
) -> None:
    task_id = f"nc-{request.node.callspec.id}"
    param = f"{task_id}.payload"
    config = task_xml(
        task_id,
        "Diagnose the backhaul",
        "SITE-09",
        extra=f"<msg-data>{param}</msg-data>",
        params=payload_param_xml(param, SCHEMA, payload(pasted)),
    )
    with netconf(agent.port) as nc:
        assert nc.edit_config(target="running", config=config).ok
        subtree = f'<tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id></task></tasks>'

        def status() -> str | None:
            return get(nc, subtree).findtext(".//a:task-status", namespaces=NS)

        until(lambda: status() in ("finished", "failed"), f"{task_id} ends")
        assert status() == "finished"
        result = get(nc, subtree).find(".//a:task/a:result", NS)
        stored = get(nc, f'<data-params xmlns="{IRTF}"><id>{param}</id></data-params>')
    assert result is not None
    assert result.findtext("a:format", namespaces=NS) == "application/json"
    assert json.loads(result.findtext("a:data", namespaces=NS) or "") == {"other": fields}
    # The data-param is the client's own data: as sent (the template's defaults filled in).
    sent = json.loads(stored.findtext(".//a:data-params/a:data", namespaces=NS) or "")
    assert sent["schema_id"] == SCHEMA and sent["payload"]["other"] == pasted


@pytest.mark.parametrize(("pasted", "fields"), PASTED)
def test_over_a2a_the_result_artifact_holds_labelled_fields(agent: Served, pasted: str, fields: list[str]) -> None:
    assert agent.a2a_url is not None and agent.certificate is not None

    async def send() -> tuple[dict[str, Any], dict[str, Any]]:
        trust = ssl.create_default_context(cafile=str(agent.certificate))  # the certificate the agent printed
        async with httpx.AsyncClient(auth=("admin", "admin"), timeout=30, verify=trust) as http:
            client, _ = await a2a_client(http, str(agent.a2a_url), streaming=False)
            message = data_message(payload(pasted), f"application/json;schema={SCHEMA}", "Diagnose the backhaul")
            [reply] = [event async for event in client.send_message(message)]
            task = await client.get_task(GetTaskRequest(id=reply.task.id))
            return MessageToDict(reply.task), MessageToDict(task)

    answered, read_back = asyncio.run(send())
    for task in (answered, read_back):
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert task["metadata"] == {"an-agent/task-status": "finished"}
        [artifact] = task["artifacts"]
        [part] = artifact["parts"]
        assert part["data"] == {"other": fields}
        assert part["mediaType"] == "application/json"
