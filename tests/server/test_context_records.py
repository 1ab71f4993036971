"""Context records (draft-wang 5.2, Figure 6) written by the agent as the YANG defines them, over real sessions."""

from __future__ import annotations

from an_agent.model import ContextEntry
from an_agent.server import AgentServer
from rawnc import NS, RawSession, wait_for
from support import IRTF, task_xml


def contexts(raw: RawSession) -> dict[str, ContextEntry]:
    reply = raw.rpc(
        f'<get-config><source><running/></source><filter type="subtree"><context xmlns="{IRTF}"/></filter></get-config>'
    )
    data = reply.find("nc:data", NS)
    assert data is not None
    return {e.id: e for e in ContextEntry.all_from_xml(data)}


def test_assignment_and_negotiation_are_recorded(agent_server: AgentServer) -> None:
    raw = RawSession(agent_server.port)
    try:
        param = (
            f'<data-params xmlns="{IRTF}"><id>k1-alarms</id><dataType>text</dataType><data>ALM-1</data></data-params>'
        )
        edit = task_xml("k1", extra="<msg-data>k1-alarms</msg-data>").replace("<config>", f"<config>{param}")
        assert raw.rpc(f"<edit-config><target><running/></target>{edit}</edit-config>").find("nc:ok", NS) is not None
        wait_for(
            lambda: contexts(raw).get("task:k1") is not None and contexts(raw)["task:k1"].response_time is not None
        )
        record = contexts(raw)["task:k1"]
        assert record.send_from == "tester" and record.send_to == agent_server.profile.name
        assert "diagnose the outage" in record.request_content
        assert record.request_data_param == "k1-alarms"
        assert record.response_time is not None and record.response_time >= record.request_time

        negotiate = (
            f'<task-negotiate xmlns="{IRTF}"><task-sendFrom>planner</task-sendFrom><task-id>k2</task-id>'
            "<content>## target object\nSITE-07\n## task description\nfault diagnosis</content>"
            "<type>FEASIBILITY</type></task-negotiate>"
        )
        assert raw.rpc(negotiate).find(f"{{{IRTF}}}feasible", NS) is not None
        (neg,) = [e for i, e in contexts(raw).items() if i.startswith("negotiate:k2:")]
        assert neg.send_from == "planner" and "fault diagnosis" in neg.request_content
        assert neg.response_time == neg.request_time
        # The records are history: deleting the task keeps its record.
        delete = (
            f'<config><tasks xmlns="{IRTF}"><task xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0" '
            'nc:operation="delete"><task-id>k1</task-id></task></tasks></config>'
        )
        assert raw.rpc(f"<edit-config><target><running/></target>{delete}</edit-config>").find("nc:ok", NS) is not None
        assert "task:k1" in contexts(raw)
    finally:
        raw.close()
