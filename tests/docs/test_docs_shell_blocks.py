"""Every shell block of the README and of the getting-started page runs as written, or says why not."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from shellblocks import Block, commands, script, shell_blocks

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "getting-started.md"]
# What the pages refer to by relative path, as in a checkout (the run happens in a scratch directory).
CHECKOUT = (".venv", "topologies")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_shell_block_runs_or_says_why_not(page: Path) -> None:
    blocks = shell_blocks(page)
    runnable = [b for b in blocks if b.not_run is None]
    assert runnable, f"{page.name}: no shell block is run"
    for block in blocks:
        assert block.not_run is None or len(block.not_run) >= 10, f"{block.where}: not-run needs a reason"
    for block in runnable:
        assert any(c.strip() and not c.strip().startswith("#") for c in commands(block.text)), block.where


def test_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "is planned" not in text
    for target in ("docs/getting-started.md", "docs/reference/cli.md", "docs/images/lab-report.png"):
        assert f"]({target})" in text and (ROOT / target).exists(), target


def test_a_block_is_parsed_with_its_marker_and_expected_status(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- not-run: needs root and a bridge -->\n```sh\nsudo true\n```\n\n"
        "```sh\nfalse   # exits 1\nan-agent serve \\\n    --port 8830 &\n```\n"
    )
    blocks = shell_blocks(page)
    assert [b.not_run for b in blocks] == ["needs root and a bridge", None]
    text = script(blocks, 41000)
    assert "sudo" not in text
    assert "false\n__check $? 1 " in text
    assert "an-agent serve      --port 41000 &\n__await_port 41000 " in text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    """The runnable blocks, in order, in one bash session in a scratch copy of the checkout's layout."""
    blocks: list[Block] = shell_blocks(page)
    for name in CHECKOUT:
        (tmp_path / name).symlink_to(ROOT / name)
    port = _free_port()
    (tmp_path / "run.sh").write_text(script(blocks, port))
    env = {**os.environ, "HOME": str(tmp_path), "AN_AGENT_PORT": str(port)}
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.Popen(
        ["bash", "run.sh"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # everything the page starts is in this process group, stopped below
    )
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):  # the group is gone when the page stopped everything
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()
    (tmp_path / "stdout.txt").write_text(out)
    (tmp_path / "stderr.txt").write_text(err)
    assert proc.returncode == 0, f"{page.name}: {err[-3000:]}"
    assert "DOCS-FAIL" not in err
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):  # the page's agent was stopped
        s.connect(("127.0.0.1", port))
    report = tmp_path / "state" / "report" / "cross-domain-fault.html"
    assert report.exists(), "the lab block writes its report"
    assert "Closed loop complete" in report.read_text(encoding="utf-8")
