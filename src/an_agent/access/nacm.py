"""NACM (RFC 8341) decisions, pure and typed: rules in, permit/deny out, with the rule that decided.

`Nacm` holds the ``ietf-netconf-acm`` configuration (`load_nacm` reads and
validates ``--nacm FILE``, RFC 7951 JSON, against the module with libyang;
`DEFAULT_NACM` is what ships). `Nacm.decide` follows RFC 8341 section 3.4:

1. ``enable-nacm`` false: everything is permitted.
2. ``close-session`` and the ``replayComplete``/``notificationComplete``
   notifications are always permitted.
3. The user's groups are the external ones (the users file) when
   ``enable-external-groups`` is true, plus every NACM group listing the user.
4. Rule-lists are taken in order, those whose ``group`` names one of the
   user's groups (or ``*``); their rules in order; the first rule whose
   module-name (or ``*``), rule type (rpc-name / notification-name / path,
   or none: any) and access-operations match decides.
5. No rule: the RFC's defaults -- ``kill-session``/``delete-config`` and data
   marked ``nacm:default-deny-all`` (``/nacm`` itself) are denied; then
   ``exec-default``, ``read-default`` or ``write-default``.

The operation layer calls it through its authorizer hook (see docs/howto/users-and-access.md,
"NACM"); `prune` removes what a user may not read from a reply tree.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lxml import etree

from an_agent._lxml import nsmap_of
from an_agent.errors import AnAgentError, ConfigError
from an_agent.yang.context import YangContext

AccessOp = Literal["read", "create", "update", "delete", "exec"]
ALL_OPERATIONS = frozenset({"read", "create", "update", "delete", "exec"})
NACM_MODULE = "ietf-netconf-acm"
NACM_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-acm"
NACM_PATH = f"/{NACM_MODULE}:nacm"

# RFC 8341 3.4.4 step 9 (ietf-netconf marks them nacm:default-deny-all) and 3.4.5.
_DENY_ALL_RPCS = frozenset({("ietf-netconf", "kill-session"), ("ietf-netconf", "delete-config")})
_DENY_ALL_DATA = (NACM_PATH,)
_ALWAYS_NOTIFICATIONS = frozenset({"replayComplete", "notificationComplete"})


@dataclass(frozen=True)
class Rpc:
    """An operation to execute: ``module`` and ``name`` (``ietf-netconf``, ``kill-session``)."""

    module: str
    name: str

    @classmethod
    def parse(cls, qualified: str) -> Rpc:
        """From the operation layer's ``module:name`` form."""
        module, _, name = qualified.partition(":")
        return cls(module, name)


@dataclass(frozen=True)
class Notification:
    module: str
    name: str


Target = str | Rpc | Notification
"""A data node (instance identifier, module-qualified as in RFC 7951: ``/irtf-agent:tasks/task[task-id='t1']``),
an RPC or a notification."""


@dataclass(frozen=True)
class Rule:
    """One ``rule`` of a rule-list. ``target`` is the rpc-name, notification-name or path (None: any)."""

    name: str
    action: Literal["permit", "deny"]
    module_name: str = "*"
    kind: Literal["any", "rpc", "notification", "data"] = "any"
    target: str | None = None
    operations: frozenset[str] = ALL_OPERATIONS


@dataclass(frozen=True)
class RuleList:
    name: str
    groups: frozenset[str]
    rules: tuple[Rule, ...]


@dataclass(frozen=True)
class Decision:
    """The outcome and why: ``rule`` is ``rule-list/rule``, or ``default:<leaf>`` when no rule matched."""

    permitted: bool
    rule: str

    def __bool__(self) -> bool:
        return self.permitted


