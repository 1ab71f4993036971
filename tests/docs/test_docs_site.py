"""The manual builds strictly and offline, its generated reference matches the code, and a browser
shows it: headless Chromium opens the index and the CLI reference from a local web server."""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from an_agent.cli import build_parser
from an_agent.cli._tree import walk

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The sandbox's flags, no first-run or background traffic, and every host name unresolvable: the
# page may load from 127.0.0.1 only (an outside font or script would be missing from the screenshot).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--window-size=1280,900",
)


def build(docs: Path, site: Path, config: Path = ROOT / "mkdocs.yml") -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``docs`` into ``site``, from the checkout (snippets read its files)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    done = build(ROOT / "docs", out)
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the test output is not a web log
        pass


@pytest.fixture
def served(site: Path) -> Iterator[str]:
    handler = partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.slow
def test_the_cli_reference_is_every_commands_help(site: Path) -> None:
    page = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    for command in walk(build_parser()).walk():
        assert " ".join(("an-agent", *command.path)) in page, command.path
    assert "--schema-version" in page and "feasibility" in page


@pytest.mark.slow
def test_yang_trees_and_the_topology_schema_are_published(site: Path) -> None:
    yang = (site / "reference" / "yang.html").read_text(encoding="utf-8")
    assert "module: irtf-agent" in yang and "task-negotiate" in yang
    published = site / "reference" / "topology.schema.json"
    assert published.read_bytes() == (ROOT / "src" / "an_agent" / "lab" / "topology.schema.json").read_bytes()


@pytest.mark.slow
def test_the_module_size_table_is_the_code_as_built(site: Path) -> None:
    page = (site / "architecture.html").read_text(encoding="utf-8")
    package = ROOT / "src" / "an_agent"
    lines, largest = max((len(p.read_text(encoding="utf-8").splitlines()), p) for p in package.rglob("*.py"))
    assert f"<td>{lines}</td>\n<td>{largest.relative_to(package).as_posix()}</td>" in page
    assert "generate:" not in page


@pytest.mark.slow
def test_nothing_is_fetched_from_the_network(site: Path) -> None:
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, page
        assert '<script src="http' not in text and '<link rel="stylesheet" href="http' not in text, page


@pytest.mark.slow
def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    with (docs / "index.md").open("a", encoding="utf-8") as f:
        f.write("\nSee [the missing page](no-such-page.md).\n")
    config = tmp_path / "mkdocs.yml"
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").replace("docs_dir: docs", f"docs_dir: {docs}")
    config.write_text(text.replace("- tools/docs_hooks.py", f"- {ROOT / 'tools' / 'docs_hooks.py'}"))
    done = build(docs, tmp_path / "site", config)
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make setup installs it)")
@pytest.mark.parametrize(
    ("path", "text"), [("index.html", "Where to start"), ("reference/cli.html", "an-agent task assign")]
)
def test_chromium_shows_the_page(served: str, path: str, text: str, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    profile = tmp_path / "profile"
    shot = tmp_path / (path.replace("/", "-") + ".png")
    url = f"{served}/{path}"
    common = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
    subprocess.run([*common, f"--screenshot={shot}", url], capture_output=True, timeout=120, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True)
    assert text in dom.stdout
    assert "md-header" in dom.stdout and "md-nav" in dom.stdout  # the theme's layout, not a bare page
