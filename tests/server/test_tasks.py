"""Task lifecycle, task-negotiate and RFC 5277 notifications over real NETCONF sessions."""

from __future__ import annotations

import threading
import time

from lxml import etree

from an_agent.agents.default import DefaultBehaviour
from an_agent.clock import to_rfc3339
from an_agent.model import Task, TaskResult, TaskStatus
from an_agent.runtime.behaviour import TaskRun
from an_agent.server import AgentServer, ServerConfig
from an_agent.yang.context import YangContext
from rawnc import NS, RawSession, error_fields, wait_for
from support import IRTF, task_xml

NOTIF = "urn:ietf:params:xml:ns:netconf:notification:1.0"
NETMOD_NOTIF = "urn:ietf:params:xml:ns:netmod:notification"
ASYNC = "<task-async>true</task-async>"


def status_of(raw: RawSession, task_id: str) -> str | None:
    reply = raw.rpc(
        f'<get><filter type="subtree"><tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id><task-status/></task>'
        "</tasks></filter></get>",
        "status",
    )
    return reply.findtext(f"nc:data/{{{IRTF}}}tasks/{{{IRTF}}}task/{{{IRTF}}}task-status", namespaces=NS)


class Collector:
    """Reads notifications from a subscribed raw session on a thread."""

    def __init__(self, raw: RawSession) -> None:
        self.raw = raw
        self.messages: list[etree._Element] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while True:
                self.messages.append(self.raw.receive())
        except Exception:
            return

    def events(self) -> list[tuple[str, str]]:
        out = []
        for msg in self.messages:
            body = msg.find(f"{{{IRTF}}}condition-notifications")
            if body is not None:
                out.append((body.findtext(f"{{{IRTF}}}task-id") or "", body.findtext(f"{{{IRTF}}}task-status") or ""))
        return out

    def markers(self) -> list[str]:
        return [
            etree.QName(child).localname
            for msg in self.messages
            if msg.tag == f"{{{NOTIF}}}notification"
            for child in msg
            if etree.QName(child).namespace == NETMOD_NOTIF
        ]


def subscribe(raw: RawSession, extra: str = "") -> etree._Element:
    return raw.rpc(f'<create-subscription xmlns="{NOTIF}">{extra}</create-subscription>', "sub")


def test_task_runs_to_finished_with_a_result_and_every_transition_is_notified(agent_server: AgentServer) -> None:
    watcher = RawSession(agent_server.port)
    worker = RawSession(agent_server.port)
    try:
        assert subscribe(watcher).find("nc:ok", NS) is not None
        collector = Collector(watcher)
        reply = worker.rpc(f"<edit-config><target><running/></target>{task_xml('t1')}</edit-config>")
        assert reply.find("nc:ok", NS) is not None
        wait_for(lambda: status_of(worker, "t1") == "finished")
        wait_for(lambda: ("t1", "finished") in collector.events())
        assert collector.events() == [("t1", "created"), ("t1", "processing"), ("t1", "finished")]
        # Each notification is valid against the YANG module.
        for msg in collector.messages:
            body = msg.find(f"{{{IRTF}}}condition-notifications")
            YangContext.default().validate_notification(etree.tostring(body, encoding="unicode"))
        result = worker.rpc(
            f'<get><filter type="subtree"><tasks xmlns="{IRTF}"><task><task-id>t1</task-id><result/></task></tasks></filter></get>'
        )
        assert "executed: diagnose the outage" in (result.findtext(f".//{{{IRTF}}}result/{{{IRTF}}}summary") or "")
    finally:
        watcher.close()
        worker.close()


class SlowBehaviour(DefaultBehaviour):
    """Stays processing until cancelled (or 10 s)."""

    def execute(self, task: Task, run: TaskRun) -> None:
        run.set_status(TaskStatus.PROCESSING)
        if not run.wait_cancelled(10):
            run.finish(TaskResult(summary="done"))


