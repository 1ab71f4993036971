"""Splitting and joining chunked data-params, and the url allow-list, without sockets."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from an_agent.errors import RpcError
from an_agent.model import DataParam, DataType, Task
from an_agent.model.chunks import ChunkLimits, assignment_edits, join_chunks, split_data_param, split_for_task
from an_agent.runtime.large_data import DataPolicy, DataResolver


def test_split_then_join_gives_back_the_data_in_order() -> None:
    param = DataParam("d", DataType.TEXT, format="text/plain", data="abcdefghij")
    pieces = split_data_param(param, 3)
    assert [(p.id, p.data, p.chunked, p.finished) for p in pieces] == [
        ("d#1", "abc", True, None),
        ("d#2", "def", True, None),
        ("d#3", "ghi", True, None),
        ("d#4", "j", True, True),
    ]
    assert all(p.data_size == "10" and p.format == "text/plain" for p in pieces)
    (joined,) = join_chunks(list(reversed(pieces)))
    assert joined == replace(param, data_size="10")  # the pieces said the size of the whole
    assert split_data_param(param, 10) == [param]


def test_split_for_task_names_the_pieces_and_edits_respect_the_budget() -> None:
    task = Task("t", msg_data=["small", "big"])
    params = [DataParam("small", data="x"), DataParam("big", data="y" * 10)]
    split, pieces = split_for_task(task, params, 4)
    assert split.msg_data == ["small", "big#1", "big#2", "big#3"] and task.msg_data == ["small", "big"]
    assert [p.id for p in pieces] == split.msg_data
    edits = assignment_edits(task, params, chunk_chars=4, edit_chars=5)
    assert [len(e) for e in edits] == [2, 1, 2]  # small+big#1, big#2, big#3 + the task
    assert edits[-1][-1].tag.endswith("tasks")


@pytest.mark.parametrize(
    ("pieces", "app_tag", "path"),
    [
        ([("d#1", None), ("d#3", True)], "chunk-missing", "/irtf-agent:data-params[id='d#2']"),
        ([("d#1", None), ("d#2", None)], "chunk-missing", "/irtf-agent:data-params[id='d#2']/finished"),
        ([("d#1", True), ("d#2", True)], "chunk-after-finished", "/irtf-agent:data-params[id='d#1']/finished"),
        ([("d", True)], "chunk-misnamed", "/irtf-agent:data-params[id='d']/chunked"),
        ([("d#0", True)], "chunk-misnamed", "/irtf-agent:data-params[id='d#0']/chunked"),
    ],
)
def test_join_refuses_gaps_and_misnamed_pieces_precisely(
    pieces: list[tuple[str, bool | None]], app_tag: str, path: str
) -> None:
    with pytest.raises(RpcError) as caught:
        join_chunks([DataParam(pid, data="x", chunked=True, finished=done) for pid, done in pieces])
    assert caught.value.error_tag == "invalid-value" and caught.value.app_tag == app_tag and caught.value.path == path


def test_join_limits() -> None:
    pieces = split_data_param(DataParam("d", data="x" * 10), 2)
    with pytest.raises(RpcError) as caught:
        join_chunks(pieces, ChunkLimits(max_chunks=4))
    assert caught.value.app_tag == "chunks-too-large" and "at most 4" in caught.value.message
    with pytest.raises(RpcError) as caught:
        join_chunks(pieces, ChunkLimits(max_chars=9))
    assert caught.value.app_tag == "chunks-too-large" and "10 characters" in caught.value.message


def test_url_size_limit_and_symlink_escape(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "data").mkdir(parents=True)
    (state / "data" / "big.txt").write_text("z" * 100)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (state / "data" / "link.txt").symlink_to(outside)
    resolver = DataResolver(state, DataPolicy(max_url_bytes=50))
    with pytest.raises(RpcError) as caught:
        resolver.resolve([DataParam("b", url=(state / "data" / "big.txt").as_uri())])
    assert caught.value.app_tag == "url-data-too-large"
    with pytest.raises(RpcError) as caught:
        resolver.resolve([DataParam("l", url=(state / "data" / "link.txt").as_uri())])
    assert caught.value.app_tag == "url-not-allowed"
    inline = DataParam("i", url="http://elsewhere/x", data="given inline")
    assert resolver.resolve([inline]) == [inline]  # data given: the url is not fetched
