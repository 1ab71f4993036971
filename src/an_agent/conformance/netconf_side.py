"""The NETCONF side of a run: sessions to the target, and what it says it serves.

`NetconfSide` opens the sessions (every step marked on its `Watch`, so a silent target is noticed),
and learns lazily, once, what the target serves: the modules its hello advertises (`ModuleCap`), the
modules its yang-library or modules-state lists, the module texts ``<get-schema>`` returns, and one
libyang context compiled from those texts alone (never from our own modules).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import parse_qs, urlsplit

from lxml import etree

from an_agent.conformance.target import Options, Target, Watch
from an_agent.errors import AnAgentError, RpcError, YangError
from an_agent.model.ns import NETCONF_MONITORING_NS
from an_agent.nc.agent_client import AgentClient
from an_agent.nc.client import NetconfClient
from an_agent.yang.context import YangContext

T = TypeVar("T")

YANG_LIBRARY_NS = "urn:ietf:params:xml:ns:yang:ietf-yang-library"
YANG_LIBRARY_CAPABILITY = "urn:ietf:params:netconf:capability:yang-library:"
NOTIFICATION_CAPABILITY = "urn:ietf:params:netconf:capability:notification:1.0"
BASE_11 = "urn:ietf:params:netconf:base:1.1"
BASE_10 = "urn:ietf:params:netconf:base:1.0"
_MON = f"{{{NETCONF_MONITORING_NS}}}"
_LIB = f"{{{YANG_LIBRARY_NS}}}"
_REVISION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_HEADER = re.compile(r"^\s*(module|submodule)\s+([A-Za-z_][\w.-]*)", re.MULTILINE)
_REVISIONS = re.compile(r"^\s*revision\s+\"?(\d{4}-\d{2}-\d{2})", re.MULTILINE)
# An include statement, not a description line that starts with the word: the name ends in ";" or "{".
_INCLUDE = re.compile(r"^\s*include\s+[\"']?([A-Za-z_][\w.-]*)[\"']?\s*[;{]", re.MULTILINE)
_YANG_11 = re.compile(r"^\s*yang-version\s+\"?1\.1", re.MULTILINE)


@dataclass(frozen=True)
class ModuleCap:
    """A module as the hello (RFC 6020/7950 section 5.6.4) or the yang-library names it."""

    name: str
    revision: str | None
    namespace: str
    features: tuple[str, ...] = ()
    source: str = ""
    """The capability URI, or where in the library the entry was found."""

    @property
    def label(self) -> str:
        return f"{self.name}@{self.revision}" if self.revision else self.name


def module_capabilities(capabilities: list[str]) -> tuple[list[ModuleCap], list[str]]:
    """The modules a hello advertises, and a problem for each malformed module capability."""
    modules: list[ModuleCap] = []
    problems: list[str] = []
    for uri in capabilities:
        if "module=" not in uri:
            continue
        split = urlsplit(uri)
        params = parse_qs(split.query)
        namespace = uri.split("?", 1)[0]
        name = (params.get("module") or [""])[0]
        revisions = params.get("revision")
        revision = revisions[0] if revisions else None
        features = tuple(f for f in ",".join(params.get("features", [])).split(",") if f)
        if not name:
            problems.append(f"{uri}: no module name")
            continue
        if revision is not None and not _REVISION.match(revision):
            problems.append(f"{uri}: revision {revision!r} is not YYYY-MM-DD")
        modules.append(ModuleCap(name, revision, namespace, features, uri))
    return modules, problems


@dataclass
class LibraryAnswer:
    """What the target's module library says: which list was read, its modules, and why none."""

    where: str | None
    modules: list[ModuleCap] = field(default_factory=list)
    why_not: str = ""


@dataclass
class Fetched:
    """The module texts ``<get-schema>`` returned, by module name, and a problem per module that failed."""

    texts: dict[str, str] = field(default_factory=dict)
    submodules: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)


