"""kill -9 in the middle of a run, restart: nothing acknowledged is lost."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from rawnc import NS, RawSession, wait_for
from support import IRTF, task_xml


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_agent(state: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "an_agent.cli", "serve", "--port", str(port), "--state-dir", str(state)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def up() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "agent exited"
            return False

    wait_for(up, timeout=30)
    return proc


def tasks_in(raw: RawSession) -> dict[str, str | None]:
    reply = raw.rpc(f'<get><filter type="subtree"><tasks xmlns="{IRTF}"/></filter></get>', "q")
    return {
        t.findtext(f"{{{IRTF}}}task-id") or "": t.findtext(f"{{{IRTF}}}task-status")
        for t in reply.findall(f"nc:data/{{{IRTF}}}tasks/{{{IRTF}}}task", NS)
    }


def test_kill_dash_nine_loses_nothing_acknowledged(tmp_path: Path) -> None:
    state = tmp_path / "state"
    port = free_port()
    proc = start_agent(state, port)
    acknowledged: list[str] = []
    try:
        raw = RawSession(port)
        dp = f'<config><data-params xmlns="{IRTF}"><id>alarms</id><dataType>text</dataType><data>LOS on link L1</data></data-params></config>'
        assert (
            raw.rpc(f"<edit-config><target><running/></target>{dp}</edit-config>", "dp").find("nc:ok", NS) is not None
        )
        for n in range(30):
            reply = raw.rpc(
                f"<edit-config><target><running/></target>{task_xml(f'k{n}', target='SITE-01')}</edit-config>", f"e{n}"
            )
            if reply.find("nc:ok", NS) is not None:
                acknowledged.append(f"k{n}")
        wait_for(lambda: all(s == "finished" for s in tasks_in(raw).values()))
        before = tasks_in(raw)
        # More work in flight at the moment of the kill.
        raw.send_raw(
            f'<rpc xmlns="{NS["nc"]}" message-id="late">'.encode()
            + f"<edit-config><target><running/></target>{task_xml('late', target='SITE-01')}</edit-config></rpc>".encode()
        )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    proc = start_agent(state, port)
    try:
        raw = RawSession(port)
        after = tasks_in(raw)
        for task_id in acknowledged:
            assert after.get(task_id) == before[task_id] == "finished"
        # The task that may or may not have been committed is either absent or runs to its end.
        if "late" in after:
            wait_for(lambda: tasks_in(raw).get("late") == "finished")
        reply = raw.rpc("<get-config><source><running/></source></get-config>", "c")
        assert reply.findtext(f"nc:data/{{{IRTF}}}data-params/{{{IRTF}}}data", namespaces=NS) == "LOS on link L1"
        # The notification log survived too: replay everything.
        watcher = RawSession(port)
        watcher.rpc(
            '<create-subscription xmlns="urn:ietf:params:xml:ns:netconf:notification:1.0">'
            "<startTime>2000-01-01T00:00:00Z</startTime></create-subscription>",
            "s",
        )
        seen = 0
        while True:
            msg = watcher.receive()
            if msg.find("{urn:ietf:params:xml:ns:netmod:notification}replayComplete") is not None:
                break
            seen += 1
        assert seen >= 3 * len(acknowledged)
        watcher.close()
        raw.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        time.sleep(0)