@dataclass(frozen=True)
class Nacm:
    """An ``ietf-netconf-acm`` configuration and the decisions it makes."""

    enable_nacm: bool = True
    read_default: Literal["permit", "deny"] = "permit"
    write_default: Literal["permit", "deny"] = "deny"
    exec_default: Literal["permit", "deny"] = "permit"
    enable_external_groups: bool = True
    groups: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """NACM groups: group name -> user names."""
    rule_lists: tuple[RuleList, ...] = ()

    def groups_of(self, user: str, external: Iterable[str] = ()) -> frozenset[str]:
        """RFC 8341 3.4 step 3: external groups (if enabled) plus the NACM groups naming ``user``."""
        found = set(external) if self.enable_external_groups else set()
        found.update(name for name, users in self.groups.items() if user in users)
        return frozenset(found)

    def decide(self, user: str, groups: Iterable[str], access: AccessOp, target: Target) -> Decision:
        """Whether ``user`` (with external ``groups``) may perform ``access`` on ``target``."""
        if not self.enable_nacm:
            return Decision(True, "default:enable-nacm=false")
        if isinstance(target, Rpc) and (target.module, target.name) == ("ietf-netconf", "close-session"):
            return Decision(True, "always:close-session")
        if isinstance(target, Notification) and target.name in _ALWAYS_NOTIFICATIONS:
            return Decision(True, f"always:{target.name}")
        mine = self.groups_of(user, groups)
        if mine:
            steps = _steps(target) if isinstance(target, str) else ()
            for rule_list in self.rule_lists:
                if "*" not in rule_list.groups and not rule_list.groups & mine:
                    continue
                for rule in rule_list.rules:
                    if _matches(rule, access, target, steps):
                        return Decision(rule.action == "permit", f"{rule_list.name}/{rule.name}")
        return self._default(access, target)

    def _default(self, access: AccessOp, target: Target) -> Decision:
        if isinstance(target, Rpc):
            if (target.module, target.name) in _DENY_ALL_RPCS:
                return Decision(False, "default:default-deny-all")
            return Decision(self.exec_default == "permit", "default:exec-default")
        if isinstance(target, str) and any(_under(target, marked) for marked in _DENY_ALL_DATA):
            return Decision(False, "default:default-deny-all")
        if access == "read":
            return Decision(self.read_default == "permit", "default:read-default")
        return Decision(self.write_default == "permit", "default:write-default")

    def could_differ_below(self, path: str) -> bool:
        """True when some data rule (or a deny-all default) names a node strictly below ``path``.

        When False, every descendant of ``path`` gets the decision of ``path``
        itself, so `prune` need not look further down.
        """
        steps = _steps(path)
        for rule_list in self.rule_lists:
            for rule in rule_list.rules:
                below = rule.kind == "data" and rule.target and len(_steps(rule.target)) > len(steps)
                if below and _prefix_matches(steps, _steps(str(rule.target))[: len(steps)]):
                    return True
        return any(len(_steps(marked)) > len(steps) and _under(marked, path) for marked in _DENY_ALL_DATA)

    def prune(
        self,
        user: str,
        groups: Iterable[str],
        elements: Sequence[etree._Element],
        path_of: Callable[[etree._Element], str],
    ) -> list[etree._Element]:
        """Copies of the top-level ``elements`` without the nodes ``user`` may not read (RFC 8341 3.4.5).

        ``path_of`` gives an element's instance identifier (module-qualified,
        with list keys). A denied node is left out with its subtree; nothing
        tells the reader that it existed.
        """
        group_set = frozenset(groups)
        kept: list[etree._Element] = []
        for element in elements:
            copy = self._pruned(user, group_set, element, path_of)
            if copy is not None:
                kept.append(copy)
        return kept

    def _pruned(
        self, user: str, groups: frozenset[str], element: etree._Element, path_of: Callable[[etree._Element], str]
    ) -> etree._Element | None:
        path = path_of(element)
        if not self.decide(user, groups, "read", path):
            return None
        if not self.could_differ_below(path):
            return _deepcopy(element)
        out = etree.Element(element.tag, nsmap=nsmap_of(element))
        for name, value in element.attrib.items():
            out.set(name, value)
        out.text = element.text
        for child in element:
            if not isinstance(child.tag, str):
                continue
            pruned = self._pruned(user, groups, child, path_of)
            if pruned is not None:
                out.append(pruned)
        return out


def _deepcopy(element: etree._Element) -> etree._Element:
    return copy.deepcopy(element)


