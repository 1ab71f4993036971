"""Stock ncclient against the Netopeer2-like contract: YANG library, with-defaults, candidate, confirmed
commit, locks, validate, rollback-on-error, NMDA <get-data>, NACM on the new operations.

ncclient is driven as any operator would drive it (its own manager, RPCError fields); the agent is only
started here. docs/reference/netconf-capabilities.md is the contract these tests check.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from lxml import etree
from ncclient import manager
from ncclient.operations import RPCError
from ncclient.xml_ import to_ele

from an_agent.access.users import hash_password
from an_agent.agents.default import DefaultBehaviour
from an_agent.model import AgentProfile
from an_agent.server import AgentServer, ServerConfig

pytestmark = pytest.mark.interop

IRTF = "urn:ietf:params:xml:ns:yang:irtf-agent"
YL = "urn:ietf:params:xml:ns:yang:ietf-yang-library"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
WD_ATTR = "{urn:ietf:params:xml:ns:netconf:default:1.0}default"
NMDA = "urn:ietf:params:xml:ns:yang:ietf-netconf-nmda"
TASKS = ("subtree", f'<tasks xmlns="{IRTF}"/>')
USERS = """users:
  - name: admin
    password: "{pw}"
    groups: [admin]
  - name: other
    password: "{pw}"
    groups: [admin]
  - name: carol
    password: "{pw}"
    groups: []
