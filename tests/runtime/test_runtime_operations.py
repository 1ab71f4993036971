"""The operation layer called directly (no sockets): typed requests, one admission pipeline, authorization."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence

import pytest
from lxml import etree
from runtimesupport import ALICE, GOOD, PROMPT, OpsFactory, Recorder, envelope, param, wait_status

from an_agent.errors import RpcError
from an_agent.model import (
    IRTF_AGENT_NS,
    CommuType,
    DataParam,
    NegotiationRequest,
    NegotiationType,
    Task,
    TaskStatus,
)
from an_agent.runtime.access import Access, PermitAll
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import AssignTask, CancelTask, EditConfig, ReadScope, Subscribe

IRTF = IRTF_AGENT_NS


def edit_xml(task_id: str, payload: dict[str, object] | None = None) -> etree._Element:
    """An <edit-config>'s <config>: a task (and its data-param when ``payload`` is given) in one edit."""
    config = etree.Element("config")
    if payload is not None:
        config.append(param(f"{task_id}-p", payload).to_xml())
    task = Task(task_id, send_from="noc-1", content=PROMPT, msg_data=[f"{task_id}-p"] if payload else [])
    tasks = etree.SubElement(config, f"{{{IRTF}}}tasks")
    tasks.append(task.to_xml())
    return config


class Recording(PermitAll):
    """Permits everything and keeps every `Access` it was asked about."""

    def __init__(self) -> None:
        self.seen: list[Access] = []

    def authorize(self, access: Access) -> None:
        self.seen.append(access)


class DenyTasks(PermitAll):
    """Refuses every change of a task and hides /tasks from reads."""

    def authorize(self, access: Access) -> None:
        for touched in access.touched:
            if touched.task is not None or "/task[" in touched.path:
                raise RpcError.access_denied("tasks are not yours", touched.path)

    def read_view(self, principal: Principal, elements: Sequence[etree._Element]) -> list[etree._Element]:
        return [e for e in elements if etree.QName(e).localname != "tasks"]


def test_assign_task_runs_the_pipeline_and_stores_the_owner(make_ops: OpsFactory) -> None:
    behaviour = Recorder()
    ops = make_ops(behaviour)
    created = ops.assign_task(ALICE, AssignTask(Task("t1", send_from="noc-1", content=PROMPT)))
    assert created.status in (TaskStatus.CREATED, TaskStatus.FINISHED)  # the behaviour may already be done
    done = wait_status(ops, "t1", TaskStatus.FINISHED)
    assert done.result is not None and done.result.summary == "done t1"
    assert [t.task_id for t in behaviour.checked] == ["t1"] and [t.task_id for t in behaviour.executed] == ["t1"]
    assert ops.store.task_owner("t1") == "alice"
    logged = [etree.fromstring(n.xml) for n in ops.store.notifications()]
    statuses = [n.findtext(f"{{{IRTF}}}task-status") for n in logged]
    assert statuses[0] == "created" and statuses[-1] == "finished"


def test_edit_config_and_typed_assign_end_in_the_same_validation_once(make_ops: OpsFactory) -> None:
    behaviour = Recorder()
    ops = make_ops(behaviour, schemas=True)
    assert ops.schemas is not None
    calls: list[str] = []
    validate = ops.schemas.engine.validate

    def counting(client_id: str, value: object):  # type: ignore[no-untyped-def]
        calls.append(client_id)
        return validate(client_id, value)

    ops.schemas.engine.validate = counting  # type: ignore[method-assign]
    ops.edit_config(ALICE, 1, EditConfig(edit_xml("e1", GOOD)))
    assert calls == ["noc-1"]  # task-sendFrom names the client
    ops.assign_task(ALICE, AssignTask(Task("a1", content=PROMPT, msg_data=["a1-p"]), (param("a1-p", GOOD),)))
    assert calls == ["noc-1", "alice"]  # no task-sendFrom: the principal
    # The behaviour is handed the payload validated by the pipeline, and never validates it itself.
    assert [p.schema_id if p else None for p in behaviour.payloads_seen] == ["energy_saving_adjust_v1"] * 2
    assert behaviour.payloads_seen[0] is not None and behaviour.payloads_seen[0].values["action"] == "suspend"
    # Kept while the task runs, for its behaviour; given back once it ended (no memo grows with every task).
    wait_status(ops, "e1", TaskStatus.FINISHED)
    deadline = time.monotonic() + 10
    while ops.tasks.payload("e1") is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ops.tasks.payload("e1") is None


