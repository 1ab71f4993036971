"""``lab up`` / ``lab down``: a topology's agents kept running in a background process.

``lab up`` starts ``python -m an_agent.cli lab up TOPOLOGY --foreground --run-dir DIR`` in a new
session, its output going to ``DIR/lab.log``, and waits until it has written ``DIR/lab.json``: its pid,
the agents, their addresses and pids. That process owns the simulated network and clock; each agent is
a process of its own, started by it (`an_agent.lab.fleet`; with ``--in-process`` all agents run inside
it). ``lab down`` reads ``lab.json``, checks that the pid is still that lab (its command line), sends
SIGTERM (the lab stops its agents), waits for the process to exit (after a grace period SIGKILL to its
whole process group, agents included: they share the session ``lab up`` made) and for the ports to close.
The lab process writes ``DIR/last-stop.json`` as it stops: what did not stop cleanly (an agent process
killed after its own grace period, a lab thread that did not end); ``lab down`` reports it as
``leftovers``.
With ``--netns`` the agents run in the lab's network namespaces (`an_agent.lab.netns`); ``lab down`` then
also removes whatever of that lab network is left (``DIR/netns.json`` names it), agent processes
included, which after a crash of the lab process is everything.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from an_agent._files import write_private
from an_agent.errors import AnAgentError, ConfigError
from an_agent.lab.bringup import STALL, progress_marks, read_progress
from an_agent.lab.spec import Topology

STATE_FILE = "lab.json"
LOG_FILE = "lab.log"
STOP_FILE = "last-stop.json"
"""What the last stop of the lab left behind (`serve_foreground` writes it, `lab down` reads it)."""
STOP_GRACE = 30.0
SIGNAL_POLL = 0.2
"""Real seconds between two looks at the stop flag (the longest a SIGTERM waits to be handled)."""


def _state_path(run_dir: Path) -> Path:
    return run_dir / STATE_FILE


def read_state(run_dir: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(_state_path(run_dir).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _is_our_lab(pid: int, run_dir: Path) -> bool:
    """True when ``pid`` is alive and is a lab process for ``run_dir`` (not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    args = [a.decode(errors="replace") for a in cmdline if a]
    return "an_agent.cli" in args and "--foreground" in args and str(run_dir.resolve()) in args


def serve_foreground(
    topology: Topology,
    run_dir: Path,
    play: bool = True,
    in_process: bool = False,
    host: str | None = None,
    secret_file: Path | None = None,
    netns: bool = False,
    a2a_tls: bool = True,
    pace: float | None = None,
    otlp: str | None = None,
) -> int:
    """Run the lab in this process until SIGTERM/SIGINT; writes and finally removes the state file.

    ``host``: only that host's agents (`an_agent.lab.placement`): on the first host with the lab's
    clock, network and scenario (which starts once the other hosts' agents joined), on another host
    only its agents, joined to the first one's lab with ``secret_file``. ``netns``: every agent in a
    network namespace of its own (`an_agent.lab.netns`). ``a2a_tls``: A2A faces over HTTPS with the
    lab's certificates (`an_agent.lab.certs`; the state names the trust bundle), else plain HTTP.
    ``otlp``: the OpenTelemetry collector this process and every agent send their spans to (`an_agent.otlp`).
    """
    from an_agent.lab.placement import check_host, lab_host, serve_member

    check_host(topology, host)
    first = lab_host(topology)
    if host is not None and first is not None and host != first.name:
        if secret_file is None:
            raise ConfigError(f"--host {host} joins the lab on host {first.name}: give --lab-secret-file FILE")
        run_dir.mkdir(parents=True, exist_ok=True)
        return serve_member(topology, host, run_dir, secret_file, _state_path(run_dir), otlp)
    from an_agent.lab.journal import Note
    from an_agent.lab.runner import Lab

    run_dir.mkdir(parents=True, exist_ok=True)

    def on_note(note: Note) -> None:
        from an_agent.clock import to_rfc3339

        print(f"[{to_rfc3339(note.time)[:19]}] {note.agent}: {note.text}", file=sys.stderr, flush=True)

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    lab = Lab(
        topology,
        run_dir,
        use_topology_ports=True,
        on_note=on_note,
        in_process=in_process,
        host=host,
        secret_file=secret_file,
        netns=netns,
        a2a_tls=a2a_tls,
        pace=pace,
        otlp=otlp,
    )
    from an_agent.lab.prometheus import watch_lab
    from an_agent.logs import trace_to_stderr

    trace_to_stderr("lab")  # the scenario's trace events, JSON lines in lab.log (`an-agent trace`)
    spans = None
    if otlp is not None:  # the faults' and tickets' spans (and with --in-process the agents')
        from an_agent.otlp import export_spans

        spans = export_spans(otlp)
    kpis = None
    try:
        lab.start()
        kpis = watch_lab(lab, run_dir)  # Prometheus targets of the agents, the network's KPIs
        # agents of other hosts join later; external agents answered already (checked by start)
        elsewhere = {a.name for a in topology.agents if a.external is None} - {a.name for a in lab.local_agents}
        if play and not elsewhere:
            lab.schedule_scenario()
        elif play:
            threading.Thread(target=_scenario_once_joined, args=(lab, elsewhere), daemon=True).start()
        clock = threading.Thread(target=lab.play, kwargs={"forever": True}, name="lab-clock", daemon=True)
        clock.start()
        state: dict[str, Any] = {
            "pid": os.getpid(),
            "topology": str(topology.source) if topology.source else topology.name,
            "name": topology.name,
            "run_dir": str(run_dir.resolve()),
            "log": str((run_dir / LOG_FILE).resolve()),
            "started": time.time(),
            "scenario": play,
            "pace": pace,
            "agents": [
                {
                    "name": a.spec.name,
                    "role": a.spec.role,
                    "host": lab.host_of(a.spec.name),
                    "port": a.port,
                    "netns": lab.net.slot(a.spec.name).netns if lab.net is not None else None,
                    "pid": getattr(a, "pid", os.getpid()),
                    "a2a_url": lab.a2a_url_of(a.spec.name),
                }
                for a in lab.agents.values()
            ],
            "external": [  # agents the lab did not start (it checked that they answer)
                {"name": a.name, "role": a.role, "netconf": lab.address_of(a.name), "a2a_url": lab.a2a_url_of(a.name)}
                for a in topology.agents
                if a.external is not None
            ],
            "services": [{"name": s.spec.name, "port": s.spec.port, "pid": s.process.pid} for s in lab.services],
            "devices": lab.device_addresses(),
            "a2a_trust": str(lab.a2a_trust) if lab.a2a_trust is not None else None,
            "metrics_url": kpis.url,
            "network": lab.net.to_json() if lab.net is not None else None,
        }
        tmp = _state_path(run_dir).with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2), encoding="utf-8")
        os.replace(tmp, _state_path(run_dir))
        print(
            f"lab {topology.name} up: "
            + ", ".join(f"{a['name']}={a['port']}" for a in [*state["agents"], *state["devices"]]),
            file=sys.stderr,
            flush=True,
        )
        # Wait in slices, never in one blocking wait: a SIGTERM that lands while this thread is between
        # its last check for pending signals and the blocking wait (e.g. waiting for the GIL while the
        # scenario's threads run, as on a cold first run) trips Python's handler flag but does not
        # interrupt the wait, and only the next bytecode runs the handler. Reproduced: `lab down` right
        # after `lab up` hung until the 30 s grace ran out in about one run out of six.
        while not stop.wait(SIGNAL_POLL):
            pass
        print("lab stopping", file=sys.stderr, flush=True)
    finally:
        if kpis is not None:
            kpis.stop()
        leftovers = lab.stop()
        if spans is not None:
            spans.shutdown()
        write_private(run_dir / STOP_FILE, json.dumps({"leftovers": leftovers}).encode())
        _state_path(run_dir).unlink(missing_ok=True)
    print("lab stopped" + (f"; did not stop cleanly: {', '.join(leftovers)}" if leftovers else ""), file=sys.stderr)
    return 0