class NetconfSide:
    """Sessions to the target's NETCONF face and the facts learnt through them (module docstring)."""

    def __init__(self, target: Target, options: Options) -> None:
        assert target.netconf is not None
        self.target = target
        self.options = options
        self.host, self.port = target.netconf
        self.watch = Watch()
        self._sessions: list[AgentClient] = []
        self._main: AgentClient | None = None
        self._library: LibraryAnswer | None = None
        self._fetched: Fetched | None = None
        self._compiled: YangContext | YangError | None = None

    # -- sessions -----------------------------------------------------------------------------
    def open(self) -> AgentClient:
        """A new session (each is aborted when the face is given up on)."""
        key = str(self.target.key) if self.target.key else None
        with self.watch.step(f"connect to NETCONF {self.host}:{self.port}"):
            client = AgentClient.connect(
                self.host,
                self.port,
                username=self.target.user,
                password=None if key else self.target.password,
                key_filename=key,
                timeout=self.options.timeout,
            )
        self._sessions.append(client)
        return client

    @property
    def client(self) -> AgentClient:
        """The main session, opened on first use."""
        if self._main is None:
            self._main = self.open()
        return self._main

    @property
    def nc(self) -> NetconfClient:
        return self.client.netconf

    def step(self, label: str, work: Callable[[], T]) -> T:
        """Run ``work`` (one exchange with the target) as a watched step."""
        with self.watch.step(label):
            return work()

    def abort(self) -> None:
        """Drop every session at once (the target went silent; no polite close)."""
        for session in self._sessions:
            session.abort()

    def close(self) -> None:
        """Close every session politely (abort those that do not answer)."""
        for session in self._sessions:
            try:
                with self.watch.step("close-session"):
                    session.netconf.close(timeout=min(5.0, self.options.timeout))
            except AnAgentError:
                session.abort()

    # -- what the target serves --------------------------------------------------------------------
    @property
    def capabilities(self) -> list[str]:
        return self.nc.server_capabilities

    @property
    def hello_modules(self) -> list[ModuleCap]:
        return module_capabilities(self.capabilities)[0]

    def advertises(self, namespace_or_prefix: str) -> bool:
        return any(c.startswith(namespace_or_prefix) for c in self.capabilities)

    def serves_module(self, name: str) -> bool:
        names = {m.name for m in self.hello_modules} | {m.name for m in self.library().modules}
        return name in names

    def library(self) -> LibraryAnswer:
        """The module list of ``/yang-library`` (RFC 8525) or else ``/modules-state`` (RFC 7895)."""
        if self._library is None:
            self._library = self._read_library()
        return self._library

    def _read_library(self) -> LibraryAnswer:
        reasons = []
        for top, label in (("yang-library", "/yang-library (RFC 8525)"), ("modules-state", "/modules-state")):
            try:
                data = self.step(f"<get> {label}", lambda t=top: self.nc.get(filter=etree.Element(_LIB + t)))  # type: ignore[misc]
            except RpcError as exc:
                reasons.append(f"{label}: {exc}")
                continue
            modules = _library_modules(data, top)
            if modules:
                return LibraryAnswer(label, modules)
            reasons.append(f"{label}: empty")
        return LibraryAnswer(None, why_not="; ".join(reasons))

    def schemas_list(self) -> list[ModuleCap] | RpcError:
        """``/netconf-state/schemas`` (RFC 6022), or the refusal."""
        filter_ = etree.Element(_MON + "netconf-state")
        etree.SubElement(filter_, _MON + "schemas")
        try:
            data = self.step("<get> /netconf-state/schemas", lambda: self.nc.get(filter=filter_))
        except RpcError as exc:
            return exc
        out = []
        for schema in data.iter(_MON + "schema"):
            fmt = schema.findtext(_MON + "format") or ""
            if fmt and not fmt.endswith("yang"):
                continue
            name = schema.findtext(_MON + "identifier") or ""
            version = schema.findtext(_MON + "version") or None
            out.append(
                ModuleCap(name, version, schema.findtext(_MON + "namespace") or "", (), "/netconf-state/schemas")
            )
        return out

    def wanted_modules(self) -> list[ModuleCap]:
        """Every module the hello or the library names, once (the hello's entry first)."""
        seen: dict[str, ModuleCap] = {}
        for module in [*self.hello_modules, *self.library().modules]:
            seen.setdefault(module.name, module)
        return list(seen.values())

    def fetched(self) -> Fetched:
        """``<get-schema>`` of every module the target names (and of the submodules they include)."""
        if self._fetched is None:
            self._fetched = self._fetch()
        return self._fetched

    def _fetch(self) -> Fetched:
        out = Fetched()
        for module in self.wanted_modules():
            out.asked.append(module.label)
            try:
                text = self.step(
                    f"<get-schema> {module.label}",
                    lambda m=module: self.nc.get_schema(m.name, m.revision),  # type: ignore[misc]
                )
            except RpcError as exc:
                out.problems.append(f"{module.label}: {exc}")
                continue
            header = _HEADER.search(text)
            if header is None or header.group(2) != module.name:
                found = f"{header.group(1)} {header.group(2)}" if header else text.strip()[:60]
                out.problems.append(f"{module.label}: the text is not module {module.name} (it starts {found!r})")
                continue
            revisions = _REVISIONS.findall(text)
            if module.revision and (not revisions or max(revisions) != module.revision):
                out.problems.append(
                    f"{module.label}: the text's latest revision is {max(revisions) if revisions else 'none'}"
                )
            out.texts[module.name] = text
        for text in list(out.texts.values()):
            for name in _INCLUDE.findall(text):
                if name in out.submodules:
                    continue
                try:
                    out.submodules[name] = self.step(f"<get-schema> {name}", lambda n=name: self.nc.get_schema(n))  # type: ignore[misc]
                except RpcError as exc:
                    out.problems.append(f"submodule {name}: {exc}")
        return out

    def yang_11(self) -> list[str]:
        """The fetched modules that are YANG 1.1."""
        return sorted(name for name, text in self.fetched().texts.items() if _YANG_11.search(text))

    def compiled(self) -> YangContext | YangError:
        """One libyang context of the fetched texts (with the features the target announces), or why not."""
        if self._compiled is None:
            fetched = self.fetched()
            workdir = Path(tempfile.mkdtemp(prefix="an-conformance-"))  # 0700, gone once compiled
            try:
                (workdir / "sub").mkdir()
                for name, text in fetched.texts.items():
                    (workdir / f"{name}.yang").write_text(text)
                for name, text in fetched.submodules.items():
                    (workdir / "sub" / f"{name}.yang").write_text(text)
                features = {
                    m.name: list(m.features) for m in [*self.library().modules, *self.hello_modules] if m.features
                }
                self._compiled = YangContext(workdir, features)
            except YangError as exc:
                self._compiled = exc
            except Exception as exc:  # libyang on a module it chokes on: a finding, not a crash
                self._compiled = YangError(f"libyang failed: {type(exc).__name__}: {exc}")
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
        return self._compiled


def _library_modules(data: etree._Element, top: str) -> list[ModuleCap]:
    out = []
    if top == "yang-library":
        for tag in ("module", "import-only-module"):
            for entry in data.iter(_LIB + tag):
                features = tuple(e.text or "" for e in entry.findall(_LIB + "feature"))
                out.append(
                    ModuleCap(
                        entry.findtext(_LIB + "name") or "",
                        entry.findtext(_LIB + "revision") or None,
                        entry.findtext(_LIB + "namespace") or "",
                        features,
                        f"/yang-library {tag}",
                    )
                )
    else:
        for entry in data.iter(_LIB + "module"):
            features = tuple(e.text or "" for e in entry.findall(_LIB + "feature"))
            out.append(
                ModuleCap(
                    entry.findtext(_LIB + "name") or "",
                    entry.findtext(_LIB + "revision") or None,
                    entry.findtext(_LIB + "namespace") or "",
                    features,
                    "/modules-state module",
                )
            )
    return [m for m in out if m.name]
