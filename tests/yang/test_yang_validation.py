"""Valid and invalid instance documents, and the <rpc-error> each invalid one becomes."""

from __future__ import annotations

from xml.sax.saxutils import escape

import pytest
from yangdocs import AGT, FIGURE_7, NC, data_param, rpc_error, task

from an_agent.yang import YangContext

T1 = "/irtf-agent:tasks/task[task-id='t1']"


def context_entry(extra: str = "", entry_id: str = "c1") -> str:
    return (
        f'<context xmlns="{AGT}"><id>{entry_id}</id><sendFrom>IRTF-A-Wireless-1.0</sendFrom>'
        f"<sendTo>IRTF-B-IP-1.0</sendTo><request-info><content>find the root cause</content>"
        f"<time>2025-04-21T14:19:00+08:00</time></request-info>{extra}</context>"
    )


# ----------------------------------------------------------------- prompts


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(FIGURE_7, id="draft-figure-7"),
        pytest.param("##task description\nrestore cell 12", id="no-space"),
        pytest.param("## task description\nrestore cell 12", id="space"),
        pytest.param("##\ttask description\trestore cell 12", id="tab"),
        pytest.param("## Task Description\n<description>x</description>", id="capitalised"),
        pytest.param(
            "You are a task executor.\n\n##target object\ncell 12\n## task description\nrestore it\n", id="prose"
        ),
        pytest.param("##task description restore cell 12", id="one-line"),
    ],
)
def test_task_content_with_a_task_description_is_valid(ctx: YangContext, content: str) -> None:
    ctx.validate_config(task(content=content))


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("##target object\n<object>cell 12</object>", id="no-section"),
        pytest.param("restore cell 12", id="plain-text"),
        pytest.param("##task description\n##environmental information\nx", id="empty-section"),
        pytest.param("##task description   \n", id="blank-section"),
        pytest.param("#task description\nrestore", id="single-hash"),
        pytest.param("##taskdescription\nrestore", id="no-space-between-words"),
    ],
)
def test_task_content_without_a_task_description_is_rejected(ctx: YangContext, content: str) -> None:
    err = rpc_error(ctx.validate_config, task(content=content))
    assert (err.error_type, err.error_tag, err.app_tag) == ("application", "invalid-value", "task-description-missing")
    assert err.path == f"{T1}/content"
    assert "##task description" in err.message and f"{T1}/content" in err.message


def test_negotiation_content_needs_a_target_object(ctx: YangContext) -> None:
    ctx.validate_rpc(negotiate(f"<content>{escape(FIGURE_7)}</content><type>FEASIBILITY</type>"))
    err = rpc_error(ctx.validate_rpc, negotiate("<content>##task description\nx</content><type>FEASIBILITY</type>"))
    assert (err.error_tag, err.app_tag) == ("invalid-value", "target-object-missing")
    assert err.path == "/irtf-agent:task-negotiate/content"


def test_a_long_prompt_is_matched(ctx: YangContext) -> None:
    body = "x" * 200_000
    ctx.validate_config(task(content=f"{body}\n## task description\n{body}"))
    assert rpc_error(ctx.validate_config, task(content=body)).app_tag == "task-description-missing"


# ------------------------------------------------------------ config data


def test_a_full_datastore_is_valid(ctx: YangContext) -> None:
    refs = "<msg-data>d1</msg-data><msg-data>d2</msg-data><context>c1</context>"
    extra = (
        "<commuType>taskAssign</commuType><task-sendFrom>a</task-sendFrom><task-async>true</task-async>"
        "<task-subscription><subscript-protocol>NETCONF</subscript-protocol></task-subscription>"
        "<expected-response>text/plain</expected-response>"
        "<term-explains><term>RRU</term><explaination>remote radio unit</explaination></term-explains>" + refs
    )
    response = "<response-info><dataParam>d2</dataParam><time>2025-04-21T14:20:00Z</time></response-info>"
    neg = "<neg-base><commuType>FeasibilityNegotiate</commuType><content>ok</content><msg-data>d1</msg-data></neg-base>"
    ctx.validate_config(task(extra=extra) + data_param("d1") + data_param("d2") + context_entry(response + neg))