def test_an_invalid_payload_refuses_the_whole_edit_and_stores_nothing(make_ops: OpsFactory) -> None:
    behaviour = Recorder()
    ops = make_ops(behaviour, schemas=True)
    with pytest.raises(RpcError) as caught:
        ops.edit_config(ALICE, 1, EditConfig(edit_xml("bad", {"cell_ids": "x", "action": "explode"})))
    err = caught.value
    assert (err.error_tag, err.app_tag) == ("invalid-value", "invalid-structured-payload")
    assert err.path == "/irtf-agent:data-params[id='bad-p']/data"
    assert behaviour.checked == []
    assert ops.read(ALICE, ReadScope(frozenset({(IRTF, "tasks")})), config_only=True) == []
    assert ops.read(ALICE, ReadScope(frozenset({(IRTF, "data-params")})), config_only=True) == []
    assert ops.store.task_owner("bad") is None


def test_payload_validation_runs_outside_the_datastore_lock(make_ops: OpsFactory) -> None:
    ops = make_ops(Recorder(), schemas=True)
    assert ops.schemas is not None
    validate = ops.schemas.engine.validate
    reader_done: list[bool] = []

    def slow(client_id: str, value: object):  # type: ignore[no-untyped-def]
        # A reader on another thread must not wait for this validation.
        reader = threading.Thread(target=lambda: reader_done.append(bool(ops.read(ALICE) is not None)))
        reader.start()
        reader.join(5)
        return validate(client_id, value)

    ops.schemas.engine.validate = slow  # type: ignore[method-assign]
    ops.edit_config(ALICE, 1, EditConfig(edit_xml("s1", GOOD)))
    assert reader_done == [True]


def test_the_authorizer_sees_each_change_once_with_the_parsed_task_and_its_owner(make_ops: OpsFactory) -> None:
    authorizer = Recording()
    ops = make_ops(Recorder(), authorizer=authorizer)
    ops.edit_config(ALICE, 1, EditConfig(edit_xml("t1")))
    creates = [t for a in authorizer.seen for t in a.touched if t.kind == "create" and "/task[" in t.path]
    assert len(creates) == 1  # authorized before validation, not again at commit
    assert [t.path for a in authorizer.seen for t in a.touched if t not in creates] == ["/irtf-agent:tasks"]
    assert creates[0].path == "/irtf-agent:tasks/task[task-id='t1']"
    assert creates[0].task is not None and creates[0].task.send_from == "noc-1"
    assert authorizer.seen[0].principal == ALICE
    wait_status(ops, "t1", TaskStatus.FINISHED)
    authorizer.seen.clear()
    ops.edit_config(ALICE, 1, EditConfig(_merge_content("t1", PROMPT + "\nmore")))
    (update,) = [t for a in authorizer.seen for t in a.touched]
    assert (update.kind, update.owner) == ("update", "alice")
    assert update.task is not None and update.task.content is not None and update.task.content.endswith("more")
    authorizer.seen.clear()
    ops.negotiate(ALICE, NegotiationRequest("t1", NegotiationType.FEASIBILITY, ["x"]))
    assert [(a.kind, a.rpc) for a in authorizer.seen] == [("exec", "irtf-agent:task-negotiate")]


def _merge_content(task_id: str, content: str) -> etree._Element:
    config = etree.Element("config")
    task = etree.SubElement(etree.SubElement(config, f"{{{IRTF}}}tasks"), f"{{{IRTF}}}task")
    etree.SubElement(task, f"{{{IRTF}}}task-id").text = task_id
    etree.SubElement(task, f"{{{IRTF}}}content").text = content
    return config


