"""Derive, at run time, the copy of our YANG modules that the reference netconfd loads.

netconfd (yuma123 2.13) has no instrumentation for our modules, so it can only
serve what it holds as configuration, and its YANG parser predates part of
YANG 1.1. The shipped modules are therefore rewritten into a temporary
directory, never committed, with the smallest changes that let netconfd hold
the same data:

1. each top-level container listed in `make_config` (by default the agent
   profile `/irtf-agent:agent`, which is `config false` in irtf-agent) loses
   its `config false`, so the profile can be loaded from the startup file and
   answered by `<get>`; it also gets a `presence` statement, because yuma123
   refuses a top-level non-presence container with mandatory leaves
   ("top-level mandatory objects are not allowed");
2. `must` statements inside `rpc` input/output are dropped: yuma123 rejects
   them ("'must' token not allowed here"); the benchmarks never call those
   RPCs on netconfd.

Everything else, node names, types, patterns, namespaces, and the task list,
is unchanged, so both servers answer the same request with the same XML.
"""

from __future__ import annotations

import io
import optparse
from collections.abc import Iterable, Sequence
from pathlib import Path

from pyang import context, repository, statements, yang_parser
from pyang.translators import yang as yang_output

from bench.wire import BenchError

# Where Debian's yuma123 keeps the modules it ships; modules found there are not copied.
YUMA_MODULES = Path("/usr/share/yuma/modules")
DEFAULT_MAKE_CONFIG = ("irtf-agent:agent",)


def derive_reference_modules(
    modules_dir: Path,
    modules: Sequence[str],
    out_dir: Path,
    make_config: Iterable[str] = DEFAULT_MAKE_CONFIG,
) -> list[Path]:
    """Write netconfd-loadable copies of `modules` and their imports into `out_dir`.

    Imports are followed recursively inside `modules_dir`; an import netconfd
    ships itself (under /usr/share/yuma/modules) is left to netconfd's copy.
    Returns the files written. Raises BenchError when a module is missing or
    does not parse.
    """
    targets: dict[str, set[str]] = {}
    for item in make_config:
        module, _, node = item.partition(":")
        targets.setdefault(module, set()).add(node)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = _pyang_context(modules_dir)
    written: list[Path] = []
    todo, seen = list(modules), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_file(modules_dir, name)
        module = _parse(ctx, path)
        todo.extend(imp.arg for imp in module.search("import") if not _yuma_ships(imp.arg))
        _make_config_true(module, targets.get(name, set()))
        _drop_rpc_musts(module)
        text = io.StringIO()
        yang_output.emit_yang(ctx, module, text)
        dest = out_dir / path.name
        dest.write_text(text.getvalue())
        written.append(dest)
    return written


def _pyang_context(modules_dir: Path) -> context.Context:
    ctx = context.Context(repository.FileRepository(str(modules_dir)))
    # Options the YANG output plugin reads; comments are dropped (they do not reach netconfd).
    ctx.opts = optparse.Values(
        {
            "yang_canonical": False,
            "yang_remove_unused_imports": False,
            "yang_remove_comments": True,
            "yang_line_length": None,
        }
    )
    ctx.keep_comments = False
    ctx.keep_arg_substrings = True
    return ctx


def _module_file(modules_dir: Path, name: str) -> Path:
    candidates = sorted(modules_dir.glob(f"{name}@*.yang")) or sorted(modules_dir.glob(f"{name}.yang"))
    if not candidates:
        raise BenchError(f"module {name!r} not found in {modules_dir}")
    return candidates[-1]  # newest revision: file names sort by revision date


def _parse(ctx: context.Context, path: Path) -> statements.Statement:
    ctx.errors = []
    module = yang_parser.YangParser().parse(ctx, path.name, path.read_text())
    if module is None or ctx.errors:
        details = "; ".join(f"{pos}: {tag} {args}" for pos, tag, args in ctx.errors)
        raise BenchError(f"cannot parse {path}: {details or 'no module'}")
    return module


def _yuma_ships(name: str) -> bool:
    return any(YUMA_MODULES.rglob(f"{name}.yang")) or any(YUMA_MODULES.rglob(f"{name}@*.yang"))


def _make_config_true(module: statements.Statement, nodes: set[str]) -> None:
    for stmt in module.substmts:
        if stmt.keyword != "container" or stmt.arg not in nodes:
            continue
        stmt.substmts = [sub for sub in stmt.substmts if sub.keyword != "config"]
        if not any(sub.keyword == "presence" for sub in stmt.substmts):
            presence = statements.new_statement(
                module, stmt, stmt.pos, "presence", "configured for the reference server only"
            )
            stmt.substmts.insert(0, presence)
        nodes.discard(stmt.arg)
    if nodes:
        raise BenchError(f"module {module.arg}: no top-level container {sorted(nodes)} to make config true")


def _drop_rpc_musts(stmt: statements.Statement) -> None:
    for sub in stmt.substmts:
        if sub.keyword in ("input", "output"):
            sub.substmts = [s for s in sub.substmts if s.keyword != "must"]
        _drop_rpc_musts(sub)