@pytest.mark.parametrize("wrapper", ["data", "config"])
def test_a_wrapped_datastore_is_valid(ctx: YangContext, wrapper: str) -> None:
    ctx.validate_config(f'<?xml version="1.0"?><{wrapper} xmlns="{NC}">{task()}{data_param()}</{wrapper}>')
    err = rpc_error(ctx.validate_config, f'<{wrapper} xmlns="{NC}">{task(extra="<bogus/>")}</{wrapper}>')
    assert err.error_tag == "unknown-element"


def test_an_empty_datastore_is_valid(ctx: YangContext) -> None:
    ctx.validate_config("")
    ctx.validate_config(f'<data xmlns="{NC}"/>')


def test_wrong_type(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_config, task(extra="<task-async>maybe</task-async>"))
    assert (err.error_type, err.error_tag, err.path) == ("application", "invalid-value", f"{T1}/task-async")
    assert '"maybe"' in err.message


def test_wrong_enumeration(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_config, task(extra="<commuType>taskDelete</commuType>"))
    assert (err.error_tag, err.path) == ("invalid-value", f"{T1}/commuType")
    assert "taskDelete" in err.message


def test_bad_timestamp(ctx: YangContext) -> None:
    doc = context_entry().replace("2025-04-21T14:19:00+08:00", "2025-04-21 14:19:00+0")
    err = rpc_error(ctx.validate_config, doc)
    assert (err.error_tag, err.path) == ("invalid-value", "/irtf-agent:context[id='c1']/request-info/time")


def test_unknown_element(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_config, task(extra="<priority>high</priority>"))
    assert (err.error_type, err.error_tag, err.path) == ("application", "unknown-element", T1)
    assert err.info == {"bad-element": "priority"}
    assert "priority" in err.message


def test_unknown_top_level_element(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_config, f'<task xmlns="{AGT}"/>')
    assert (err.error_tag, err.info) == ("unknown-element", {"bad-element": "task"})


def test_unknown_namespace(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_config, '<tasks xmlns="urn:example:other"/>')
    assert (err.error_type, err.error_tag) == ("protocol", "unknown-namespace")
    assert err.info == {"bad-element": "tasks", "bad-namespace": "urn:example:other"}


def test_missing_mandatory_leaf(ctx: YangContext) -> None:
    doc = task().replace("</tasks>", "<task><task-id>t2</task-id></task></tasks>")
    err = rpc_error(ctx.validate_config, doc)
    assert (err.error_type, err.error_tag) == ("application", "missing-element")
    assert err.path == "/irtf-agent:tasks/task[task-id='t2']/content"
    assert err.info == {"bad-element": "content"}
    assert "'content'" in err.message


def test_missing_mandatory_leaf_in_a_container(ctx: YangContext) -> None:
    doc = context_entry().replace("<content>find the root cause</content>", "")
    err = rpc_error(ctx.validate_config, doc)
    assert (err.error_tag, err.path) == ("missing-element", "/irtf-agent:context[id='c1']/request-info/content")


def test_response_info_is_optional_but_complete_when_present(ctx: YangContext) -> None:
    ctx.validate_config(context_entry())
    err = rpc_error(ctx.validate_config, context_entry("<response-info/>"))
    assert (err.error_tag, err.path) == ("missing-element", "/irtf-agent:context[id='c1']/response-info/time")


def test_missing_list_key(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_config, task(extra="<term-explains><explaination>x</explaination></term-explains>"))
    assert (err.error_tag, err.info, err.path) == ("missing-element", {"bad-element": "term"}, f"{T1}/term-explains")


def test_dangling_leafref(ctx: YangContext) -> None:
    err = rpc_error(
        ctx.validate_config, task(extra="<msg-data>d1</msg-data><msg-data>d9</msg-data>") + data_param("d1")
    )
    assert (err.error_type, err.error_tag, err.app_tag) == ("application", "data-missing", "instance-required")
    assert err.path == f"{T1}/msg-data[.='d9']"
    assert "'d9'" in err.message and "/data-params/id" in err.message


