"""What the official A2A TCK found, checked as an outsider would: `an-agent serve` in its own process, and
plain httpx / ncclient (nothing of an_agent imported here).

- a caller who asks in words and walks away (or cancels) cannot use the agent up;
- enum values the protocol does not define are refused (-32602 / HTTP 400), never silently dropped;
- control characters in text are accepted, carried over NETCONF as XML allows, and never an error;
- a stream never goes back in time after its first event.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from lxml import etree

from outsider import netconf, serve, until

pytestmark = pytest.mark.slow

IRTF = "urn:ietf:params:xml:ns:yang:irtf-agent"
PROMPT = "## target object\nSITE-02\n## task description\nDiagnose the radio side of SITE-02"


class Agent:
    """A quick-tour agent in its own process, reached over JSON-RPC, HTTP+JSON and NETCONF."""

    def __init__(self, netconf_port: int, url: str) -> None:
        self.netconf_port = netconf_port
        self.url = url
        self.http = httpx.Client(
            auth=("admin", "admin"), verify=False, headers={"A2A-Version": "1.0"}, timeout=60
        )  # the agent's own generated certificate; loopback only

    def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        reply = self.http.post(
            self.url, json={"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
        )
        answer: dict[str, Any] = reply.json()
        return answer

    def send_text(self, text: str) -> dict[str, Any]:
        message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
        return self.rpc("SendMessage", {"message": message, "configuration": {"returnImmediately": True}})

    def stream(self, method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        events = []
        body = {"jsonrpc": "2.0", "id": "s", "method": method, "params": params}
        with self.http.stream("POST", self.url, json=body) as reply:
            for line in reply.iter_lines():
                if line.startswith("data:"):
                    events.append(json.loads(line[5:])["result"])
        return events

    def state(self, task_id: str) -> str:
        state: str = self.rpc("GetTask", {"id": task_id})["result"]["status"]["state"]
        return state


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    with serve(tmp_path_factory.mktemp("tck-findings"), "--a2a-port", "0", "--input-timeout", "20") as served:
        assert served.a2a_url is not None
        running = Agent(served.port, served.a2a_url)
        try:
            yield running
        finally:
            running.http.close()


def _task_id(answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    task_id: str = answer["result"]["task"]["id"]
    return task_id


def test_questions_left_unanswered_or_cancelled_never_use_the_agent_up(agent: Agent) -> None:
    # More text-only messages than the agent takes tasks at once (8): each waits for a missing value.
    waiting = [_task_id(agent.send_text(f"something is wrong number {i}")) for i in range(10)]
    for task_id in waiting:
        until(lambda t=task_id: agent.state(t) == "TASK_STATE_INPUT_REQUIRED", f"{task_id} asks")
    for task_id in waiting[:5]:
        assert agent.rpc("CancelTask", {"id": task_id})["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    # The other five walked away: --input-timeout 20 ends them, failed, saying what never came.
    for task_id in waiting[5:]:
        until(lambda t=task_id: agent.state(t) == "TASK_STATE_FAILED", f"{task_id} times out")
    answer = agent.rpc(
        "SendMessage", {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": PROMPT}]}}
    )
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer


def test_one_client_has_a_bounded_number_of_open_questions(agent: Agent) -> None:
    waiting = []
    refused = None
    for i in range(20):
        answer = agent.send_text(f"something is wrong, case {i}")
        if "error" in answer:
            refused = answer["error"]
            break
        waiting.append(_task_id(answer))
    assert refused is not None and len(waiting) == 16, (len(waiting), refused)
    assert "already has 16 tasks waiting for its answers" in refused["message"]
    agent.rpc("CancelTask", {"id": waiting[0]})
    _task_id(agent.send_text("one more once a place is free"))  # a cancelled question gives its place back
    for task_id in waiting[1:]:
        agent.rpc("CancelTask", {"id": task_id})


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("ListTasks", {"status": "INVALID_STATUS"}, "status"),
        (
            "SendMessage",
            {"message": {"messageId": "m1", "role": "ROLE_NOBODY", "parts": [{"text": "x"}]}},
            "message.role",
        ),
    ],
)
def test_an_enum_value_the_protocol_does_not_define_is_invalid_params(
    agent: Agent, method: str, params: dict[str, Any], field: str
) -> None:
    answer = agent.rpc(method, params)
    assert answer["error"]["code"] == -32602, answer
    assert f"{field}: invalid value" in answer["error"]["message"]


def test_rest_refuses_an_unknown_status_and_a_bad_boolean_with_400(agent: Agent) -> None:
    for query, field in (({"status": "INVALID_STATUS"}, "status"), ({"includeArtifacts": "yes"}, "includeArtifacts")):
        reply = agent.http.get(agent.url + "rest/tasks", params=query)
        assert reply.status_code == 400, reply.text
        assert field in reply.json()["error"]["message"]
    listed = agent.http.get(
        agent.url + "rest/tasks", params={"status": "TASK_STATE_COMPLETED", "includeArtifacts": "true"}
    )
    assert listed.status_code == 200
    assert {t["status"]["state"] for t in listed.json()["tasks"]} <= {"TASK_STATE_COMPLETED"}


def test_control_characters_in_text_are_accepted_and_carried_as_xml_allows(agent: Agent) -> None:
    text = PROMPT + " \b\f\x01 and a literal \u2408 too"
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    answer = agent.rpc("SendMessage", {"message": message})
    task_id = _task_id(answer)
    assert agent.rpc("GetTask", {"id": task_id})["result"]["id"] == task_id
    rest = agent.http.post(
        agent.url + "rest/message:send", json={"message": {**message, "messageId": str(uuid.uuid4())}}
    )
    assert rest.status_code == 200, rest.text
    with netconf(agent.netconf_port) as nc:
        data = nc.get(("subtree", f'<tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id></task></tasks>'))
        content = etree.fromstring(data.xml.encode()).findtext(f".//{{{IRTF}}}content")
    # XML 1.0 holds no C0 control but tab/LF/CR: each is its control picture; a literal picture is escaped.
    assert content == PROMPT + " \u2408\u240c\u2401 and a literal \u2420\u2408 too"


def test_a_stream_never_goes_back_after_its_first_event(agent: Agent) -> None:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": PROMPT}]}
    events = agent.stream("SendStreamingMessage", {"message": message})
    states = []
    for event in events:
        if "task" in event:
            states.append(event["task"]["status"]["state"])
        elif "statusUpdate" in event:
            states.append(event["statusUpdate"]["status"]["state"])
    assert states[0] == "TASK_STATE_SUBMITTED" and "task" in events[0]
    assert states[-1] == "TASK_STATE_COMPLETED"
    assert "TASK_STATE_SUBMITTED" not in states[1:], states
    question = agent.stream(
        "SendStreamingMessage",
        {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "help me"}]}},
    )
    assert [("task" in e, (e.get("task") or e.get("statusUpdate"))["status"]["state"]) for e in question] == [
        (True, "TASK_STATE_SUBMITTED"),
        (False, "TASK_STATE_INPUT_REQUIRED"),
    ]
    waiting = question[0]["task"]["id"]
    resubscribed = agent.stream("SubscribeToTask", {"id": waiting})
    assert [e["task"]["status"]["state"] for e in resubscribed] == ["TASK_STATE_INPUT_REQUIRED"]  # now, only
    agent.rpc("CancelTask", {"id": waiting})


def test_a_megabyte_of_text_is_answered_and_the_agent_goes_on(agent: Agent) -> None:
    # The TCK's large payload: one run of letters, no id in it. Reading ids out of it was quadratic
    # (an hour of CPU per message, a worker lost); every pattern that reads client text is linear now.
    for text in ("A" * (1024 * 1024), PROMPT + " " + "SITE-" * 100_000):
        answer = agent.rpc(
            "SendMessage", {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}}
        )
        assert "result" in answer or answer["error"]["code"] == -32602, str(answer)[:300]
    done = agent.rpc(
        "SendMessage", {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": PROMPT}]}}
    )
    assert done["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", done


def test_an_a2a_port_in_use_is_a_clear_refusal(agent: Agent, tmp_path: Path) -> None:
    port = int(agent.url.rsplit(":", 1)[1].strip("/"))
    command = [sys.executable, "-m", "an_agent.cli", "serve", "--port", "0", "--a2a-port", str(port)]
    done = subprocess.run([*command, "--state-dir", str(tmp_path / "s")], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert f"cannot listen on 127.0.0.1:{port} for the A2A face" in done.stderr
