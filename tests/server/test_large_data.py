"""Large data over real NETCONF sessions: chunked data-params joined in order, url data from an allow-list.

draft-wang 5.2 (data-params ``chunked``/``finished``/``url``, Figure 6).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from an_agent.agents.default import DefaultBehaviour
from an_agent.model import AgentProfile, DataParam, DataType, Task, TaskResult, TaskStatus
from an_agent.model.chunks import CHUNK_CHARS
from an_agent.nc.agent_client import AgentClient
from an_agent.runtime.behaviour import TaskRun
from an_agent.server import AgentServer, ServerConfig
from rawnc import NS, RawSession, error_fields
from support import IRTF

PROMPT = "## target object\nSITE-07\n## task description\ncorrelate the alarms"


class Digest(DefaultBehaviour):
    """Finishes with the length and SHA-256 of each data-param it is handed (as the agent made them whole)."""

    def execute(self, task: Task, run: TaskRun) -> None:
        params = self.agent.data_params(task.msg_data)
        digest = {p.id: [len(p.data or ""), hashlib.sha256((p.data or "").encode()).hexdigest()] for p in params}
        run.finish(TaskResult(summary="digested", format="application/json", data=json.dumps(digest)))


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    extra = tmp_path / "exports"
    extra.mkdir()
    config = ServerConfig(
        state_dir=tmp_path / "state",
        port=0,
        profile=profile,
        behaviour=Digest(),
        schemas="off",
        data_url_allow=[extra.as_uri() + "/"],
    )
    with AgentServer(config) as running:
        yield running


def result_of(client: AgentClient, task_id: str) -> dict[str, list[object]]:
    task = client.get_task(task_id)
    assert task.status == TaskStatus.FINISHED, task
    assert task.result is not None
    return json.loads(task.result.data or "{}")  # type: ignore[no-any-return]


def test_our_client_chunks_large_data_and_the_agent_joins_it(server: AgentServer) -> None:
    big = "".join(f"ALM-{i:07d} LOS SITE-07 cell {i % 97}\n" for i in range(110_000))  # ~3.5 MB
    assert len(big) > 3 * CHUNK_CHARS
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as client:
        client.assign_task(
            Task("big1", content=PROMPT, msg_data=["alarms", "note"]),
            [DataParam("alarms", DataType.TEXT, data=big), DataParam("note", DataType.TEXT, data="small")],
        )
        stored = client.get_task("big1")
        assert stored.msg_data == ["alarms#1", "alarms#2", "alarms#3", "alarms#4", "note"]
        result = result_of(client, "big1")
    assert result == {
        "alarms": [len(big), hashlib.sha256(big.encode()).hexdigest()],
        "note": [5, hashlib.sha256(b"small").hexdigest()],
    }


def piece(pid: str, data: str, finished: bool = False) -> str:
    done = "<finished>true</finished>" if finished else ""
    return (
        f'<data-params xmlns="{IRTF}"><id>{pid}</id><dataType>text</dataType><data>{data}</data>'
        f"<chunked>true</chunked>{done}</data-params>"
    )


def assign(raw: RawSession, task_id: str, params: str, msg_data: list[str]) -> etree._Element:
    refs = "".join(f"<msg-data>{m}</msg-data>" for m in msg_data)
    return raw.rpc(
        f"<edit-config><target><running/></target><config>{params}"
        f'<tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id><task-async>true</task-async>'
        f"<content>{PROMPT}</content>{refs}</task></tasks></config></edit-config>"
    )


def test_pieces_sent_ahead_are_joined_in_order_and_gaps_are_refused(server: AgentServer) -> None:
    raw = RawSession(server.port)
    try:
        # Pieces may come in separate edits before the task, in any order.
        ahead = f"<edit-config><target><running/></target><config>{piece('t#2', 'BBB')}{piece('t#1', 'AAA')}</config></edit-config>"
        assert raw.rpc(ahead).find("nc:ok", NS) is not None
        gap = error_fields(assign(raw, "g1", piece("t#4", "DDD", finished=True), ["t#1", "t#2", "t#4"]))
        assert gap["tag"] == "invalid-value" and gap["app-tag"] == "chunk-missing"
        assert gap["path"] == "/irtf-agent:data-params[id='t#3']"
        assert "piece 3 is missing (the task carries pieces 1, 2, 4)" in (gap["message"] or "")
        unfinished = error_fields(assign(raw, "g2", "", ["t#1", "t#2"]))
        assert (
            unfinished["app-tag"] == "chunk-missing"
            and unfinished["path"] == "/irtf-agent:data-params[id='t#2']/finished"
        )
        misnamed = error_fields(assign(raw, "g3", piece("loose", "x", finished=True), ["loose"]))
        assert misnamed["app-tag"] == "chunk-misnamed"
        assert (
            assign(raw, "ok", piece("t#3", "CCC", finished=True), ["t#2", "t#3", "t#1"]).find("nc:ok", NS) is not None
        )
    finally:
        raw.close()
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as client:
        deadline = time.monotonic() + 10
        while client.get_task("ok").status != TaskStatus.FINISHED and time.monotonic() < deadline:
            time.sleep(0.02)
        assert result_of(client, "ok") == {"t": [9, hashlib.sha256(b"AAABBBCCC").hexdigest()]}


def url_param(pid: str, url: str) -> DataParam:
    return DataParam(pid, DataType.TEXT, url=url)


def test_url_data_is_fetched_only_from_the_allow_list(server: AgentServer, tmp_path: Path) -> None:
    inside = tmp_path / "state" / "data" / "topology.json"
    inside.parent.mkdir(parents=True, exist_ok=True)
    inside.write_text('{"links": 42}')
    exported = tmp_path / "exports" / "alarms.txt"
    exported.write_text("ALM-9")
    secret = tmp_path / "secret.txt"
    secret.write_text("not for agents")
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as client:
        client.assign_task(
            Task("u1", content=PROMPT, msg_data=["topo", "alarms"], task_async=False),
            [url_param("topo", inside.as_uri()), url_param("alarms", exported.as_uri())],
        )
        assert result_of(client, "u1") == {
            "topo": [13, hashlib.sha256(b'{"links": 42}').hexdigest()],
            "alarms": [5, hashlib.sha256(b"ALM-9").hexdigest()],
        }
    raw = RawSession(server.port)
    try:
        for url, app_tag in (
            (secret.as_uri(), "url-not-allowed"),
            (inside.parent.as_uri() + "/../../secret.txt", "url-not-allowed"),
            ("http://127.0.0.1:9/x", "url-not-allowed"),
            ((tmp_path / "state" / "data" / "nope.json").as_uri(), "url-unreachable"),
        ):
            param = f'<data-params xmlns="{IRTF}"><id>p</id><dataType>text</dataType><url>{url}</url></data-params>'
            fields = error_fields(assign(raw, "bad", param, ["p"]))
            assert fields["app-tag"] == app_tag, (url, fields)
            assert fields["path"] == "/irtf-agent:data-params[id='p']/url"
    finally:
        raw.close()