def test_dangling_context_leafref(ctx: YangContext) -> None:
    err = rpc_error(
        ctx.validate_config,
        context_entry("<response-info><dataParam>dx</dataParam><time>2025-04-21T14:20:00Z</time></response-info>"),
    )
    assert (err.error_tag, err.path) == ("data-missing", "/irtf-agent:context[id='c1']/response-info/dataParam")


def test_state_data_in_config_is_rejected(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_config, task(extra="<task-status>finished</task-status>"))
    assert (err.error_tag, err.path, err.info) == ("invalid-value", f"{T1}/task-status", {"bad-element": "task-status"})
    assert "config false" in err.message
    err = rpc_error(ctx.validate_config, f'<agent xmlns="{AGT}"><name>x</name></agent>')
    assert err.error_tag == "invalid-value"


def test_malformed_xml(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_config, task()[:-8])
    assert (err.error_type, err.error_tag) == ("rpc", "malformed-message")


# --------------------------------------------------------------- <get> data


def test_get_reply_with_state(ctx: YangContext, example_profile_xml: str) -> None:
    state = (
        "<task-status>processing</task-status>"
        "<result><summary>s</summary><updated-time>2025-04-21T14:20:00Z</updated-time></result>"
    )
    monitoring = (
        '<netconf-state xmlns="urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"><schemas><schema>'
        "<identifier>irtf-agent</identifier><version>2025-06-01</version><format>yang</format>"
        f"<namespace>{AGT}</namespace><location>NETCONF</location></schema></schemas></netconf-state>"
    )
    ctx.validate_data(example_profile_xml + task(extra=state) + monitoring)


def test_full_get_reply_needs_the_profile(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_data, task())
    assert (err.error_tag, err.path) == ("missing-element", "/irtf-agent:agent/name")
    ctx.validate_data(task(), partial=True)


def test_partial_get_reply_still_checks_values(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_data, task(extra="<task-status>done</task-status>"), True)
    assert (err.error_tag, err.path) == ("invalid-value", f"{T1}/task-status")


# -------------------------------------------------------------------- RPCs


def negotiate(body: str) -> str:
    return f'<task-negotiate xmlns="{AGT}">{body}</task-negotiate>'


PROMPT = "<content>##target object\ncell 12\n##task description\nrestore it</content>"


def test_feasibility_negotiation(ctx: YangContext) -> None:
    ctx.validate_rpc(
        negotiate(
            "<task-sendFrom>a</task-sendFrom><commuType>FeasibilityNegotiate</commuType>"
            f"{PROMPT}{PROMPT.replace('12', '13')}<type>FEASIBILITY</type>"
        )
    )


def test_fulfillment_negotiation(ctx: YangContext) -> None:
    # That FULFILLMENT names its task is checked by the agent, not by a YANG
    # 'must' (yuma123 clients cannot load a 'must' directly under 'input').
    ctx.validate_rpc(negotiate(f"<task-id>t1</task-id>{PROMPT}<type>FULFILLMENT</type>"))


def test_negotiation_type_is_mandatory(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_rpc, negotiate(PROMPT))
    assert (err.error_tag, err.path, err.info) == (
        "missing-element",
        "/irtf-agent:task-negotiate/type",
        {"bad-element": "type"},
    )
    err = rpc_error(ctx.validate_rpc, negotiate(f"{PROMPT}<type>3</type>"))
    assert (err.error_tag, err.path) == ("invalid-value", "/irtf-agent:task-negotiate/type")


def test_unknown_element_in_rpc(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_rpc, negotiate("<type>FEASIBILITY</type><urgent/>"))
    assert (err.error_tag, err.info, err.path) == (
        "unknown-element",
        {"bad-element": "urgent"},
        "/irtf-agent:task-negotiate",
    )