@dataclass(frozen=True)
class NacmState:
    """``/nacm`` as a server reports it: the configuration in force and RFC 8341's denial counters.

    The counters count since the agent started: RPCs refused (``denied_operations``),
    edits of running refused (``denied_data_writes``) and notifications withheld
    from a subscriber (``denied_notifications``).
    """

    nacm: Nacm
    denied_operations: int = 0
    denied_data_writes: int = 0
    denied_notifications: int = 0


# -- paths ------------------------------------------------------------------------------------------
_STEP = re.compile(r"/([^/\[\]]+)((?:\[[^\]]*\])*)")
_PREDICATE = re.compile(r"\[\s*([^=\]\s]+)\s*=\s*(?:'([^']*)'|\"([^\"]*)\")\s*\]")

Step = tuple[str, str, tuple[tuple[str, str], ...]]  # module, name, key predicates


def _steps(path: str) -> tuple[Step, ...]:
    """``/m:a/b[k='v']`` -> ((m, a, ()), (m, b, ((k, v),))); a step without a module inherits its parent's."""
    steps: list[Step] = []
    module = ""
    for match in _STEP.finditer(path):
        name = match.group(1)
        if ":" in name:
            module, name = name.split(":", 1)
        predicates = tuple(
            (key.split(":", 1)[-1], single if single is not None else double or "")
            for key, single, double in _PREDICATE.findall(match.group(2))
        )
        steps.append((module, name, predicates))
    return tuple(steps)


def _prefix_matches(request: Sequence[Step], rule: Sequence[Step]) -> bool:
    """Whether the ``rule`` steps select the node at ``request`` or one of its ancestors."""
    if len(rule) > len(request):
        return False
    for (rmod, rname, rkeys), (qmod, qname, qkeys) in zip(rule, request, strict=False):
        if (rmod, rname) != (qmod, qname) and rname != "*":
            return False
        if rkeys and not set(rkeys) <= set(qkeys):
            return False
    return True


def _under(path: str, ancestor: str) -> bool:
    return _prefix_matches(_steps(path), _steps(ancestor))


def _matches(rule: Rule, access: AccessOp, target: Target, steps: tuple[Step, ...]) -> bool:
    if "*" not in rule.operations and access not in rule.operations:
        return False
    if isinstance(target, Rpc | Notification):
        module, name = target.module, target.name
        wanted = "rpc" if isinstance(target, Rpc) else "notification"
        if rule.module_name not in ("*", module) or rule.kind not in ("any", wanted):
            return False
        return rule.kind == "any" or rule.target in ("*", name)
    if rule.kind in ("rpc", "notification"):
        return False
    if rule.kind == "data" and rule.target:
        rule_steps = _steps(rule.target)
        if not _prefix_matches(steps, rule_steps):
            return False
        return rule.module_name in ("*", rule_steps[0][0] if rule_steps else "")
    top_module = steps[0][0] if steps else ""
    return rule.module_name in ("*", top_module)


# -- loading ----------------------------------------------------------------------------------------
_PATH = re.compile(r"(?:/(?:[A-Za-z_][\w.-]*:)?(?:[A-Za-z_][\w.-]*|\*)(?:\[[^\]]+\])*)+|/")


def _nacm_context() -> YangContext:
    return YangContext.default()  # ietf-netconf-acm is one of the agent's modules


