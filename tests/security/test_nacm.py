"""The NACM engine against RFC 8341's section 3.4 procedures and its Appendix A example rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from an_agent.access.nacm import DEFAULT_NACM, Nacm, Notification, Rpc, load_nacm, nacm_from_json
from an_agent.errors import ConfigError
from an_agent.runtime.authorization import NacmAuthorizer
from an_agent.runtime.principal import Principal
from an_agent.yang.context import YangContext

IF = "/ietf-interfaces:interfaces"

# RFC 8341 Appendix A.1-A.4, in RFC 7951 JSON (module names instead of prefixes).
RFC_EXAMPLE: dict[str, Any] = {
    "ietf-netconf-acm:nacm": {
        "enable-nacm": True,
        "read-default": "permit",
        "write-default": "deny",
        "exec-default": "permit",
        "groups": {
            "group": [
                {"name": "admin", "user-name": ["admin", "andy"]},
                {"name": "limited", "user-name": ["wilma", "bam-bam"]},
                {"name": "guest", "user-name": ["guest", "guest@example.com"]},
            ]
        },
        "rule-list": [
            {
                "name": "guest-acl",
                "group": ["guest"],
                "rule": [
                    {
                        "name": "deny-ncm",
                        "module-name": "ietf-netconf-monitoring",
                        "access-operations": "*",
                        "action": "deny",
                        "comment": "Do not allow guests any access to the NETCONF monitoring information.",
                    },
                    {
                        "name": "deny-kill",
                        "module-name": "ietf-netconf",
                        "rpc-name": "kill-session",
                        "access-operations": "exec",
                        "action": "deny",
                    },
                ],
            },
            {
                "name": "limited-acl",
                "group": ["limited"],
                "rule": [
                    {
                        "name": "permit-ncm",
                        "module-name": "ietf-netconf-monitoring",
                        "access-operations": "read",
                        "action": "permit",
                    },
                    {"name": "permit-exec", "module-name": "*", "access-operations": "exec", "action": "permit"},
                    {
                        "name": "deny-eth0",
                        "module-name": "ietf-interfaces",
                        "path": "/ietf-interfaces:interfaces/interface[name='eth0']",
                        "access-operations": "read update",
                        "action": "deny",
                    },
                    {
                        "name": "permit-config-change",
                        "module-name": "ietf-netconf-notifications",
                        "notification-name": "netconf-config-change",
                        "access-operations": "read",
                        "action": "permit",
                    },
                ],
            },
            {
                "name": "admin-acl",
                "group": ["admin"],
                "rule": [{"name": "permit-all", "module-name": "*", "access-operations": "*", "action": "permit"}],
            },
        ],
    }
}


@pytest.fixture(scope="module")
def nacm() -> Nacm:
    return nacm_from_json(RFC_EXAMPLE)


def test_groups_come_from_nacm_and_from_outside(nacm: Nacm) -> None:
    assert nacm.groups_of("andy") == {"admin"}
    assert nacm.groups_of("carol", ["operators"]) == {"operators"}
    assert nacm.groups_of("carol", ["operators"]) == {"operators"}
    assert nacm_from_json({"ietf-netconf-acm:nacm": {"enable-external-groups": False}}).groups_of("x", ["a"]) == set()


def test_first_matching_rule_in_rule_list_order_decides(nacm: Nacm) -> None:
    denied = nacm.decide("guest", [], "read", "/ietf-netconf-monitoring:netconf-state/sessions")
    assert not denied and denied.rule == "guest-acl/deny-ncm"
    permitted = nacm.decide("wilma", [], "read", "/ietf-netconf-monitoring:netconf-state")
    assert permitted and permitted.rule == "limited-acl/permit-ncm"
    # limited may read but not write monitoring data: no rule for update -> write-default deny
    write = nacm.decide("wilma", [], "update", "/ietf-netconf-monitoring:netconf-state")
    assert not write and write.rule == "default:write-default"
    assert nacm.decide("andy", [], "delete", "/irtf-agent:tasks").rule == "admin-acl/permit-all"


def test_rpc_rules_by_name_and_by_module_wildcard(nacm: Nacm) -> None:
    assert nacm.decide("guest", [], "exec", Rpc("ietf-netconf", "kill-session")).rule == "guest-acl/deny-kill"
    assert nacm.decide("guest", [], "exec", Rpc("ietf-netconf", "get")).rule == "default:exec-default"
    assert nacm.decide("wilma", [], "exec", Rpc("irtf-agent", "task-negotiate")).rule == "limited-acl/permit-exec"


def test_close_session_is_always_permitted_and_kill_session_default_denied(nacm: Nacm) -> None:
    strict = Nacm(exec_default="deny")
    assert strict.decide("nobody", [], "exec", Rpc("ietf-netconf", "close-session"))
    default = Nacm()
    # ietf-netconf marks kill-session and delete-config nacm:default-deny-all
    assert not default.decide("carol", ["users"], "exec", Rpc("ietf-netconf", "kill-session"))
    assert not default.decide("carol", ["users"], "exec", Rpc("ietf-netconf", "delete-config"))
    assert nacm.decide("andy", [], "exec", Rpc("ietf-netconf", "kill-session"))  # an explicit permit wins


def test_data_path_rules_cover_the_node_and_its_descendants(nacm: Nacm) -> None:
    eth0 = f"{IF}/interface[name='eth0']"
    assert nacm.decide("wilma", [], "read", eth0).rule == "limited-acl/deny-eth0"
    assert not nacm.decide("wilma", [], "read", eth0 + "/mtu")
    assert nacm.decide("wilma", [], "read", f"{IF}/interface[name='eth1']/mtu").rule == "default:read-default"
    assert nacm.decide("wilma", [], "create", eth0).rule == "default:write-default"  # create not in the rule


def test_notification_rules_and_markers_always_sent(nacm: Nacm) -> None:
    change = Notification("ietf-netconf-notifications", "netconf-config-change")
    assert nacm.decide("wilma", [], "read", change).rule == "limited-acl/permit-config-change"
    assert Nacm(read_default="deny").decide("x", [], "read", Notification("nc-notifications", "replayComplete"))


def test_nacm_data_itself_is_default_deny_all() -> None:
    assert not Nacm().decide("carol", ["operators"], "read", "/ietf-netconf-acm:nacm/rule-list[name='x']")
    assert DEFAULT_NACM.decide("root", ["admin"], "read", "/ietf-netconf-acm:nacm")


def test_disabled_nacm_permits_everything() -> None:
    off = nacm_from_json({"ietf-netconf-acm:nacm": {"enable-nacm": False, "write-default": "deny"}})
    assert off.decide("anyone", [], "delete", "/irtf-agent:tasks").rule == "default:enable-nacm=false"


def test_users_with_no_group_fall_to_the_defaults(nacm: Nacm) -> None:
    assert nacm.decide("stranger", [], "read", "/irtf-agent:agent").rule == "default:read-default"
    assert not nacm.decide("stranger", [], "create", "/irtf-agent:tasks/task[task-id='t1']")


@pytest.mark.parametrize(
    "groups,access,target,permitted",
    [
        (["admin"], "delete", "/irtf-agent:tasks/task[task-id='t1']", True),
        (["admin"], "exec", Rpc("ietf-netconf", "kill-session"), True),
        (["operators"], "read", "/irtf-agent:agent", True),
        (["operators"], "create", "/irtf-agent:tasks/task[task-id='t1']", True),
        (["operators"], "create", "/irtf-agent:data-params[id='p1']", True),
        (["operators"], "update", "/irtf-agent:agent/name", False),
        (["operators"], "exec", Rpc("irtf-agent", "task-negotiate"), True),
        (["operators"], "exec", Rpc("notifications", "create-subscription"), True),
        (["operators"], "exec", Rpc("an-agent-schema", "approve-schema-patch"), False),
        (["operators"], "exec", Rpc("ietf-netconf", "kill-session"), True),  # own sessions: ownership check
        ([], "exec", Rpc("ietf-netconf", "kill-session"), False),
        (["schema-admin"], "exec", Rpc("an-agent-schema", "approve-schema-patch"), True),
        (["schema-admin"], "exec", Rpc("an-agent-schema", "withdraw-schema-key"), True),
        ([], "create", "/irtf-agent:tasks/task[task-id='t1']", False),
        ([], "read", "/irtf-agent:tasks", True),
    ],
)
def test_shipped_defaults(groups: list[str], access: Any, target: Any, permitted: bool) -> None:
    assert bool(DEFAULT_NACM.decide("u", groups, access, target)) is permitted


def test_prune_removes_denied_subtrees_and_keeps_the_rest(nacm: Nacm) -> None:
    tree = etree.fromstring(
        '<interfaces xmlns="urn:ietf:params:xml:ns:yang:ietf-interfaces">'
        "<interface><name>eth0</name><mtu>1500</mtu></interface>"
        "<interface><name>eth1</name><mtu>9000</mtu></interface></interfaces>"
    )

    def path_of(element: etree._Element) -> str:
        steps = []
        node: etree._Element | None = element
        while node is not None:
            name = etree.QName(node).localname
            key = node.findtext("{urn:ietf:params:xml:ns:yang:ietf-interfaces}name")
            step = name + (f"[name='{key}']" if name == "interface" and key else "")
            steps.append(step)
            node = node.getparent()
        steps[-1] = "ietf-interfaces:" + steps[-1]
        return "/" + "/".join(reversed(steps))

    (pruned,) = nacm.prune("wilma", [], [tree], path_of)
    names = [e.text for e in pruned.iter("{urn:ietf:params:xml:ns:yang:ietf-interfaces}name")]
    assert names == ["eth1"]
    assert len(tree) == 2  # the input is untouched
    assert (
        nacm.prune("andy", [], [tree], path_of)[0] is not tree and len(nacm.prune("andy", [], [tree], path_of)[0]) == 2
    )


def test_nacm_file_is_validated_against_ietf_netconf_acm(tmp_path: Path) -> None:
    good = tmp_path / "nacm.json"
    good.write_text(json.dumps(RFC_EXAMPLE))
    assert load_nacm(good).groups["limited"] == {"wilma", "bam-bam"}
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {"ietf-netconf-acm:nacm": {"rule-list": [{"name": "x", "rule": [{"name": "r", "action": "allow"}]}]}}
        )
    )
    with pytest.raises(ConfigError, match=r"bad\.json: not valid ietf-netconf-acm data"):
        load_nacm(bad)
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "ietf-netconf-acm:nacm": {\n    "enable-nacm": tru\n')
    with pytest.raises(ConfigError, match=r"broken\.json:3: not valid JSON"):
        load_nacm(broken)


def test_authorizer_counts_denied_notifications() -> None:
    rules = nacm_from_json(
        {
            "ietf-netconf-acm:nacm": {
                "rule-list": [
                    {
                        "name": "quiet",
                        "group": ["quiet"],
                        "rule": [
                            {
                                "name": "no-status",
                                "module-name": "irtf-agent",
                                "notification-name": "condition-notifications",
                                "access-operations": "read",
                                "action": "deny",
                            }
                        ],
                    }
                ]
            }
        }
    )
    authorizer = NacmAuthorizer(rules, YangContext.default())
    event = etree.Element("{urn:ietf:params:xml:ns:yang:irtf-agent}condition-notifications")
    assert authorizer.may_receive(Principal("ops", frozenset({"ops"})), event)
    assert not authorizer.may_receive(Principal("q", frozenset({"quiet"})), event)
    state = authorizer.nacm_state()
    assert (state.denied_notifications, state.denied_operations, state.denied_data_writes) == (1, 0, 0)