def test_negotiation_output(ctx: YangContext) -> None:
    ok = (
        f'<type xmlns="{AGT}">FEASIBILITY</type><feasible xmlns="{AGT}">false</feasible>'
        f'<reason xmlns="{AGT}">no spare board</reason>'
        f'<counter-proposal xmlns="{AGT}">##task description\nswitch to the backup link</counter-proposal>'
        f'<data xmlns="{AGT}"><alarms xmlns="urn:example:alarms"><alarm>a1</alarm></alarms></data>'
    )
    ctx.validate_rpc_output(ok, "irtf-agent:task-negotiate")
    err = rpc_error(ctx.validate_rpc_output, f'<feasible xmlns="{AGT}">yes</feasible>', "irtf-agent:task-negotiate")
    assert (err.error_tag, err.path) == ("invalid-value", "/irtf-agent:task-negotiate/feasible")
    err = rpc_error(
        ctx.validate_rpc_output,
        f'<counter-proposal xmlns="{AGT}">do less</counter-proposal>',
        "irtf-agent:task-negotiate",
    )
    assert (err.error_tag, err.app_tag) == ("invalid-value", "task-description-missing")


def test_standard_rpcs(ctx: YangContext) -> None:
    ctx.validate_rpc(
        '<get-schema xmlns="urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring">'
        "<identifier>irtf-agent</identifier></get-schema>"
    )
    ctx.validate_rpc(f'<get xmlns="{NC}"><filter type="subtree"><tasks xmlns="{AGT}"/></filter></get>')
    sub = "urn:ietf:params:xml:ns:netconf:notification:1.0"
    ctx.validate_rpc(
        f'<create-subscription xmlns="{sub}"><filter type="subtree"><condition-notifications xmlns="{AGT}"/></filter>'
        "<startTime>2025-04-21T00:00:00Z</startTime></create-subscription>"
    )
    err = rpc_error(
        ctx.validate_rpc,
        f'<create-subscription xmlns="{sub}"><stopTime>2025-04-21T00:00:00Z</stopTime></create-subscription>',
    )
    assert (err.error_tag, err.app_tag, err.path) == (
        "operation-failed",
        "must-violation",
        "/notifications:create-subscription/stopTime",
    )


# ------------------------------------------------------------ notifications


def notification(body: str) -> str:
    return f'<condition-notifications xmlns="{AGT}">{body}</condition-notifications>'


def test_status_notification(ctx: YangContext) -> None:
    ctx.validate_notification(
        notification(
            "<task-sendFrom>b</task-sendFrom><task-sendTo>a</task-sendTo><commuType>taskResultNotify</commuType>"
            "<task-id>t1</task-id><task-status>finished</task-status><previous-status>processing</previous-status>"
            '<data><result xmlns="urn:example:r">ok</result></data>'
        )
    )


def test_notification_needs_the_task_id(ctx: YangContext) -> None:
    err = rpc_error(ctx.validate_notification, notification("<task-status>finished</task-status>"))
    assert (err.error_tag, err.path) == ("missing-element", "/irtf-agent:condition-notifications/task-id")


def test_input_required_entries(ctx: YangContext) -> None:
    required = "<required>##target object\ncell 12\n##task description\nsend the power alarm log</required>"
    ctx.validate_notification(
        notification(
            f"<task-id>t1</task-id><task-status>input-required</task-status><input-required>{required}"
            "<status>suspended</status><start-time>2025-04-21T14:19:00Z</start-time></input-required>"
        )
    )
    err = rpc_error(
        ctx.validate_notification,
        notification(
            "<task-id>t1</task-id><input-required>"
            "<required>##target object a ##task description b</required></input-required>"
        ),
    )
    assert err.error_tag == "missing-element"
    entry = "input-required[required='##target object a ##task description b']"
    assert err.path == f"/irtf-agent:condition-notifications/{entry}/start-time"


def test_rfc5277_notifications(ctx: YangContext) -> None:
    ctx.validate_notification('<replayComplete xmlns="urn:ietf:params:xml:ns:netmod:notification"/>')
    err = rpc_error(ctx.validate_notification, '<replayDone xmlns="urn:ietf:params:xml:ns:netmod:notification"/>')
    assert err.error_tag == "unknown-element"