def test_cancel_keeps_the_task_queryable(tmp_path, profile) -> None:  # type: ignore[no-untyped-def]
    with AgentServer(ServerConfig(state_dir=tmp_path, port=0, profile=profile, behaviour=SlowBehaviour())) as server:
        raw = RawSession(server.port)
        try:
            raw.rpc(f"<edit-config><target><running/></target>{task_xml('c1', extra=ASYNC)}</edit-config>")
            wait_for(lambda: status_of(raw, "c1") == "processing")
            cancel = (
                f'<edit-config><target><running/></target><config><tasks xmlns="{IRTF}"><task><task-id>c1</task-id>'
                "<commuType>taskCancel</commuType></task></tasks></config></edit-config>"
            )
            assert raw.rpc(cancel, "cancel").find("nc:ok", NS) is not None
            assert status_of(raw, "c1") == "canceled"
            reason = raw.rpc(f'<get><filter type="subtree"><tasks xmlns="{IRTF}"/></filter></get>').findtext(
                f".//{{{IRTF}}}result/{{{IRTF}}}reason"
            )
            assert reason is not None and "taskCancel" in reason
            # Cancelling an ended task is refused, and says why.
            again = (
                f'<edit-config><target><running/></target><config><tasks xmlns="{IRTF}"><task><task-id>c1</task-id>'
                "<commuType>taskAssign</commuType></task></tasks></config></edit-config>"
            )
            assert raw.rpc(again, "x").find("nc:ok", NS) is not None
            refused = raw.rpc(cancel, "cancel2")
            assert error_fields(refused)["tag"] == "operation-failed"
            assert status_of(raw, "c1") == "canceled"
        finally:
            raw.close()


def negotiate(raw: RawSession, kind: str, task_id: str, target: str, description: str) -> etree._Element:
    return raw.rpc(
        f'<task-negotiate xmlns="{IRTF}"><task-id>{task_id}</task-id><commuType>FeasibilityNegotiate</commuType>'
        f"<content>## target object\n{target}\n## task description\n{description}</content><type>{kind}</type>"
        "</task-negotiate>"
    )


def test_feasibility_negotiation_with_counter_proposal(agent_server: AgentServer) -> None:
    raw = RawSession(agent_server.port)
    try:
        yes = negotiate(raw, "FEASIBILITY", "n1", "SITE-07", "diagnose the fault behind the alarm")
        assert yes.findtext(f"{{{IRTF}}}feasible") == "true", etree.tostring(yes)
        no = negotiate(raw, "FEASIBILITY", "n2", "SITE-07", "increase transmit power by 9 dB")
        assert no.findtext(f"{{{IRTF}}}feasible") == "false"
        assert "fault-diagnosis" in (no.findtext(f"{{{IRTF}}}reason") or "")
        proposal = no.findtext(f"{{{IRTF}}}counter-proposal") or ""
        assert "## task description" in proposal and "SITE-07" in proposal
        # The reply is valid output of the RPC.
        output = "".join(etree.tostring(c, encoding="unicode") for c in no if etree.QName(c).namespace == IRTF)
        YangContext.default().validate_rpc_output(output, "irtf-agent:task-negotiate")
    finally:
        raw.close()


def test_fulfillment_negotiation_evaluates_the_result(agent_server: AgentServer) -> None:
    raw = RawSession(agent_server.port)
    try:
        extra = "<expected-response>outage diagnosed</expected-response>"
        raw.rpc(
            f"<edit-config><target><running/></target>{task_xml('f1', extra=extra, description='outage diagnosed at site')}</edit-config>"
        )
        wait_for(lambda: status_of(raw, "f1") == "finished")
        ok = negotiate(raw, "FULFILLMENT", "f1", "SITE-07", "evaluate the result")
        assert ok.findtext(f"{{{IRTF}}}fulfilled") == "true", etree.tostring(ok)
        unknown = negotiate(raw, "FULFILLMENT", "nope", "SITE-07", "evaluate the result")
        assert unknown.findtext(f"{{{IRTF}}}fulfilled") == "false"
        bad = raw.rpc(f'<task-negotiate xmlns="{IRTF}"><task-id>f1</task-id><type>MAYBE</type></task-negotiate>')
        assert error_fields(bad)["tag"] == "invalid-value"
    finally:
        raw.close()


def test_replay_from_start_time_then_live_in_order(agent_server: AgentServer) -> None:
    raw = RawSession(agent_server.port)
    try:
        before = time.time() - 1
        for n in range(3):
            raw.rpc(f"<edit-config><target><running/></target>{task_xml(f'r{n}')}</edit-config>", f"e{n}")
        wait_for(lambda: all(status_of(raw, f"r{n}") == "finished" for n in range(3)))
        watcher = RawSession(agent_server.port)
        try:
            assert subscribe(watcher, f"<startTime>{to_rfc3339(before)}</startTime>").find("nc:ok", NS) is not None
            collector = Collector(watcher)
            wait_for(lambda: "replayComplete" in collector.markers())
            replayed = collector.events()
            assert len(replayed) == 9
            for n in range(3):
                mine = [s for t, s in replayed if t == f"r{n}"]
                assert mine == ["created", "processing", "finished"]
            raw.rpc(f"<edit-config><target><running/></target>{task_xml('live')}</edit-config>", "live")
            wait_for(lambda: ("live", "finished") in collector.events())
            assert collector.events()[9:] == [("live", "created"), ("live", "processing"), ("live", "finished")]
        finally:
            watcher.close()
    finally:
        raw.close()