def _scenario_once_joined(lab: Any, names: set[str]) -> None:
    """Schedule the scenario when the agents of the other hosts have joined (the first host of a lab)."""
    from an_agent.lab.placement import JOIN_TIMEOUT

    print(f"waiting for the agents of the other hosts: {', '.join(sorted(names))}", file=sys.stderr, flush=True)
    try:
        lab.fleet.conductor.wait_ready(names, JOIN_TIMEOUT, lambda: None)
    except AnAgentError as exc:
        print(f"scenario not played: {exc}", file=sys.stderr, flush=True)
        return
    print("every agent joined: playing the scenario", file=sys.stderr, flush=True)
    lab.schedule_scenario()


def start_background(
    topology_file: Path,
    run_dir: Path,
    play: bool = True,
    in_process: bool = False,
    host: str | None = None,
    secret_file: Path | None = None,
    netns: bool = False,
    a2a_tls: bool = True,
    pace: float | None = None,
    otlp: str | None = None,
) -> dict[str, Any]:
    """Start the lab process and wait for its state file; `ConfigError`/`AnAgentError` with its log if it fails."""
    if netns:
        from an_agent.lab.netns import require_support

        require_support()  # not root, no `ip`: say so here rather than in the background process's log
    run_dir.mkdir(parents=True, exist_ok=True)
    state = read_state(run_dir)
    if state is not None and _is_our_lab(int(state.get("pid", 0)), run_dir):
        raise ConfigError(
            f"a lab is already up in {run_dir} (pid {state['pid']}); stop it with: an-agent lab down"
            f" --run-dir {run_dir}"
        )
    _state_path(run_dir).unlink(missing_ok=True)
    log_path = run_dir / LOG_FILE
    command = [
        sys.executable,
        "-m",
        "an_agent.cli",
        "lab",
        "up",
        str(topology_file.resolve()),
        "--foreground",
        "--run-dir",
        str(run_dir.resolve()),
    ]
    if not play:
        command.append("--idle")
    if in_process:
        command.append("--in-process")
    if host is not None:
        command += ["--host", host]
    if secret_file is not None:
        command += ["--lab-secret-file", str(secret_file.resolve())]
    if netns:
        command.append("--netns")
    if not a2a_tls:
        command += ["--a2a-tls", "off"]
    if pace is not None:
        command += ["--pace", repr(pace)]
    if otlp is not None:
        command += ["--otlp", otlp]
    with log_path.open("w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True
        )
    # As long as it takes, while the lab makes progress (an_agent.lab.bringup); not for ever when it stops.
    marks, last = progress_marks(run_dir), time.monotonic()
    while True:
        state = read_state(run_dir)
        if state is not None and state.get("pid") == process.pid:
            return state
        if process.poll() is not None:
            raise AnAgentError(f"the lab process exited with code {process.returncode}:\n{_tail(log_path)}")
        time.sleep(0.2)
        now_marks = progress_marks(run_dir)
        if now_marks != marks:
            marks, last = now_marks, time.monotonic()
        elif time.monotonic() - last >= STALL:
            break
    account = read_progress(run_dir)[1] or "no agent has started"
    _abandon(process, run_dir)
    raise AnAgentError(f"the lab made no progress for {STALL:.0f} s ({account}):\n{_tail(log_path)}")


