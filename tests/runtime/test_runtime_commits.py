"""The candidate, commit and confirmed commit in the operation layer (no sockets): the rules the faces rely on."""

from __future__ import annotations

import pytest
from lxml import etree
from runtimesupport import ALICE, PROMPT, OpsFactory

from an_agent.access.nacm import Nacm, Rule, RuleList
from an_agent.errors import RpcError
from an_agent.model import IRTF_AGENT_NS
from an_agent.runtime.authorization import NacmAuthorizer
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import Commit, EditConfig
from an_agent.yang.context import YangContext

BOB = Principal.authenticated("bob")
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"


def config(*task_ids: str, delete: bool = False) -> etree._Element:
    root = etree.Element(f"{{{NC}}}config", nsmap={"nc": NC})
    tasks = etree.SubElement(root, f"{{{IRTF_AGENT_NS}}}tasks")
    for task_id in task_ids:
        entry = etree.SubElement(tasks, f"{{{IRTF_AGENT_NS}}}task")
        etree.SubElement(entry, f"{{{IRTF_AGENT_NS}}}task-id").text = task_id
        if delete:
            entry.set(f"{{{NC}}}operation", "delete")
            continue
        etree.SubElement(entry, f"{{{IRTF_AGENT_NS}}}task-async").text = "true"
        etree.SubElement(entry, f"{{{IRTF_AGENT_NS}}}content").text = PROMPT
    return root


def running(ops: Operations) -> list[str]:
    tasks = ops.datastore.find(IRTF_AGENT_NS, "tasks")
    return [] if tasks is None else [e.findtext(f"{{{IRTF_AGENT_NS}}}task-id") or "" for e in tasks]


def stage(ops: Operations, session: int, *task_ids: str, delete: bool = False) -> None:
    ops.edit_config(ALICE, session, EditConfig(config(*task_ids, delete=delete), target="candidate"))


def test_a_commit_is_one_admission_and_the_candidate_is_reset(make_ops: OpsFactory) -> None:
    ops = make_ops()
    ops.open_session(1, ALICE, lambda: None)
    stage(ops, 1, "t1", "t2")
    assert running(ops) == [] and ops.config.candidate.modified
    ops.config.commit(ALICE, 1, Commit())
    assert running(ops) == ["t1", "t2"] and not ops.config.candidate.modified
    assert ops.store.task_owner("t1") == "alice"  # owned by the committer, like an edit of running
    assert ops.tasks.state("t1") is not None  # admitted: the task engine has it


def test_a_refused_commit_changes_nothing_and_keeps_the_candidate(make_ops: OpsFactory) -> None:
    ops = make_ops()
    ops.open_session(1, ALICE, lambda: None)
    stage(ops, 1, "ok")
    bad = config("bad")
    content = bad.find(f".//{{{IRTF_AGENT_NS}}}content")
    assert content is not None
    content.text = "no sections at all"
    ops.edit_config(ALICE, 1, EditConfig(bad, target="candidate"))  # a candidate may hold invalid data
    with pytest.raises(RpcError) as refused:
        ops.config.validate(ALICE, 1, "candidate")
    assert refused.value.error_tag == "invalid-value"
    with pytest.raises(RpcError):
        ops.config.commit(ALICE, 1, Commit())
    assert running(ops) == [] and ops.config.candidate.modified  # nothing half-applied; still there to fix


def test_releasing_the_candidate_lock_discards_and_a_modified_candidate_cannot_be_locked(
    make_ops: OpsFactory,
) -> None:
    ops = make_ops()
    ops.open_session(1, ALICE, lambda: None)
    ops.open_session(2, BOB, lambda: None)
    ops.config.lock(ALICE, 1, "candidate")
    with pytest.raises(RpcError) as busy:
        stage(ops, 2, "bobs")
    assert busy.value.error_tag == "in-use" and busy.value.info == {"session-id": "1"}
    stage(ops, 1, "alices")
    ops.close_session(1)  # the session ends holding the lock: its changes go (RFC 6241 8.3.5.2)
    assert not ops.config.candidate.modified
    stage(ops, 2, "bobs")
    ops.open_session(3, ALICE, lambda: None)
    with pytest.raises(RpcError) as dirty:
        ops.config.lock(ALICE, 3, "candidate")
    assert dirty.value.error_tag == "lock-denied" and dirty.value.info == {"session-id": "0"}


def test_follow_up_confirmed_commit_and_rollback_restore_exactly_the_touched_units(make_ops: OpsFactory) -> None:
    ops = make_ops()
    ops.open_session(1, ALICE, lambda: None)
    ops.edit_config(ALICE, 1, EditConfig(config("old")))
    stage(ops, 1, "old", delete=True)
    ops.config.commit(ALICE, 1, Commit(confirmed=True, confirm_timeout=60))
    stage(ops, 1, "new")
    ops.config.commit(ALICE, 1, Commit(confirmed=True, confirm_timeout=60))  # follow-up: one rollback point
    ops.edit_config(ALICE, 1, EditConfig(config("elsewhere")))  # not part of the confirmed commit
    assert sorted(running(ops)) == ["elsewhere", "new"]
    ops.open_session(2, BOB, lambda: None)
    with pytest.raises(RpcError) as other:
        ops.config.cancel_commit(BOB, 2, None)
    assert other.value.error_tag == "in-use"
    ops.config.cancel_commit(ALICE, 1, None)
    assert sorted(running(ops)) == ["elsewhere", "old"]
    assert ops.tasks.state("new") is None and not ops.config.confirming


def test_killing_the_session_of_a_confirmed_commit_rolls_it_back_unless_persist(make_ops: OpsFactory) -> None:
    ops = make_ops()
    ops.open_session(1, ALICE, lambda: None)
    stage(ops, 1, "kept")
    ops.config.commit(ALICE, 1, Commit(confirmed=True, confirm_timeout=60, persist="p"))
    ops.close_session(1)
    assert running(ops) == ["kept"] and ops.config.confirming  # persist: it outlives its session
    ops.open_session(2, BOB, lambda: None)
    with pytest.raises(RpcError) as missing:
        ops.config.commit(BOB, 2, Commit())
    assert missing.value.error_tag == "invalid-value"
    ops.config.commit(BOB, 2, Commit(persist_id="p"))
    assert not ops.config.confirming
    stage(ops, 2, "dropped")
    ops.config.commit(BOB, 2, Commit(confirmed=True, confirm_timeout=60))
    ops.close_session(2)
    assert running(ops) == ["kept"] and not ops.config.confirming


def test_a_rollback_is_not_refused_by_nacm_rules_without_an_admin_rule(make_ops: OpsFactory, yang: YangContext) -> None:
    """The agent undoes a confirmed commit even under a rule set that grants "admin" nothing."""
    ops_user = Principal("ops", frozenset({"ops"}))
    rules = Nacm(
        rule_lists=(
            RuleList("ops", frozenset({"ops"}), (Rule("tasks", "permit", "irtf-agent", "data", "/irtf-agent:tasks"),)),
        )
    )
    ops = make_ops(authorizer=NacmAuthorizer(rules, yang))
    ops.open_session(1, ops_user, lambda: None)
    ops.edit_config(ops_user, 1, EditConfig(config("t1"), target="candidate"))
    ops.config.commit(ops_user, 1, Commit(confirmed=True, confirm_timeout=60))
    assert running(ops) == ["t1"]
    ops.config.cancel_commit(ops_user, 1, None)
    assert running(ops) == []