"""


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    users = tmp_path / "users.yaml"
    users.write_text(USERS.format(pw=hash_password("pw")))
    users.chmod(0o600)
    config = ServerConfig(
        state_dir=tmp_path / "state",
        port=0,
        profile=profile,
        users_file=users,
        schemas="off",
        behaviour=DefaultBehaviour(work_seconds=30),  # tasks keep running while a test rolls them back
    )
    with AgentServer(config) as srv:
        yield srv


def connect(server: AgentServer, user: str = "admin") -> manager.Manager:
    return manager.connect(
        host="127.0.0.1",
        port=server.port,
        username=user,
        password="pw",
        hostkey_verify=False,
        look_for_keys=False,
        allow_agent=False,
        timeout=30,
    )


def task(task_id: str, async_leaf: str | None = "true", content: str = "diagnose SITE-07") -> str:
    leaf = f"<task-async>{async_leaf}</task-async>" if async_leaf is not None else ""
    return (
        f'<config><tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id><task-sendFrom>ops</task-sendFrom>'
        f"{leaf}<content>## target object\nSITE-07\n## task description\n{content}</content></task></tasks></config>"
    )


def task_ids(reply: object) -> list[str]:
    data = to_ele(reply.data_xml)  # type: ignore[attr-defined]
    return [e.text or "" for e in data.iter(f"{{{IRTF}}}task-id")]


def test_yang_library_matches_the_hello(server: AgentServer) -> None:
    with connect(server) as m:
        caps = list(m.server_capabilities)
        library_cap = next(c for c in caps if c.startswith("urn:ietf:params:netconf:capability:yang-library:1.1?"))
        params = parse_qs(urlsplit(library_cap).query)
        assert params["revision"] == ["2019-01-04"]
        both = f'<filter xmlns="{NC}" type="subtree"><yang-library xmlns="{YL}"/><modules-state xmlns="{YL}"/></filter>'
        data = to_ele(m.get(filter=to_ele(both)).data_xml)
    library = data.find(f"{{{YL}}}yang-library")
    assert library is not None
    assert library.findtext(f"{{{YL}}}content-id") == params["content-id"][0]
    assert data.findtext(f"{{{YL}}}modules-state/{{{YL}}}module-set-id") == params["content-id"][0]
    served = {
        e.findtext(f"{{{YL}}}name"): (
            e.findtext(f"{{{YL}}}revision"),
            sorted(x.text or "" for x in e.iterfind(f"{{{YL}}}feature")),
        )
        for e in library.iterfind(f"{{{YL}}}module-set/{{{YL}}}module")
    }
    announced = {}
    for cap in caps:
        query = parse_qs(urlsplit(cap).query)
        if "module" in query:
            features = query.get("features", [""])[0]
            announced[query["module"][0]] = (
                query.get("revision", [None])[0],
                sorted(f for f in features.split(",") if f),
            )
    imported = {e.findtext(f"{{{YL}}}name") for e in library.iterfind(f"{{{YL}}}module-set/{{{YL}}}import-only-module")}
    assert {name: v for name, v in announced.items() if name not in imported} == served
    assert {"ietf-yang-library", "irtf-agent", "ietf-netconf-with-defaults", "ietf-netconf-nmda"} <= set(served)
    assert served["ietf-netconf"][1] == sorted(
        ["candidate", "confirmed-commit", "rollback-on-error", "validate", "writable-running", "xpath"]
    )
    datastores = {e.findtext(f"{{{YL}}}name") for e in library.iterfind(f"{{{YL}}}datastore")}
    assert datastores == {"ds:running", "ds:candidate", "ds:operational"}
    for feature in (":candidate:1.0", ":confirmed-commit:1.1", ":validate:1.1", ":rollback-on-error:1.0"):
        assert f"urn:ietf:params:netconf:capability{feature}" in caps


def test_with_defaults_modes_on_get_config_and_get(server: AgentServer) -> None:
    with connect(server) as m:
        # The candidate holds a task that leaves task-async (default false) unset, and one that sets it.
        m.edit_config(target="candidate", config=task("implicit", None) + "")
        m.edit_config(target="candidate", config=task("explicit", "false"))

        def async_leaves(mode: str | None) -> dict[str, tuple[str | None, str | None]]:
            reply = m.get_config(source="candidate", filter=TASKS, with_defaults=mode)
            out = {}
            for entry in to_ele(reply.data_xml).iter(f"{{{IRTF}}}task"):
                leaf = entry.find(f"{{{IRTF}}}task-async")
                out[entry.findtext(f"{{{IRTF}}}task-id") or ""] = (
                    None if leaf is None else leaf.text,
                    None if leaf is None else leaf.get(WD_ATTR),
                )
            return out

        nothing = (None, None)
        assert async_leaves(None) == {"implicit": nothing, "explicit": ("false", None)}  # basic mode: explicit
        assert async_leaves("explicit") == {"implicit": nothing, "explicit": ("false", None)}
        assert async_leaves("report-all") == {"implicit": ("false", None), "explicit": ("false", None)}
        assert async_leaves("report-all-tagged") == {"implicit": ("false", "true"), "explicit": ("false", "true")}
        assert async_leaves("trim") == {"implicit": nothing, "explicit": nothing}
        m.discard_changes()
        # <get> carries the parameter too (and the NACM view and filters still apply).
        m.edit_config(target="running", config=task("run-1"))
        got = to_ele(m.get(filter=TASKS, with_defaults="report-all-tagged").data_xml)
        assert [e.text for e in got.iter(f"{{{IRTF}}}task-id")] == ["run-1"]
        # Defaults are added to the agent's data only: no RFC 6022 statistics of 0 that it does not count.
        assert "<statistics" not in m.get(with_defaults="report-all").data_xml
        with pytest.raises(RPCError) as bad:
            m.dispatch(
                to_ele(
                    f'<get xmlns="{NC}"><with-defaults xmlns="urn:ietf:params:xml:ns:yang:'
                    'ietf-netconf-with-defaults">everything</with-defaults></get>'
                )
            )
        assert bad.value.tag == "invalid-value"


@pytest.mark.slow
def test_confirmed_commit_times_out_and_running_is_as_before(server: AgentServer) -> None:
    with connect(server) as m:
        m.edit_config(target="running", config=task("kept"))
        m.edit_config(target="candidate", config=task("tried"))
        assert task_ids(m.get_config(source="running", filter=TASKS)) == ["kept"]
        m.commit(confirmed=True, timeout="1")
        assert task_ids(m.get_config(source="running", filter=TASKS)) == ["kept", "tried"]
        assert server.operations.tasks.state("tried") is not None  # admitted: the behaviour has it
        deadline = time.monotonic() + 10
        while task_ids(m.get_config(source="running", filter=TASKS)) != ["kept"]:
            assert time.monotonic() < deadline, "the confirmed commit was not rolled back"
            time.sleep(0.2)
        assert task_ids(m.get_config(source="candidate", filter=TASKS)) == ["kept"]
        assert server.operations.tasks.state("tried") is None  # the rolled-back task is gone, not orphaned
        with pytest.raises(RPCError) as none:
            m.cancel_commit()
        assert none.value.tag == "operation-failed"


@pytest.mark.slow
def test_confirmed_commit_then_confirming_commit_keeps_the_change(server: AgentServer) -> None:
    with connect(server) as m:
        m.edit_config(target="candidate", config=task("confirmed"))
        m.commit(confirmed=True, timeout="1")
        m.commit()  # confirming
        time.sleep(1.5)
        assert task_ids(m.get_config(source="running", filter=TASKS)) == ["confirmed"]


def test_persist_lets_another_session_confirm_and_session_loss_rolls_back(server: AgentServer) -> None:
    with connect(server) as first, connect(server, "other") as second:
        first.edit_config(target="candidate", config=task("persisted"))
        first.commit(confirmed=True, timeout="60", persist="token-1")
        with pytest.raises(RPCError) as wrong:
            second.commit(persist_id="token-2")
        assert wrong.value.tag == "invalid-value"
        second.commit(persist_id="token-1")  # confirms from another session
        assert task_ids(second.get_config(source="running", filter=TASKS)) == ["persisted"]
    # Without persist, losing the session rolls the confirmed commit back (RFC 6241 8.4.5.1).
    m = connect(server)
    m.edit_config(target="candidate", config=task("lost"))
    m.commit(confirmed=True, timeout="60")
    with connect(server, "other") as watcher:
        with pytest.raises(RPCError) as busy:
            watcher.commit()
        assert busy.value.tag == "in-use"
        m.close_session()
        deadline = time.monotonic() + 10
        while task_ids(watcher.get_config(source="running", filter=TASKS)) != ["persisted"]:
            assert time.monotonic() < deadline, "the session's confirmed commit was not rolled back"
            time.sleep(0.1)


def test_cancel_commit_puts_running_back(server: AgentServer) -> None:
    with connect(server) as m:
        m.edit_config(target="running", config=task("base"))
        m.edit_config(
            target="candidate",
            config=f'<config><tasks xmlns="{IRTF}" xmlns:nc="{NC}"><task nc:operation="delete">'
            "<task-id>base</task-id></task></tasks></config>",
        )
        m.commit(confirmed=True, timeout="60")
        assert task_ids(m.get_config(source="running", filter=TASKS)) == []
        m.cancel_commit()
        assert task_ids(m.get_config(source="running", filter=TASKS)) == ["base"]


def test_lock_contention_is_lock_denied_with_the_holders_session_id(server: AgentServer) -> None:
    with connect(server) as holder, connect(server, "other") as rival:
        for store in ("candidate", "running"):
            holder.lock(store)
            with pytest.raises(RPCError) as denied:
                rival.lock(store)
            assert denied.value.tag == "lock-denied"
            assert (
                denied.value.info is not None and f"<session-id>{holder.session_id}</session-id>" in denied.value.info
            )
        with pytest.raises(RPCError) as in_use:
            rival.edit_config(target="candidate", config=task("blocked"))
        assert in_use.value.tag == "in-use"
        holder.edit_config(target="candidate", config=task("mine"))
        holder.unlock("candidate")  # RFC 6241 8.3.5.2: releasing the lock discards uncommitted changes
        assert task_ids(rival.get_config(source="candidate", filter=TASKS)) == []
        rival.edit_config(target="candidate", config=task("dirty"))
        with pytest.raises(RPCError) as dirty:
            holder.lock("candidate")  # RFC 6241 7.5: not while the candidate holds changes
        assert dirty.value.tag == "lock-denied"
        holder.unlock("running")


def test_validate_candidate_and_inline_config(server: AgentServer) -> None:
    with connect(server) as m:
        m.edit_config(target="candidate", config=task("ok"))
        m.validate(source="candidate")
        m.edit_config(target="candidate", config=task("bad").replace("## task description\n", "## note\n"))
        with pytest.raises(RPCError) as refused:
            m.validate(source="candidate")
        assert refused.value.tag == "invalid-value" and refused.value.app_tag == "task-description-missing"
        assert task_ids(m.get_config(source="running", filter=TASKS)) == []  # validate changed nothing
        with pytest.raises(RPCError):
            m.commit()  # the same check, at commit: nothing half-applied
        assert task_ids(m.get_config(source="running", filter=TASKS)) == []
        m.validate(source=to_ele(task("inline")))
        m.edit_config(target="running", config=task("probe"), test_option="test-only")
        assert task_ids(m.get_config(source="running", filter=TASKS)) == []  # tested, not applied
        with pytest.raises(RPCError) as probe:
            m.edit_config(target="running", config=task("probe", "maybe"), test_option="test-only")
        assert probe.value.tag == "invalid-value"


def test_rollback_on_error_leaves_nothing_half_applied(server: AgentServer) -> None:
    with connect(server) as m:
        m.edit_config(target="running", config=task("before"))
        mixed = (
            f'<config><data-params xmlns="{IRTF}"><id>p1</id><dataType>TEXT</dataType><data>x</data></data-params>'
            f'<tasks xmlns="{IRTF}"><task><task-id>good</task-id><task-sendFrom>ops</task-sendFrom>'
            "<task-async>true</task-async><content>## target object\nA\n## task description\nfine</content></task>"
            "<task><task-id>broken</task-id><task-sendFrom>ops</task-sendFrom><task-async>maybe</task-async>"
            "<content>## target object\nA\n## task description\nfine</content></task></tasks></config>"
        )
        with pytest.raises(RPCError) as refused:
            m.edit_config(target="running", config=mixed, error_option="rollback-on-error")
        assert refused.value.tag == "invalid-value"
        running = to_ele(m.get_config(source="running").data_xml)
        assert [e.text for e in running.iter(f"{{{IRTF}}}task-id")] == ["before"]
        assert running.find(f".//{{{IRTF}}}data-params") is None
        with pytest.raises(RPCError) as unsupported:
            m.edit_config(target="running", config=task("x"), error_option="continue-on-error")
        assert unsupported.value.tag == "operation-not-supported"


def test_get_data_reads_running_candidate_and_operational(server: AgentServer) -> None:
    with connect(server) as m:
        m.edit_config(target="running", config=task("nmda"))
        m.edit_config(target="candidate", config=task("staged"))

        def get_data(datastore: str, extra: str = "") -> etree._Element:
            reply = m.dispatch(
                to_ele(
                    f'<get-data xmlns="{NMDA}" xmlns:ds="urn:ietf:params:xml:ns:yang:ietf-datastores">'
                    f'<datastore>ds:{datastore}</datastore><subtree-filter><tasks xmlns="{IRTF}"/></subtree-filter>'
                    f"{extra}</get-data>"
                )
            )
            return to_ele(reply.xml)

        assert [e.text for e in get_data("running").iter(f"{{{IRTF}}}task-id")] == ["nmda"]
        assert [e.text for e in get_data("candidate").iter(f"{{{IRTF}}}task-id")] == ["nmda", "staged"]
        operational = get_data("operational")
        assert operational.find(f".//{{{IRTF}}}task-status") is not None  # state (config false) too
        state = get_data("operational", "<config-filter>false</config-filter>")
        assert state.find(f".//{{{IRTF}}}content") is None and state.find(f".//{{{IRTF}}}task-status") is not None
        tagged = get_data("running", "<with-defaults>report-all-tagged</with-defaults>")
        assert tagged.find(f".//{{{IRTF}}}task-async") is not None

        def edit_data(datastore: str, task_id: str) -> None:
            body = task(task_id).removeprefix("<config>").removesuffix("</config>")
            m.dispatch(
                to_ele(
                    f'<edit-data xmlns="{NMDA}" xmlns:ds="urn:ietf:params:xml:ns:yang:ietf-datastores">'
                    f"<datastore>ds:{datastore}</datastore><config>{body}</config></edit-data>"
                )
            )

        edit_data("candidate", "via-edit-data")
        assert "via-edit-data" in [e.text for e in get_data("candidate").iter(f"{{{IRTF}}}task-id")]
        assert "via-edit-data" not in [e.text for e in get_data("running").iter(f"{{{IRTF}}}task-id")]
        with pytest.raises(RPCError) as read_only:
            edit_data("operational", "nope")
        assert read_only.value.tag == "invalid-value"


def test_nacm_covers_commit_and_the_candidate(server: AgentServer) -> None:
    """carol (no group; write-default deny) may stage in the candidate but not commit it; reads follow NACM."""
    with connect(server, "carol") as carol:
        carol.edit_config(target="candidate", config=task("carols"))
        with pytest.raises(RPCError) as denied:
            carol.commit()
        assert denied.value.tag == "access-denied"
        carol.discard_changes()
        with pytest.raises(RPCError) as direct:
            carol.dispatch(
                to_ele(
                    f'<copy-config xmlns="{NC}"><target><running/></target><source>{task("copied")}</source></copy-config>'
                )
            )
        assert direct.value.tag == "access-denied"
        assert carol.get(filter=("subtree", f'<yang-library xmlns="{YL}"/>')).data_xml.count("module-set") >= 1
    with connect(server) as admin:
        assert task_ids(admin.get_config(source="running", filter=TASKS)) == []


def test_commit_applies_the_candidates_changes_not_a_stale_copy(server: AgentServer) -> None:
    """What reached running after the candidate was edited (another session's task) survives the commit."""
    with connect(server) as operator, connect(server, "other") as peer:
        operator.edit_config(target="candidate", config=task("staged"))
        peer.edit_config(target="running", config=task("meanwhile"))
        operator.commit()
        assert sorted(task_ids(operator.get_config(source="running", filter=TASKS))) == ["meanwhile", "staged"]
        # Deleting in the candidate deletes in running; the untouched task stays.
        operator.edit_config(
            target="candidate",
            config=f'<config><tasks xmlns="{IRTF}" xmlns:nc="{NC}"><task nc:operation="delete">'
            "<task-id>staged</task-id></task></tasks></config>",
        )
        operator.commit()
        assert task_ids(operator.get_config(source="running", filter=TASKS)) == ["meanwhile"]
