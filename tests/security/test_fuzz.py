"""Hypothesis fuzzing of the NETCONF face and the payload validator (bounded: a few hundred inputs each).

`make fuzz` runs 100,000 generated inputs against a live agent (bench/fuzz_netconf.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from an_agent.errors import SchemaError
from an_agent.model import AgentProfile
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.validate import parse_envelope, validate_payload
from an_agent.server import AgentServer, ServerConfig
from rawnc import NC_NS, NS, RawSession

IRTF = "urn:ietf:params:xml:ns:yang:irtf-agent"
TEMPLATE = TemplateRegistry.default().get("fault_diagnosis_v1")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400) | st.text(max_size=400))
def test_parse_envelope_takes_any_input_without_crashing(data: bytes | str) -> None:
    try:
        parse_envelope(data)
    except SchemaError as exc:
        assert exc.problems  # always a precise line for the rpc-error


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["fault_type", "severity", "alarm_ids", "other", "x", ""]), json_values))
def test_validate_payload_accepts_or_explains(payload: dict[str, Any]) -> None:
    envelope = {"schema_id": TEMPLATE.schema_id, "payload": payload}
    try:
        result = validate_payload(TEMPLATE, parse_envelope(json.dumps(envelope)))
    except SchemaError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
    else:
        assert set(result.values) <= {k.name for k in TEMPLATE.keys}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    from support import TEST_PROFILE

    state = tmp_path_factory.mktemp("fuzz") / "state"
    with AgentServer(
        ServerConfig(state_dir=state, port=0, profile=AgentProfile.from_dict(TEST_PROFILE), schemas="validate")
    ) as server:
        yield server


_ELEMENTS = st.sampled_from(["get", "get-config", "edit-config", "lock", "filter", "config", "tasks", "task", "x"])
_fragments = st.recursive(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=20).map(
        lambda t: t.replace("&", "&amp;").replace("<", "&lt;")
    ),
    lambda inner: st.tuples(_ELEMENTS, st.lists(inner, max_size=3)).map(
        lambda pair: f"<{pair[0]}>{''.join(pair[1])}</{pair[0]}>"
    ),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(_fragments, st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_netconf_face_answers_every_message(live: AgentServer, body: str) -> None:
    raw = RawSession(live.port)
    try:
        before = raw.rpc("<get-config><source><running/></source></get-config>", "before")
        raw.send_raw(f'<rpc xmlns="{NC_NS}" message-id="f">{body}</rpc>'.encode("utf-8", "surrogateescape"))
        reply = raw.receive()
        assert reply.find("nc:rpc-error", NS) is not None or reply.find("nc:ok", NS) is not None or len(reply)
        errors = [e.findtext("nc:error-message", namespaces=NS) or "" for e in reply.iterfind("nc:rpc-error", NS)]
        assert not any("internal error" in message for message in errors), errors
        after = raw.rpc("<get-config><source><running/></source></get-config>", "before")
        # Bodies without a valid <edit-config> of a complete task cannot change data.
        if "<edit-config>" not in body:
            assert after.find("nc:data", NS) is not None and len(after[0]) == len(before[0])
    finally:
        raw.close()
