"""``preferred-language`` over real sessions: get-schema-template (NETCONF) and the A2A card
(Accept-Language) serve the shipped templates' descriptions in Chinese, or English for a language not
shipped; a payload is validated the same whatever language its client read."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_structured_payloads import SCHEMA, assign

from an_agent.errors import SchemaError
from an_agent.model import AgentProfile
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.template import Template
from an_agent.schemas.validate import validate_payload
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder
from rawnc import NS, RawSession, error_fields

ENERGY = "energy_saving_adjust_v1"


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    config = ServerConfig(
        state_dir=tmp_path / "state", port=0, a2a_port=0, a2a_tls=True, profile=profile, embedder=FakeEmbedder()
    )
    with AgentServer(config) as running:
        yield running


def _wire_template(raw: RawSession, language: str, scenario: str = ENERGY) -> tuple[str | None, Template]:
    reply = raw.rpc(
        f'<get-schema-template xmlns="{SCHEMA}"><scenario>{scenario}</scenario>'
        f"<preferred-language>{language}</preferred-language></get-schema-template>"
    )
    template = Template.from_dict(json.loads(reply.findtext(f"{{{SCHEMA}}}template") or "{}"))
    return reply.findtext(f"{{{SCHEMA}}}language"), template


def _template(raw: RawSession, language: str) -> tuple[str | None, dict[str, str]]:
    served, template = _wire_template(raw, language)
    return served, {k.key_name: k.semantic_description for k in template.keys}


def test_get_schema_template_in_chinese_or_english(server: AgentServer) -> None:
    raw = RawSession(server.port)
    try:
        served, chinese = _template(raw, "zh-CN")
        assert served == "zh" and chinese["action"].startswith("对这些小区的节能做什么"), chinese["action"]
        for language in ("fr", "en-US"):
            served, english = _template(raw, language)
            assert served == "en" and english["action"].startswith("What to do with energy saving"), english
        # The constraints are the English ones whichever language was read: 'explode' is refused, 'reduce' taken.
        bad = error_fields(assign(raw, "t1", {"cell_ids": ["CELL-0401"], "action": "explode"}, "admin"))
        assert bad["tag"] == "invalid-value" and "action" in (bad["message"] or ""), bad
        ok = assign(raw, "t2", {"cell_ids": ["CELL-0401"], "action": "reduce"}, "admin")
        assert ok.find("nc:ok", NS) is not None
    finally:
        raw.close()


def test_a_client_reading_chinese_templates_validates_as_one_reading_english(server: AgentServer) -> None:
    """The constraints a client parses from the Chinese wire form (enumerations, ranges, formats, item
    formats) are the ones of the English original, for every shipped template."""
    raw = RawSession(server.port)
    try:
        for shipped in TemplateRegistry.default().templates():
            served_zh, chinese = _wire_template(raw, "zh", shipped.schema_id)
            served_en, english = _wire_template(raw, "en", shipped.schema_id)
            assert (served_zh, served_en) == ("zh", "en")
            assert chinese.key_names == english.key_names
            for zh_key, en_key in zip(chinese.keys, english.keys, strict=True):
                assert zh_key.semantic_description != en_key.semantic_description, en_key.key_name
                assert zh_key.constraints == en_key.constraints, (shipped.schema_id, en_key.key_name)
        _, chinese = _wire_template(raw, "zh")
        assert chinese.key("action") is not None and "reduce" in chinese.key("action").constraints.enum  # type: ignore[union-attr]
        for payload, key in (
            ({"cell_ids": ["CELL-0401"], "action": "explode"}, "action"),
            ({"cell_ids": ["SITE-04"], "action": "reduce"}, "cell_ids"),
        ):
            with pytest.raises(SchemaError) as refused:
                validate_payload(chinese, {"schema_id": ENERGY, "payload": payload})
            assert any(problem.startswith(key) for problem in refused.value.problems), refused.value.problems
        validate_payload(chinese, {"schema_id": ENERGY, "payload": {"cell_ids": ["CELL-0401"], "action": "reduce"}})
    finally:
        raw.close()


def test_card_follows_accept_language(server: AgentServer) -> None:
    assert server.a2a is not None
    trust = ssl.create_default_context(cafile=str(server.a2a.certificate))
    url = f"{server.a2a.url}/.well-known/agent-card.json"
    chinese = httpx.get(url, headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"}, verify=trust)
    english = httpx.get(url, headers={"Accept-Language": "de"}, verify=trust)
    assert chinese.headers["content-language"] == "zh" and english.headers["content-language"] == "en"
    zh_action = chinese.json()["schemas"][ENERGY]["properties"]["action"]
    en_action = english.json()["schemas"][ENERGY]["properties"]["action"]
    assert "对这些小区" in zh_action["description"] and "What to do" in en_action["description"]
    assert zh_action["enum"] == en_action["enum"] == ["suspend", "resume", "reduce"]