def test_stop_time_ends_the_subscription_with_notification_complete(agent_server: AgentServer) -> None:
    raw = RawSession(agent_server.port)
    try:
        start = time.time() - 5
        raw.rpc(f"<edit-config><target><running/></target>{task_xml('s1')}</edit-config>")
        wait_for(lambda: status_of(raw, "s1") == "finished")
        stop = time.time() + 0.5
        watcher = RawSession(agent_server.port)
        try:
            subscribe(watcher, f"<startTime>{to_rfc3339(start)}</startTime><stopTime>{to_rfc3339(stop)}</stopTime>")
            collector = Collector(watcher)
            wait_for(lambda: "notificationComplete" in collector.markers())
            assert collector.markers() == ["replayComplete", "notificationComplete"]
            assert [s for t, s in collector.events() if t == "s1"] == ["created", "processing", "finished"]
            # After notificationComplete the session may subscribe again.
            # (the collector thread owns the channel's input now, so its reply lands there)
            watcher.send_raw(
                f'<rpc xmlns="{NS["nc"]}" message-id="again"><create-subscription xmlns="{NOTIF}"/></rpc>'.encode()
            )
            wait_for(
                lambda: any(
                    m.get("message-id") == "again" and m.find("nc:ok", NS) is not None for m in collector.messages
                )
            )
        finally:
            watcher.close()
    finally:
        raw.close()


def test_subscription_errors(agent_server: AgentServer) -> None:
    raw = RawSession(agent_server.port)
    try:
        assert error_fields(subscribe(raw, "<stream>NOPE</stream>"))["tag"] == "invalid-value"
        future = to_rfc3339(time.time() + 3600)
        assert error_fields(subscribe(raw, f"<startTime>{future}</startTime>"))["tag"] == "bad-element"
        assert error_fields(subscribe(raw, f"<stopTime>{future}</stopTime>"))["tag"] == "missing-element"
        assert subscribe(raw).find("nc:ok", NS) is not None
        # A second subscription on the same session is refused (RFC 5277 has one per session).
        raw2 = raw.rpc(f'<create-subscription xmlns="{NOTIF}"/>', "twice")
        assert raw2.find("nc:rpc-error", NS) is not None
    finally:
        raw.close()


def test_filtered_subscription_and_many_subscribers_in_order(agent_server: AgentServer) -> None:
    watchers = [RawSession(agent_server.port) for _ in range(5)]
    filtered = RawSession(agent_server.port)
    raw = RawSession(agent_server.port)
    try:
        for w in watchers:
            subscribe(w)
        subscribe(
            filtered,
            f'<filter type="subtree"><condition-notifications xmlns="{IRTF}"><task-id>m2</task-id></condition-notifications></filter>',
        )
        collectors = [Collector(w) for w in watchers]
        only_m2 = Collector(filtered)
        for n in range(4):
            raw.rpc(f"<edit-config><target><running/></target>{task_xml(f'm{n}')}</edit-config>", f"e{n}")
        wait_for(lambda: all(len(c.events()) == 12 for c in collectors))
        first = collectors[0].events()
        assert all(c.events() == first for c in collectors)
        for n in range(4):
            assert [s for t, s in first if t == f"m{n}"] == ["created", "processing", "finished"]
        wait_for(lambda: len(only_m2.events()) == 3)
        assert {t for t, _ in only_m2.events()} == {"m2"}
    finally:
        for s in [*watchers, filtered, raw]:
            s.close()


def test_behaviour_that_raises_fails_the_task_with_the_reason(tmp_path, profile) -> None:  # type: ignore[no-untyped-def]
    class Broken(DefaultBehaviour):
        def execute(self, task: Task, run: TaskRun) -> None:
            raise RuntimeError("sensor feed unavailable")

    with AgentServer(ServerConfig(state_dir=tmp_path, port=0, profile=profile, behaviour=Broken())) as server:
        raw = RawSession(server.port)
        try:
            raw.rpc(f"<edit-config><target><running/></target>{task_xml('b1')}</edit-config>")
            wait_for(lambda: status_of(raw, "b1") == "failed")
            reason = raw.rpc(f'<get><filter type="subtree"><tasks xmlns="{IRTF}"/></filter></get>', "r").findtext(
                f".//{{{IRTF}}}result/{{{IRTF}}}reason"
            )
            assert reason is not None and "sensor feed unavailable" in reason
        finally:
            raw.close()
