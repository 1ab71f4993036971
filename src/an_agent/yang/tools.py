"""Quality checks of the shipped YANG modules: pyang (as a library) and yanglint.

`check` runs ``pyang --strict``, ``pyang --lint --lint-ensure-hyphenated-names``
and ``yanglint`` on every shipped module and classifies each finding:

- ``error``: an error of any tool; the modules are broken.
- ``kept``: a lint warning we keep on purpose; `KEPT_FINDINGS` says why.
- ``other``: any other warning; fix it or add it to `KEPT_FINDINGS`.

`tree` renders the modules as ``pyang -f tree`` does. pyang is imported
lazily (it is only needed by these checks); yanglint is a C program and runs
as a subprocess.
"""

from __future__ import annotations

import io
import optparse
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from an_agent.errors import YangError
from an_agent.yang.modules import MODULES_DIR, builtin_modules

__all__ = ["KEPT_FINDINGS", "CheckReport", "Finding", "check", "lint_findings", "tree"]

Tool = Literal["pyang", "pyang-lint", "yanglint"]
Classification = Literal["error", "kept", "other"]

# Names the draft spells in camelCase/upper case; renaming them would break
# interoperability with agents that follow draft-wang-nmrg-magent-im-00.
_DRAFT_NAMES = frozenset(
    {
        "CapabilityRequest", "taskAssign", "taskCancel", "FeasibilityNegotiate", "FulfillmentNegotiate",
        "taskResultQuery", "taskResultSubscribe", "taskResultNotify", "FEASIBILITY", "FULFILLMENT",
        "task-sendFrom", "task-sendTo", "commuType", "sendFrom", "sendTo", "dataParam", "dataType", "dataSize",
    }
)  # fmt: skip
# Standard modules: their text (or their XML names) is the standard's.
_STANDARD_MODULES = {
    "ietf-netconf": "rfc-verbatim",
    "ietf-netconf-monitoring": "rfc-verbatim",
    "ietf-netconf-acm": "rfc-verbatim",
    "ietf-netconf-with-defaults": "rfc-verbatim",
    "ietf-netconf-nmda": "rfc-verbatim",
    "ietf-yang-library": "rfc-verbatim",
    "ietf-datastores": "rfc-verbatim",
    "ietf-origin": "rfc-verbatim",
    "notifications": "rfc5277-names",
    "nc-notifications": "rfc5277-names",
}

KEPT_FINDINGS: dict[str, str] = {
    "draft-name": "camelCase / upper-case name of draft-wang-nmrg-magent-im-00, kept for interoperability",
    "rfc-verbatim": "IETF module (RFC 6241 / 6022 / 8341 / 6243 / 8525 / 8342 / 8526) shipped verbatim; "
    "its text is the standard's",
    "rfc5277-names": "module name and camelCase names of the RFC 5277 XML Schema, which NETCONF clients expect",
}
"""Why a lint finding is kept, by kind (see `_why_kept`)."""

YANGLINT_MISSING = "yanglint is not installed: apt-get install libyang2-tools"


@dataclass(frozen=True)
class Finding:
    """One diagnostic of one tool about one module."""

    tool: Tool
    module: str
    line: int | None
    severity: Literal["error", "warning"]
    code: str
    message: str
    classification: Classification
    reason: str | None = None

    def location(self) -> str:
        return f"{self.module}:{self.line}" if self.line else self.module

    def expect_line(self) -> str:
        """The finding as pyang prints it, ``file:line: severity: message`` (expected-output tests)."""
        return f"{self.location()}: {self.severity}: {self.message}"