def test_a_denying_authorizer_stops_the_edit_and_prunes_reads(make_ops: OpsFactory) -> None:
    behaviour = Recorder()
    ops = make_ops(behaviour, authorizer=DenyTasks())
    with pytest.raises(RpcError) as caught:
        ops.assign_task(ALICE, AssignTask(Task("t1", content=PROMPT)))
    assert caught.value.error_tag == "access-denied"
    assert caught.value.path == "/irtf-agent:tasks/task[task-id='t1']"
    assert behaviour.checked == [] and ops.store.task_owner("t1") is None
    ops.edit_config(ALICE, 1, EditConfig(_context_edit()))  # not a task: permitted
    names = {etree.QName(e).localname for e in ops.read(ALICE)}
    assert "tasks" not in names and "agent" in names


def _context_edit() -> etree._Element:
    config = etree.Element("config")
    config.append(param("p1", GOOD).to_xml())
    return config


def test_lock_waits_for_an_edit_in_flight_and_then_keeps_others_out(make_ops: OpsFactory) -> None:
    behaviour = Recorder()
    behaviour.gate = threading.Event()
    ops = make_ops(behaviour)
    for sid in (1, 2):
        ops.open_session(sid, ALICE, lambda: None)
    edit = threading.Thread(target=ops.edit_config, args=(ALICE, 1, EditConfig(edit_xml("t1"))))
    edit.start()
    assert behaviour.entered.wait(5)  # session 1's edit is in flight (inside the commit)
    locked = threading.Event()
    locker = threading.Thread(target=lambda: (ops.config.lock(ALICE, 2), locked.set()))
    locker.start()
    assert not locked.wait(0.3), "<lock> was granted while another session's edit was in flight"
    with pytest.raises(RpcError) as caught:  # the lock is claimed: no new edit of session 1 starts
        ops.edit_config(ALICE, 1, EditConfig(edit_xml("t2")))
    assert (caught.value.error_tag, caught.value.info) == ("in-use", {"session-id": "2"})
    behaviour.gate.set()
    edit.join(5)
    assert locked.wait(5)
    locker.join(5)
    assert ops.get_task(ALICE, "t1").task_id == "t1"  # the in-flight edit committed
    ops.edit_config(ALICE, 2, EditConfig(edit_xml("t3")))  # the lock holder may edit
    ops.close_session(2)  # closing the session releases its lock
    ops.edit_config(ALICE, 1, EditConfig(edit_xml("t4")))


def test_cancel_task_keeps_the_task_queryable_and_refuses_after_the_end(make_ops: OpsFactory) -> None:
    behaviour = Recorder()
    behaviour.gate = threading.Event()
    ops = make_ops(behaviour)
    with pytest.raises(RpcError) as caught:
        ops.cancel_task(ALICE, CancelTask("nope"))
    assert caught.value.error_tag == "data-missing"
    behaviour.gate.set()
    ops.assign_task(ALICE, AssignTask(Task("t1", content=PROMPT)))
    wait_status(ops, "t1", TaskStatus.FINISHED)
    with pytest.raises(RpcError) as caught:
        ops.cancel_task(ALICE, CancelTask("t1"))
    assert caught.value.error_tag == "operation-failed" and caught.value.app_tag == "task-ended"
    assert caught.value.path == "/irtf-agent:tasks/task[task-id='t1']"


def test_cancel_of_a_running_task(make_ops: OpsFactory) -> None:
    class Slow(Recorder):
        def execute(self, task: Task, run) -> None:  # type: ignore[no-untyped-def]
            run.wait_cancelled(10)

    ops = make_ops(Slow())
    ops.assign_task(ALICE, AssignTask(Task("t1", content=PROMPT, task_async=True)))
    cancelled = ops.cancel_task(ALICE, CancelTask("t1"))
    assert cancelled.status == TaskStatus.CANCELED and cancelled.commu_type == CommuType.TASK_CANCEL
    # Again: a no-op (NETCONF's edit), unless the caller refuses ended tasks (A2A: not cancelable).
    assert ops.cancel_task(ALICE, CancelTask("t1")).status == TaskStatus.CANCELED
    with pytest.raises(RpcError) as caught:
        ops.cancel_task(ALICE, CancelTask("t1", refuse_ended=True))
    assert caught.value.error_tag == "operation-failed" and caught.value.app_tag == "task-ended"


