"""netconf-console2 (PyPI) and yuma123 yangcli (Debian) against the YANG library, with-defaults, the candidate,
confirmed commit, locks, validate and rollback-on-error (docs/reference/netconf-capabilities.md).

Each client runs as its own process, as an operator would run it; the agent is only started and, for the
lock holder's session-id, asked who holds the lock.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from an_agent.agents.default import DefaultBehaviour
from an_agent.model import AgentProfile
from an_agent.server import AgentServer, ServerConfig

pytestmark = pytest.mark.interop

IRTF = "urn:ietf:params:xml:ns:yang:irtf-agent"
YL = "urn:ietf:params:xml:ns:yang:ietf-yang-library"
WD_ATTR = "{urn:ietf:params:xml:ns:netconf:default:1.0}default"
NCC = str(Path(sys.executable).parent / "netconf-console2")
TASK = (
    f'<tasks xmlns="{IRTF}"><task><task-id>{{id}}</task-id><task-sendFrom>ops</task-sendFrom>{{leaf}}'
    "<content>## target object\nSITE-02\n## task description\n{content}</content></task></tasks>"
)


@pytest.fixture
def served(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    config = ServerConfig(
        tmp_path / "state", port=0, profile=profile, users={"admin": "admin"}, schemas="off",
        behaviour=DefaultBehaviour(work_seconds=30),
    )  # fmt: skip
    with AgentServer(config) as server:
        yield server


def ncc(server: AgentServer, *args: str, stdin: str | None = None, ok: bool = True) -> str:
    cmd = [NCC, "--host", "127.0.0.1", "--port", str(server.port), "-u", "admin", "-p", "admin", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False, input=stdin)
    assert (done.returncode == 0) == ok, f"{' '.join(cmd)}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def task_file(tmp_path: Path, task_id: str, leaf: str = "<task-async>true</task-async>", content: str = "go") -> str:
    path = tmp_path / f"{task_id}.xml"
    path.write_text(TASK.format(id=task_id, leaf=leaf, content=content))
    return str(path)


def documents(out: str) -> list[etree._Element]:
    """The XML documents netconf-console2 printed, one per operation."""
    parts = [p for p in re.split(r"(?=<\?xml )", out) if p.strip().startswith("<?xml")]
    return [etree.fromstring(p.encode()) for p in parts]


def rpc_error(out: str) -> etree._Element:
    """The <rpc-error> netconf-console2 printed (after the replies of the operations before it)."""
    return etree.fromstring(out[out.index("<rpc-error") :].encode())


def ids(document: etree._Element) -> list[str]:
    return [e.text or "" for e in document.iter(f"{{{IRTF}}}task-id")]


@pytest.mark.slow
def test_netconf_console2(served: AgentServer, tmp_path: Path) -> None:
    ns = ["--ns", f"a={IRTF}"]  # netconf-console2 3.0.1 keeps only the last --ns given
    # The YANG library, matched against the hello.
    hello = etree.fromstring(ncc(served, "--hello").encode())
    caps = [c.text or "" for c in hello.iter("{*}capability")]
    content_id = next(c for c in caps if ":yang-library:1.1?" in c).rpartition("content-id=")[2]
    library = documents(ncc(served, "--ns", f"yl={YL}", "--get", "-x", "/yl:yang-library"))[0]
    assert library.findtext(f".//{{{YL}}}content-id") == content_id
    served_modules = {e.findtext(f"{{{YL}}}name") for e in library.iter(f"{{{YL}}}module")}
    announced = {m.group(1) for c in caps if (m := re.search(r"[?&]module=([^&]+)", c))}
    imported = {e.findtext(f"{{{YL}}}name") for e in library.iter(f"{{{YL}}}import-only-module")}
    assert served_modules == announced - imported

    # with-defaults: task-async (default false) left out is reported, tagged, or trimmed.
    ncc(served, "--db", "candidate", "--edit-config", task_file(tmp_path, "wd", leaf=""))
    for mode, expected in (("explicit", None), ("report-all", None), ("report-all-tagged", "true"), ("trim", None)):
        got = documents(
            ncc(served, *ns, "--db", "candidate", "--get-config", "--with-defaults", mode, "-x", "/a:tasks")
        )
        leaf = got[0].find(f".//{{{IRTF}}}task-async")
        assert (leaf is not None) == (mode in ("report-all", "report-all-tagged")), mode
        assert (None if leaf is None else leaf.get(WD_ATTR)) == expected
    ncc(served, "--discard-changes")

    # Candidate -> confirmed commit -> timeout: running is back as before (one session, kept open by --sleep).
    ncc(served, "--edit-config", task_file(tmp_path, "before"))
    out = ncc(
        served, *ns, "--db", "candidate", "--edit-config", task_file(tmp_path, "tried"), "--commit", "confirmed",
        "--timeout", "1", "--get-config", "-x", "/a:tasks", "--sleep", "3", "--get-config", "-x", "/a:tasks",
    )  # fmt: skip
    replies = documents(out)
    assert ids(replies[2]) == ["before", "tried"] and ids(replies[4]) == ["before"]

    # Confirmed commit -> confirming commit (interactive: one session).
    script = (
        f"edit-config --db candidate {task_file(tmp_path, 'kept')}\ncommit confirmed --timeout 1\ncommit\nsleep 2\n"
    )
    ncc(served, "-i", stdin=script)
    assert ids(documents(ncc(served, *ns, "--get-config", "-x", "/a:tasks"))[0]) == ["before", "kept"]

    # Lock contention: a second session is denied with the holder's session-id.
    holder = subprocess.Popen(
        [NCC, "--host", "127.0.0.1", "--port", str(served.port), "-u", "admin", "-p", "admin",
         "--db", "candidate", "--lock", "--sleep", "6"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 15
        while not served.operations.sessions.owner("candidate") and time.monotonic() < deadline:
            time.sleep(0.05)
        owner = served.operations.sessions.owner("candidate")
        assert owner
        denied = rpc_error(ncc(served, "--db", "candidate", "--lock", ok=False))
        assert denied.findtext("{*}error-tag") == "lock-denied"
        assert denied.findtext("{*}error-info/{*}session-id") == str(owner)
    finally:
        holder.kill()
        holder.communicate()

    # validate: a candidate task without a task description is refused, and so is its commit.
    bad = task_file(tmp_path, "bad")
    Path(bad).write_text(Path(bad).read_text().replace("## task description\n", "## notes\n"))
    error = rpc_error(ncc(served, "--db", "candidate", "--edit-config", bad, "--validate", "candidate", ok=False))
    assert error.findtext("{*}error-app-tag") == "task-description-missing"
    ncc(served, "--discard-changes")

    # rollback-on-error: a good task and a bad one in one edit; neither is applied.
    rpc = tmp_path / "rollback.xml"
    mixed = TASK.format(id="good", leaf="<task-async>true</task-async>", content="go").replace(
        "</tasks>", "<task><task-id>worse</task-id><task-async>maybe</task-async></task></tasks>"
    )
    rpc.write_text(
        '<edit-config xmlns="urn:ietf:params:xml:ns:netconf:base:1.0"><target><running/></target>'
        f"<error-option>rollback-on-error</error-option><config>{mixed}</config></edit-config>"
    )
    error = rpc_error(ncc(served, "--rpc", str(rpc), ok=False))
    assert error.findtext("{*}error-tag") == "invalid-value"
    assert ids(documents(ncc(served, *ns, "--get-config", "-x", "/a:tasks"))[0]) == ["before", "kept"]


def yangcli(server: AgentServer, script: str, tmp_path: Path) -> str:
    binary = shutil.which("yangcli")
    assert binary, "yangcli (Debian package yangcli) is not installed: run 'make setup'"
    path = tmp_path / "script.yc"
    path.write_text(script)
    done = subprocess.run(
        [binary, "--server=127.0.0.1", f"--ncport={server.port}", "--user=admin", "--password=admin",
         "--batch-mode", f"--run-script={path}"],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    return done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")


@pytest.mark.slow
def test_yangcli(served: AgentServer, tmp_path: Path) -> None:
    from ncclient import manager  # the rival session holding the lock

    content = "'## target object S ## task description diagnose'"
    out = yangcli(
        served,
        f"create /tasks/task -- task-id=y1 task-sendFrom=yangcli content={content}\n"
        "get-config source=candidate with-defaults=report-all-tagged\n"
        "get-config source=candidate with-defaults=trim\n"
        "validate source=candidate\n"
        "commit\n"
        "xget /yang-library\n"
        "sget /tasks/task/task-id\n",
        tmp_path,
    )
    assert "Default target set to: <candidate>" in out, out
    assert "Additional with-defaults behavior: report-all,report-all-tagged,trim" in out
    assert "Auto-load for module" not in out  # the new standard modules came through <get-schema> and compiled
    # The YANG library read matches the content-id of the hello (yangcli prints the capability it skips).
    hello_id = re.search(r"yang-library:1\.1\?revision=2019-01-04&content-id=(\w+)", out)
    assert hello_id, out
    assert f"content-id {hello_id.group(1)}" in out
    # report-all-tagged shows the default task-async; trim leaves it out; then validate and commit succeed.
    replies = out.split("RPC Data Reply")
    with_defaults = [r for r in replies if "task y1" in r]
    assert "task-async false" in with_defaults[0] and "task-async" not in with_defaults[1].split("RPC")[0], out
    assert out.count("RPC OK Reply") >= 3 and "Error" not in out.split("xget")[0], out
    assert served.operations.datastore.find_entries(f"{{{IRTF}}}task", ("task-id",), [("y1",)], f"{{{IRTF}}}tasks"), out

    # Lock contention: ncclient holds running; yangcli's <lock> is denied with its session-id.
    with manager.connect(
        host="127.0.0.1", port=served.port, username="admin", password="admin",
        hostkey_verify=False, look_for_keys=False, allow_agent=False,
    ) as rival:  # fmt: skip
        rival.lock("running")
        out = yangcli(served, "lock target=running\n", tmp_path)
        assert "lock-denied" in out and f"session-id {rival.session_id}" in out.replace("\n", " "), out


class InteractiveYangcli:
    """yangcli at its prompt on a pseudo-terminal (it reads commands only from a terminal), one session."""

    def __init__(self, server: AgentServer) -> None:
        binary = shutil.which("yangcli")
        assert binary, "yangcli (Debian package yangcli) is not installed: run 'make setup'"
        self._master, slave = pty.openpty()
        self._process = subprocess.Popen(
            [binary, "--server=127.0.0.1", f"--ncport={server.port}", "--user=admin", "--password=admin"],
            stdin=slave, stdout=slave, stderr=slave, close_fds=True,
        )  # fmt: skip
        os.close(slave)
        self.output = ""
        self.read_until("yangcli admin@", 60)  # the prompt once the session and its modules are loaded

    def read_until(self, marker: str, timeout: float = 30) -> str:
        start = len(self.output)
        deadline = time.monotonic() + timeout
        while marker not in self.output[start:]:
            assert time.monotonic() < deadline, f"yangcli did not print {marker!r}:\n{self.output[-3000:]}"
            ready, _, _ = select.select([self._master], [], [], 0.1)
            if ready:
                self.output += os.read(self._master, 65536).decode(errors="replace")
        return self.output[start:]

    def run(self, command: str) -> str:
        """Send one command; its output up to the next prompt."""
        os.write(self._master, (command + "\r").encode())
        return self.read_until("yangcli admin@")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._master, b"quit\r")
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._master)


@pytest.mark.slow
def test_yangcli_confirmed_commit_times_out_or_is_confirmed(served: AgentServer) -> None:
    content = "'## target object S ## task description diagnose'"
    cli = InteractiveYangcli(served)
    try:
        assert "confirmed-commit:1.1" in cli.output
        cli.run(f"create /tasks/task -- task-id=timed task-sendFrom=yangcli task-async=true content={content}")
        assert "RPC OK" in cli.run("commit confirmed confirm-timeout=1")
        assert "task timed" in cli.run("sget /tasks/task/task-id")
        time.sleep(2.5)  # the session stays open: the rollback is the timeout's
        assert "task timed" not in cli.run("sget /tasks/task/task-id")
        cli.run(f"create /tasks/task -- task-id=confirmed task-sendFrom=yangcli task-async=true content={content}")
        assert "RPC OK" in cli.run("commit confirmed confirm-timeout=1")
        assert "RPC OK" in cli.run("commit")  # confirming
        time.sleep(2)
        assert "task confirmed" in cli.run("sget /tasks/task/task-id")
    finally:
        cli.close()