@dataclass
class CheckReport:
    """The findings of every tool; ``ok`` when none is an error or unexplained.

    ``tools`` maps each tool to its version; ``modules`` lists the files checked.
    """

    findings: list[Finding] = field(default_factory=list)
    tools: dict[str, str] = field(default_factory=dict)
    modules: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.classification == "error"]

    @property
    def kept(self) -> list[Finding]:
        return [f for f in self.findings if f.classification == "kept"]

    @property
    def other(self) -> list[Finding]:
        return [f for f in self.findings if f.classification == "other"]

    @property
    def ok(self) -> bool:
        """No errors and no unexplained warnings."""
        return not self.errors and not self.other

    HEADERS = ("tool", "location", "severity", "class", "message")

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        """One row per finding, matching `HEADERS`, for a table."""
        rows: list[tuple[str, str, str, str, str]] = []
        for f in self.findings:
            message = f.message + (f" [kept: {f.reason}]" if f.reason else "")
            rows.append((f.tool, f.location(), f.severity, f.classification, message))
        return rows

    def summary(self) -> str:
        return (
            f"{len(self.modules)} modules: {len(self.errors)} errors, {len(self.other)} warnings to fix, "
            f"{len(self.kept)} kept on purpose"
        )

    def to_text(self) -> str:
        """A plain-text table of `rows` under `HEADERS`, then `summary` and the tool versions."""
        rows = [self.HEADERS, *self.rows()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(self.HEADERS) - 1)]
        lines = ["  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]) for row in rows]
        versions = ", ".join(f"{tool} {version}" for tool, version in self.tools.items())
        lines += ["", f"{self.summary()} ({versions})"]
        return "\n".join(lines) if self.findings else "\n".join(lines[2:])

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "summary": self.summary(),
            "modules": list(self.modules),
            "tools": dict(self.tools),
            "findings": [asdict(f) for f in self.findings],
        }


def check(modules_dir: Path | str = MODULES_DIR) -> CheckReport:
    """Run pyang --strict, pyang --lint and yanglint on every module in ``modules_dir``.

    Raises `YangError` if yanglint is not installed or a tool cannot run.
    """
    files = _module_files(Path(modules_dir))
    import pyang

    report = CheckReport(modules=[f.name for f in files], tools={"pyang": pyang.__version__})
    report.findings.extend(_pyang_findings(files, lint=False))
    report.findings.extend(_pyang_findings(files, lint=True))
    version, findings = _yanglint(files)
    report.tools["yanglint"] = version
    report.findings.extend(findings)
    return report


def lint_findings(modules_dir: Path | str = MODULES_DIR) -> list[Finding]:
    """Only the ``pyang --lint --lint-ensure-hyphenated-names`` findings (no yanglint needed)."""
    return _pyang_findings(_module_files(Path(modules_dir)), lint=True)


def tree(modules_dir: Path | str = MODULES_DIR, names: Sequence[str] | None = None) -> str:
    """``pyang -f tree`` of the shipped modules (or of the modules called ``names``)."""
    from pyang.plugins.tree import TreePlugin

    files = _module_files(Path(modules_dir))
    if names is not None:
        files = [f for f in files if f.name.split("@", 1)[0] in names]
        missing = set(names) - {f.name.split("@", 1)[0] for f in files}
        if missing:
            raise YangError(f"no shipped module named {', '.join(sorted(missing))}")
    plugin = TreePlugin()
    ctx, modules = _pyang_run(files, [plugin], ["-f", "tree"])
    broken = [e for e in _collect(ctx, files, "pyang") if e.severity == "error"]
    if broken:
        raise YangError("pyang cannot render the tree: " + "; ".join(e.expect_line() for e in broken))
    out = io.StringIO()
    plugin.setup_fmt(ctx)
    plugin.emit(ctx, modules, out)
    return out.getvalue()


# ----------------------------------------------------------------------- pyang


def _module_files(directory: Path) -> list[Path]:
    files = sorted(directory.glob("*.yang"))
    if not files:
        raise YangError(f"no YANG modules (*.yang) in {directory}")
    return files


def _pyang_findings(files: list[Path], lint: bool) -> list[Finding]:
    from pyang.plugins.lint import LintPlugin

    options = ["--lint", "--lint-ensure-hyphenated-names"] if lint else []
    ctx, _ = _pyang_run(files, [LintPlugin()], options, strict=True)
    return _collect(ctx, files, "pyang-lint" if lint else "pyang")


def _pyang_run(
    files: list[Path], plugins: list[Any], options: list[str], strict: bool = False
) -> tuple[Any, list[Any]]:
    """Validate ``files`` with a private pyang context; the plugins are not registered globally."""
    from pyang import context, repository

    parser = optparse.OptionParser(add_help_option=False)
    parser.add_option("-f", dest="format")
    # Options the tree plugin reads but declares only when the restconf and
    # structure plugins are registered globally (we register none).
    parser.set_defaults(tree_print_yang_data=False, tree_print_structures=False)
    for plugin in plugins:
        plugin.add_opts(parser)
    opts, _ = parser.parse_args(options)
    # Our directory, then libyang's built-in IETF modules (the imports
    # libyang resolves); no environment variables, no $HOME.
    builtin = _builtin_dir()
    repos = repository.FileRepository(f"{files[0].parent}{os.pathsep}{builtin}", use_env=False, no_path_recurse=True)
    ctx = context.Context(repos)
    ctx.opts = opts
    ctx.strict = strict
    for plugin in plugins:
        plugin.setup_ctx(ctx)
    modules = []
    for path in files:
        name, _, rev = path.stem.partition("@")
        module = ctx.add_module(str(path), path.read_text(encoding="utf-8"), "yang", name, rev or None,
                                expect_failure_error=False, primary_module=True)  # fmt: skip
        if module is not None:
            modules.append(module)
    for plugin in plugins:
        plugin.pre_validate_ctx(ctx, modules)
    ctx.validate()
    for plugin in plugins:
        plugin.post_validate_ctx(ctx, modules)
    return ctx, modules