def test_negotiate_hands_the_behaviour_the_stored_task_with_its_state(make_ops: OpsFactory) -> None:
    behaviour = Recorder()
    ops = make_ops(behaviour)
    ops.negotiate(ALICE, NegotiationRequest("none", NegotiationType.FEASIBILITY, ["x"]))
    ops.assign_task(ALICE, AssignTask(Task("t1", content=PROMPT)))
    wait_status(ops, "t1", TaskStatus.FINISHED)
    ops.negotiate(ALICE, NegotiationRequest("t1", NegotiationType.FULFILLMENT, ["x"]))
    assert behaviour.negotiated[0] is None
    stored = behaviour.negotiated[1]
    assert stored is not None and stored.status == TaskStatus.FINISHED


def test_subscribe_replays_the_durable_log_and_is_one_per_session(make_ops: OpsFactory) -> None:
    ops = make_ops()
    ops.open_session(7, ALICE, lambda: None)
    ops.assign_task(ALICE, AssignTask(Task("t1", content=PROMPT)))
    wait_status(ops, "t1", TaskStatus.FINISHED)
    received: list[str] = []
    subscription = ops.subscribe(ALICE, 7, Subscribe(start_time=0.0), received.append)
    subscription.start()
    deadline = time.monotonic() + 10
    while not any("replayComplete" in m for m in received) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert any("finished" in m for m in received) and "replayComplete" in received[-1]
    with pytest.raises(RpcError) as caught:
        ops.subscribe(ALICE, 7, Subscribe(), received.append)
    assert "already has a subscription" in caught.value.message
    with pytest.raises(RpcError) as caught:
        ops.subscribe(ALICE, 7, Subscribe(stop_time=5.0), received.append)
    assert caught.value.error_tag == "missing-element"
    ops.close_session(7)


def test_rpc_errors_are_complete_at_construction() -> None:
    err = RpcError.invalid_value("bad", "/x", app_tag="tag", info={"bad-element": "x"})
    assert (err.app_tag, err.info, str(err)) == ("tag", {"bad-element": "x"}, "invalid-value (application) at /x: bad")
    with pytest.raises(AttributeError):
        err.info = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        err.app_tag = "other"  # type: ignore[misc]


def test_a_data_param_changed_by_the_same_edit_is_validated_as_it_will_be_stored(make_ops: OpsFactory) -> None:
    ops = make_ops(Recorder(), schemas=True)
    ops.edit_config(ALICE, 1, EditConfig(_context_edit()))  # p1: a valid payload
    config = etree.Element("config")
    partial = etree.SubElement(config, f"{{{IRTF}}}data-params")  # only new data: the format stays stored
    etree.SubElement(partial, f"{{{IRTF}}}id").text = "p1"
    etree.SubElement(partial, f"{{{IRTF}}}data").text = envelope({"cell_ids": "x", "action": "explode"})
    etree.SubElement(config, f"{{{IRTF}}}tasks").append(Task("t1", content=PROMPT, msg_data=["p1"]).to_xml())
    with pytest.raises(RpcError) as caught:
        ops.edit_config(ALICE, 1, EditConfig(config))
    assert (caught.value.error_tag, caught.value.app_tag) == ("invalid-value", "invalid-structured-payload")
    (stored,) = ops.read(ALICE, ReadScope(frozenset({(IRTF, "data-params")})), config_only=True)
    assert json.loads(DataParam.from_xml(stored).data or "")["payload"] == GOOD  # rolled back
    assert ops.read(ALICE, ReadScope(frozenset({(IRTF, "tasks")})), config_only=True) == []