def nacm_from_json(data: Mapping[str, Any], where: str = "NACM rules") -> Nacm:
    """Build a `Nacm` from RFC 7951 JSON (``{"ietf-netconf-acm:nacm": {...}}``), validated with libyang."""
    body = data.get(f"{NACM_MODULE}:nacm", {})
    # A rule's path is checked by our own parser (libyang would resolve it against the modules of its
    # context), so rules may name any module, also one a later version of the agent serves.
    structure = copy.deepcopy(dict(data))
    for rule_list in structure.get(f"{NACM_MODULE}:nacm", {}).get("rule-list", []):
        for rule in rule_list.get("rule", []):
            path = rule.pop("path", None)
            if path is not None:
                if not isinstance(path, str) or not _PATH.fullmatch(path):
                    raise ConfigError(
                        f"{where}: rule-list {rule_list.get('name')!r} rule {rule.get('name')!r}: path {path!r} "
                        "is not an instance identifier like /module:container/list[key='value']/leaf"
                    )
                rule["rpc-name"] = "*"  # keeps the rule-type choice filled for the check
    try:
        _nacm_context().json_to_xml(structure, "config")
    except AnAgentError as exc:
        raise ConfigError(f"{where}: not valid {NACM_MODULE} data: {exc}") from None
    groups = {
        str(g["name"]): frozenset(str(u) for u in g.get("user-name", []))
        for g in body.get("groups", {}).get("group", [])
    }
    rule_lists = tuple(
        RuleList(
            str(rl["name"]),
            frozenset(str(g) for g in rl.get("group", [])),
            tuple(_rule(r) for r in rl.get("rule", [])),
        )
        for rl in body.get("rule-list", [])
    )
    return Nacm(
        enable_nacm=bool(body.get("enable-nacm", True)),
        read_default=body.get("read-default", "permit"),
        write_default=body.get("write-default", "deny"),
        exec_default=body.get("exec-default", "permit"),
        enable_external_groups=bool(body.get("enable-external-groups", True)),
        groups=groups,
        rule_lists=rule_lists,
    )


def _rule(data: Mapping[str, Any]) -> Rule:
    ops_text = str(data.get("access-operations", "*"))
    operations = ALL_OPERATIONS if ops_text.strip() == "*" else frozenset(ops_text.split())
    kind: Literal["any", "rpc", "notification", "data"] = "any"
    target = None
    for leaf, name in (("rpc-name", "rpc"), ("notification-name", "notification"), ("path", "data")):
        if leaf in data:
            kind, target = name, str(data[leaf])  # type: ignore[assignment]
    return Rule(str(data["name"]), data["action"], str(data.get("module-name", "*")), kind, target, operations)


def load_nacm(path: Path) -> Nacm:
    """Read ``--nacm FILE`` (RFC 7951 JSON of ietf-netconf-acm); `ConfigError` naming the file on any problem."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read NACM file {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ConfigError(f'{path}: expected a JSON object with "{NACM_MODULE}:nacm"')
    return nacm_from_json(data, str(path))


def _permit(name: str, **fields: Any) -> Rule:
    return Rule(name, "permit", **fields)


def _exec_rule(action: Literal["permit", "deny"], name: str, module: str, rpc: str) -> Rule:
    return Rule(name, action, module_name=module, kind="rpc", target=rpc, operations=frozenset({"exec"}))


_SCHEMA_DECISIONS = ("approve-schema-patch", "reject-schema-patch", "withdraw-schema-key")

DEFAULT_NACM = Nacm(
    rule_lists=(
        RuleList("admin", frozenset({"admin"}), (_permit("permit-all"),)),
        RuleList(
            "schema-admin",
            frozenset({"schema-admin"}),
            tuple(_exec_rule("permit", f"permit-{rpc}", "an-agent-schema", rpc) for rpc in _SCHEMA_DECISIONS),
        ),
        RuleList(
            "operators",
            frozenset({"operators"}),
            tuple(
                _permit(
                    f"write-{top}",
                    module_name="irtf-agent",
                    kind="data",
                    target=f"/irtf-agent:{top}",
                    operations=frozenset({"create", "update", "delete"}),
                )
                for top in ("tasks", "data-params")
            ),
        ),
        RuleList(
            "everyone",
            frozenset({"*"}),
            (
                *(_exec_rule("deny", f"deny-{rpc}", "an-agent-schema", rpc) for rpc in _SCHEMA_DECISIONS),
                # Ownership narrows it: another user's session needs an admin (runtime.authorization).
                _exec_rule("permit", "permit-kill-own-session", "ietf-netconf", "kill-session"),
            ),
        ),
    )
)
"""What ships: ``admin`` may do everything; ``schema-admin`` may decide schema patches (nobody else);
``operators`` may create, change and delete tasks and data-params (task ownership narrows change and
delete to the owner); everyone may read (but not ``/nacm``), negotiate, subscribe and fetch templates;
``write-default`` deny, so a user in no group is read-only; every group member may ``kill-session``
(their own sessions: another user's needs an admin, checked on top of NACM; a user in no group reaches
the defaults, where kill-session is default-deny-all)."""