_BUILTIN_DIR: tempfile.TemporaryDirectory[str] | None = None


def _builtin_dir() -> str:
    """A directory holding libyang's built-in modules (written once per process)."""
    global _BUILTIN_DIR
    if _BUILTIN_DIR is None:
        tmp = tempfile.TemporaryDirectory(prefix="an-agent-yang-")
        for name, text in builtin_modules().items():
            (Path(tmp.name) / name).write_text(text, encoding="utf-8")
        _BUILTIN_DIR = tmp
    return _BUILTIN_DIR.name


def _collect(ctx: Any, files: list[Path], tool: Tool) -> list[Finding]:
    from pyang import error

    ours = {str(f) for f in files}
    findings = []
    seen = set()
    for pos, tag, args in sorted(ctx.errors, key=lambda e: (str(e[0].ref), e[0].line)):
        if str(pos.ref) not in ours:
            continue  # a module pulled in by import (e.g. ietf-yang-types): not ours to fix
        severity: Literal["error", "warning"] = "warning" if error.is_warning(error.err_level(tag)) else "error"
        message = error.err_to_str(tag, args)
        module = Path(pos.ref).name
        key = (module, pos.line, message)
        if key in seen:
            continue  # pyang reports some lint findings once per pass
        seen.add(key)
        # RFC 6243's module writes description before type: a lint "error" (canonical order) of the
        # standard's own text, which we ship verbatim; libyang and yanglint accept it.
        canonical = tag.startswith("UNEXPECTED_KEYWORD_CANONICAL")
        reason = _why_kept(module, tag, args) if severity == "warning" or canonical else None
        severity = "warning" if canonical and reason else severity
        classification: Classification = "error" if severity == "error" else ("kept" if reason else "other")
        findings.append(Finding(tool, module, pos.line, severity, tag, message, classification, reason))
    return findings


def _why_kept(module_file: str, tag: str, args: Any) -> str | None:
    standard = _STANDARD_MODULES.get(module_file.split("@", 1)[0])
    if standard:
        return KEPT_FINDINGS[standard]
    name = args[0] if isinstance(args, tuple | list) and args else args
    if tag == "LINT_NOT_HYPHENATED" and name in _DRAFT_NAMES:
        return KEPT_FINDINGS["draft-name"]
    return None


# -------------------------------------------------------------------- yanglint

# "libyang err : <message> (Line number 7.)", "YANGLINT[E]: <message>", "libyang warn: ..."
_YANGLINT_LINE = re.compile(r"^(?:libyang (?P<level>err|warn)\w*|YANGLINT\[(?P<yl>[EW])\])\s*: (?P<msg>.*)$")


def _yanglint(files: list[Path]) -> tuple[str, list[Finding]]:
    exe = shutil.which("yanglint")
    if exe is None:
        raise YangError(YANGLINT_MISSING)
    try:
        version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30, check=False)
        result = subprocess.run(
            [exe, "-p", str(files[0].parent), *map(str, files)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise YangError(f"yanglint could not run: {exc}") from exc
    findings = []
    for line in (result.stderr + result.stdout).splitlines():
        m = _YANGLINT_LINE.match(line.strip())
        if not m:
            continue
        is_error = m.group("level") == "err" or m.group("yl") == "E"
        severity: Literal["error", "warning"] = "error" if is_error else "warning"
        module = next((f.name for f in files if f.stem.split("@", 1)[0] in line), "")
        classification: Classification = "error" if severity == "error" else "other"
        findings.append(Finding("yanglint", module, None, severity, "", m.group("msg"), classification))
    if result.returncode != 0 and not any(f.severity == "error" for f in findings):
        msg = (result.stderr or result.stdout).strip() or f"exit status {result.returncode}"
        findings.append(Finding("yanglint", "", None, "error", "", msg, "error"))
    return version.stdout.strip().removeprefix("yanglint").strip(), findings
