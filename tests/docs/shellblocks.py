"""The shell blocks of a Markdown page, and a bash script that runs them the way a reader would.

A block is a fenced code block whose info string is ``sh``, ``bash``, ``shell`` or ``console``. A block
the tests cannot run is marked on the line before it with ``<!-- not-run: REASON -->`` (an HTML
comment: neither GitHub nor the site shows it). The runnable blocks of a page run in one bash
session, in order, as a reader types them, with these rules:

- every command must exit 0, unless its trailing comment says ``# exits N``;
- a command sent to the background (``... &``) is a server: the script waits until its port (the
  ``--port`` on the line, else ``$AN_AGENT_PORT``) takes connections, and kills it at the end;
- the page's agent port 8830 is replaced by a free one, so the run never meets another agent.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

SHELL_INFO = {"sh", "bash", "shell", "console"}
DOC_PORT = "8830"
_FENCE = re.compile(r"^(`{3,})\s*([\w-]*)")
_NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(.*?)\s*-->$")
_EXITS = re.compile(r"#\s*exits\s+(\d+)")
_TRAILING_COMMENT = re.compile(r"\s+#\s.*$")

PRELUDE = r"""
__check() {
    if [ "$1" != "$2" ]; then echo "DOCS-FAIL: exit status $1, the page expects $2: $3" >&2; exit 97; fi
}
__await_port() {
    for _ in $(seq 900); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "DOCS-FAIL: nothing listens on port $1 after 90 s: $2" >&2; exit 98
}
trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT
"""


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    info: str
    text: str
    not_run: str | None  # the reason, when marked not-run

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


def shell_blocks(path: Path) -> list[Block]:
    """The shell blocks of ``path``, in order, each with its not-run reason if it has one."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(fence.group(1)))
        if fence.group(2) in SHELL_INFO:
            before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            marker = _NOT_RUN.match(before)
            blocks.append(Block(path, i + 1, fence.group(2), "\n".join(lines[i + 1 : end]), marker and marker.group(1)))
        i = end + 1
    return blocks


def commands(text: str) -> list[str]:
    """The logical lines of a block: continuation lines (``\\``) joined."""
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        out.append(pending + raw)
        pending = ""
    if pending:
        out.append(pending)
    return out


def script(blocks: list[Block], port: int) -> str:
    """The bash script that runs ``blocks`` (the runnable ones) with the rules of this module."""
    out = [PRELUDE]
    for block in blocks:
        if block.not_run is not None:
            continue
        out.append(f"# --- {block.where}")
        for line in commands(block.text.replace(DOC_PORT, str(port))):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            command = _TRAILING_COMMENT.sub("", stripped)
            label = shlex.quote(f"{block.where}: {command[:100]}")
            if command.endswith("&"):
                ports = re.findall(r"--port[= ](\d+)", command)
                out.append(command)
                out.append(f"__await_port {ports[0] if ports else '$AN_AGENT_PORT'} {label}")
                continue
            expected = _EXITS.search(stripped[len(command) :])
            out.append(command)
            out.append(f"__check $? {expected.group(1) if expected else 0} {label}")
    return "\n".join(out) + "\n"
