"""Constants and builders shared by the server, CLI and interop tests."""

from __future__ import annotations

import json
from xml.sax.saxutils import escape

IRTF = "urn:ietf:params:xml:ns:yang:irtf-agent"

TEST_PROFILE = {
    "irtf-agent:agent": {
        "name": "IETF-TestLab-RAN-1.0",
        "alias": "ran-fault",
        "description": "RAN fault agent under test",
        "type": "fault-management",
        "version": "1.0.0",
        "provider": "TestLab",
        "domain": "Wireless",
        "management-object": "ran-subnet-1",
        "skills": {
            "skill": [
                {
                    "skill-name": "fault-diagnosis",
                    "skill-description": "diagnose base station and cell faults",
                    "skill-tags": ["diagnose", "fault", "alarm"],
                    "input-modes": ["text"],
                    "output-modes": ["text"],
                }
            ]
        },
        "capability": {
            "streaming": False,
            "push-notifications": True,
            "negotiate": ["acp-task-feasibility-negotiation-v1.0", "acp-task-fulfillment-negotiation-v1.0"],
        },
    }
}


def task_xml(
    task_id: str, description: str = "diagnose the outage", target: str = "SITE-07", extra: str = "", params: str = ""
) -> str:
    """An edit's ``<config>``: ``params`` (data-params entries) and a task assigned by ``tester``."""
    return (
        f'<config>{params}<tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id>'
        f"<task-sendFrom>tester</task-sendFrom><commuType>taskAssign</commuType>"
        f"<content>## target object\n{target}\n## task description\n{description}</content>{extra}"
        "</task></tasks></config>"
    )


def payload_param_xml(param_id: str, schema_id: str, payload: object) -> str:
    """A ``data-params`` entry carrying ``{"schema_id": SCHEMA_ID, "payload": PAYLOAD}`` as
    ``application/json;schema=SCHEMA_ID``, the JSON escaped for XML."""
    envelope = json.dumps({"schema_id": schema_id, "payload": payload})
    return (
        f'<data-params xmlns="{IRTF}"><id>{param_id}</id><dataType>text</dataType>'
        f"<format>application/json;schema={schema_id}</format><data>{escape(envelope)}</data></data-params>"
    )
