"""The agent's SQLite store and the datastore on it: transactions, reopening, a damaged file."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from an_agent.errors import RpcError, StoreError
from an_agent.model import IRTF_AGENT_NS, Task
from an_agent.runtime.datastore import Datastore
from an_agent.runtime.edit import YangSchema
from an_agent.store.agent_store import AgentStore, ConfigUnit, TaskState
from an_agent.yang.context import YangContext

IRTF = IRTF_AGENT_NS


@pytest.fixture(scope="module")
def yang() -> YangContext:
    return YangContext.default()


def unit(key: str, position: int, xml: str = "<x/>") -> ConfigUnit:
    return ConfigUnit(key, "", position, xml)


def tasks_config(*task_ids: str) -> etree._Element:
    config = etree.Element("config")
    tasks = etree.SubElement(config, f"{{{IRTF}}}tasks")
    for task_id in task_ids:
        tasks.append(Task(task_id, content="## task description\nx").to_xml())
    return config


def stored_task_ids(datastore: Datastore) -> list[str]:
    tasks = datastore.find(IRTF, "tasks")
    return [] if tasks is None else [t.findtext(f"{{{IRTF}}}task-id") or "" for t in tasks]


def test_everything_survives_a_reopen(tmp_path: Path) -> None:
    store = AgentStore(tmp_path)
    store.save_config([unit("/a", 0), unit("/b", 1)], [], {"t1": "alice"})
    seq = store.save_task_state(TaskState("t1", "created", None, None, None, None, 1.0), (1.0, "<n/>"))
    store.set_meta("log-created", "0.5")
    store.close()
    again = AgentStore(tmp_path)
    try:
        assert [u.unit_key for u in again.load_config()] == ["/a", "/b"]
        assert again.load_task_states()["t1"].status == "created"
        assert [(n.seq, n.xml) for n in again.notifications()] == [(seq, "<n/>")]
        assert again.get_meta("log-created") == "0.5"
        assert again.task_owner("t1") == "alice"
    finally:
        again.close()


def test_a_failed_transaction_changes_nothing(tmp_path: Path) -> None:
    store = AgentStore(tmp_path)
    try:
        store.save_config([unit("/a", 0)], [], {"t1": "alice"})
        bad = ConfigUnit("/b", "", 1, None)  # type: ignore[arg-type]  # NOT NULL violated mid-transaction
        with pytest.raises(StoreError, match="agent state database"):
            store.save_config([unit("/c", 2), bad], ["/a"], {"t2": "bob"})
        assert [u.unit_key for u in store.load_config()] == ["/a"]  # the delete of /a was rolled back too
        assert store.task_owner("t2") is None
        store.save_config([], [], {"t1": "mallory"})
        assert store.task_owner("t1") == "alice"  # the creator stays the owner
        store.delete_task_state("t1")
        assert store.task_owner("t1") is None
    finally:
        store.close()


def test_a_damaged_file_is_a_store_error_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "agent.db").write_bytes(b"this is not a SQLite database" * 200)
    with pytest.raises(StoreError, match="agent state database"):
        AgentStore(tmp_path)


def test_datastore_commit_persists_and_reopens(tmp_path: Path, yang: YangContext) -> None:
    store = AgentStore(tmp_path)
    datastore = Datastore(YangSchema(yang), store)
    with datastore.edit(tasks_config("t1", "t2")) as pending:
        assert sorted(pending.diff.added) == [
            "/irtf-agent:tasks",
            "/irtf-agent:tasks/task[task-id='t1']",
            "/irtf-agent:tasks/task[task-id='t2']",
        ]
        pending.commit({"t1": "alice", "t2": "alice"})
    version = datastore.version
    store.close()
    store = AgentStore(tmp_path)
    try:
        reopened = Datastore(YangSchema(yang), store)
        assert stored_task_ids(reopened) == ["t1", "t2"]
        assert store.task_owner("t2") == "alice"
        assert version == 1
    finally:
        store.close()


def test_an_uncommitted_or_refused_edit_leaves_memory_and_disk_untouched(tmp_path: Path, yang: YangContext) -> None:
    store = AgentStore(tmp_path)
    try:
        datastore = Datastore(YangSchema(yang), store)
        with datastore.edit(tasks_config("t1")) as pending:
            pending.commit()
        with datastore.edit(tasks_config("t2")) as pending:
            assert stored_task_ids(datastore) == ["t1", "t2"]  # staged, visible under the lock
        assert stored_task_ids(datastore) == ["t1"]  # left without commit: rolled back
        with pytest.raises(RpcError, match="refused"), datastore.edit(tasks_config("t3")):
            raise RpcError.operation_failed("refused by the caller")
        assert stored_task_ids(datastore) == ["t1"]
        delete = tasks_config()
        delete[0].set("{urn:ietf:params:xml:ns:netconf:base:1.0}operation", "delete")
        with datastore.edit(delete) as pending:  # whole-tree path
            assert pending.diff.removed
        assert stored_task_ids(datastore) == ["t1"]
        assert [u.unit_key for u in store.load_config()] == [
            "/irtf-agent:tasks",
            "/irtf-agent:tasks/task[task-id='t1']",
        ]
        assert datastore.version == 1
    finally:
        store.close()


def test_an_edit_that_breaks_the_yang_is_refused_before_the_caller_sees_it(tmp_path: Path, yang: YangContext) -> None:
    store = AgentStore(tmp_path)
    try:
        datastore = Datastore(YangSchema(yang), store)
        config = tasks_config("t1")
        etree.SubElement(config[0][0], f"{{{IRTF}}}msg-data").text = "no-such-param"
        with pytest.raises(RpcError) as caught, datastore.edit(config):
            raise AssertionError("an invalid edit must not reach the caller")
        assert caught.value.error_tag == "data-missing"
        assert stored_task_ids(datastore) == [] and store.load_config() == []
    finally:
        store.close()
