"""Personal schema patches (draft-zhou 6: a cluster of one client) are served only to their client (the
session's user or an agent name it is given) or an administrator: in ``/agent/schema-templates`` state and
``get-schema-template`` over NETCONF, and never in the public A2A card."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from lxml import etree
from test_structured_payloads import SCHEMA, assign

from an_agent.access.users import hash_password
from an_agent.clock import ManualClock, from_rfc3339
from an_agent.model import AgentProfile
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder
from rawnc import NS, RawSession, error_fields
from support import IRTF

ENERGY = "energy_saving_adjust_v1"
OTHER = "send the report to the night shift by sms"


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    users = tmp_path / "users.yaml"
    lines = ["users:"]
    for name, group, agent in (("alice", "operators", "site-a"), ("bob", "operators", "site-b"), ("root", "admin", "")):
        lines += [
            f"  - name: {name}",
            f'    password: "{hash_password(name + "-pw", n=2**10)}"',
            f"    groups: [{group}]",
        ]
        lines += [f"    agents: [{agent}]"] if agent else []
    users.write_text("\n".join(lines) + "\n", encoding="utf-8")
    users.chmod(0o600)
    config = ServerConfig(
        state_dir=tmp_path / "state",
        port=0,
        a2a_port=0,
        a2a_tls=True,
        users_file=users,
        profile=profile,
        embedder=FakeEmbedder(),
        clock=ManualClock(from_rfc3339("2026-10-05T00:00:00Z")),
    )
    with AgentServer(config) as running:
        yield running


def _patches_seen(user: str, port: int) -> dict[str, str | None]:
    """patch-id -> client-id of every patch in the user's ``<get>`` of /agent/schema-templates."""
    raw = RawSession(port, user=user, password=f"{user}-pw")
    try:
        reply = raw.rpc(
            f'<get><filter type="subtree"><agent xmlns="{IRTF}"><schema-templates xmlns="{SCHEMA}"/></agent>'
            "</filter></get>"
        )
    finally:
        raw.close()
    patches = reply.findall(
        f"nc:data/{{{IRTF}}}agent/{{{SCHEMA}}}schema-templates/{{{SCHEMA}}}template/{{{SCHEMA}}}patch", NS
    )
    return {p.findtext(f"{{{SCHEMA}}}patch-id") or "": p.findtext(f"{{{SCHEMA}}}client-id") for p in patches}


def _template(user: str, port: int, client: str) -> etree._Element:
    raw = RawSession(port, user=user, password=f"{user}-pw")
    try:
        return raw.rpc(
            f'<get-schema-template xmlns="{SCHEMA}"><scenario>{ENERGY}</scenario><client-id>{client}</client-id>'
            "</get-schema-template>"
        )
    finally:
        raw.close()


def test_personal_patch_is_seen_only_by_its_client_and_admins(server: AgentServer) -> None:
    raw = RawSession(server.port, user="alice", password="alice-pw")
    try:
        for n in range(12):  # one client, >= 10 occurrences: a personal patch (Zhou 6.2 defaults)
            reply = assign(raw, f"t{n}", {"cell_ids": ["CELL-0401"], "action": "reduce", "other": OTHER}, "site-a")
            assert reply.find("nc:ok", NS) is not None, etree.tostring(reply)
    finally:
        raw.close()
    assert server.operations.schemas is not None
    server.operations.schemas.drain()
    (patch,) = server.operations.schemas.engine.patches(ENERGY)
    assert patch["client_id"] == "site-a", patch
    pid = patch["patch_id"]

    assert _patches_seen("alice", server.port) == {pid: "site-a"}  # alice may speak for site-a
    assert _patches_seen("root", server.port) == {pid: "site-a"}  # an administrator sees every patch
    assert pid not in _patches_seen("bob", server.port)  # another client never learns of it

    assert _template("alice", server.port, "site-a").findtext(f"{{{SCHEMA}}}applied-patch") == pid
    denied = error_fields(_template("bob", server.port, "site-a"))
    assert denied["tag"] == "access-denied" and "site-a" in (denied["message"] or ""), denied
    bob_own = _template("bob", server.port, "site-b")
    assert bob_own.findtext(f"{{{SCHEMA}}}applied-patch") is None
    assert json.loads(bob_own.findtext(f"{{{SCHEMA}}}template") or "{}")["schema_id"] == ENERGY

    # The A2A card is public: it carries the global templates only.
    assert server.a2a is not None
    trust = ssl.create_default_context(cafile=str(server.a2a.certificate))
    card = httpx.get(f"{server.a2a.url}/.well-known/agent-card.json", verify=trust).json()
    new_keys = {k["key_name"] for k in patch["new_keys"]}
    assert new_keys and not new_keys & set(card["schemas"][ENERGY]["properties"]), card["schemas"][ENERGY]