def _abandon(process: subprocess.Popen[bytes], run_dir: Path) -> None:
    """End a lab that did not come up: SIGTERM (it stops once it has started), then its whole process group
    (the lab, its template and agent processes), then what is left of its lab network."""
    process.terminate()
    try:
        process.wait(10.0)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # a session of its own: the lab and its agents
        process.wait()
    from an_agent.lab.netns import cleanup

    cleanup(run_dir)


def stop_background(run_dir: Path) -> dict[str, Any]:
    """Stop the lab of ``run_dir``; the report says whether one was up and whether it stopped cleanly.

    Whatever is left of its lab network (``--netns``) is removed in every case (``network`` in the report).
    """
    report = _stop_lab(run_dir)
    from an_agent.lab.netns import cleanup

    removed = cleanup(run_dir)
    report["network"] = removed.to_json() if removed is not None else None
    if removed is not None:
        report["message"] += (
            f"; removed the leftovers of lab network {removed.lab_id}: {len(removed.namespaces)} namespace(s), "
            f"{len(removed.links)} link(s), {len(removed.processes)} process(es)"
        )
    return report


def _stop_lab(run_dir: Path) -> dict[str, Any]:
    state = read_state(run_dir)
    if state is None:
        return {"was_up": False, "stopped": False, "message": f"no lab is up in {run_dir}"}
    pid = int(state.get("pid", 0))
    if not _is_our_lab(pid, run_dir):
        _state_path(run_dir).unlink(missing_ok=True)
        return {
            "was_up": False,
            "stopped": False,
            "message": f"the lab of {run_dir} (pid {pid}) is no longer running; removed its stale state file",
        }
    (run_dir / STOP_FILE).unlink(missing_ok=True)
    os.kill(pid, signal.SIGTERM)
    killed = not _wait_gone(pid, run_dir, STOP_GRACE)
    if killed:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # the lab and its agent processes: one process group
        _wait_gone(pid, run_dir, 5.0)
    agent_pids = {int(a["pid"]) for a in state.get("agents", []) if a.get("pid") and int(a["pid"]) != pid}
    _wait_pids_gone(agent_pids, 10.0)
    _state_path(run_dir).unlink(missing_ok=True)
    # agents in namespaces are not on the host's loopback (and their lab network is checked by `cleanup`)
    ports = [a["port"] for a in state.get("agents", []) if not a.get("netns")]
    ports += [d["port"] for d in state.get("devices", []) if not state.get("network")]
    open_ports = [p for p in ports if _port_open(p)]
    stopped = not open_ports and not _is_our_lab(pid, run_dir)
    leftovers = _leftovers(run_dir)
    message = (
        f"lab {state.get('name')} (pid {pid}) stopped"
        + (" (killed after the grace period)" if killed else "")
        + ("" if not open_ports else f"; ports still open: {open_ports}")
        + ("" if not leftovers else f"; did not stop cleanly: {', '.join(leftovers)} (see {run_dir / LOG_FILE})")
    )
    return {
        "was_up": True,
        "stopped": stopped,
        "killed": killed,
        "pid": pid,
        "open_ports": open_ports,
        "leftovers": leftovers,
        "message": message,
    }


def _leftovers(run_dir: Path) -> list[str]:
    """What the lab process said did not stop cleanly (`STOP_FILE`); empty when it could not say."""
    try:
        value = json.loads((run_dir / STOP_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return []
    leftovers = value.get("leftovers") if isinstance(value, dict) else None
    return [str(item) for item in leftovers] if isinstance(leftovers, list) else []


def _wait_gone(pid: int, run_dir: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):  # started by this process (lab up, then down): reap it
            os.waitpid(pid, os.WNOHANG)
        if not _is_our_lab(pid, run_dir):
            return True
        time.sleep(0.1)
    return False


def _wait_pids_gone(pids: set[int], timeout: float) -> None:
    """Wait for the agent processes of a stopped lab to be gone; SIGKILL what is left after ``timeout``."""
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = {p for p in pids if _running(p)}
        time.sleep(0.1)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
