"""A lab's template process (zygote): the agent stack loaded once, one agent process forked from it per agent.

An agent process started as a new interpreter pays, every time, for what every agent needs: importing
the stack (~0.7 s of CPU), building the command line, compiling the YANG context, reading and checking
the topology (~0.25 s for 50 agents, more for bigger labs), and holds its own copy of all of it (~45 MiB).
A lab therefore starts one template process per run (`TEMPLATE_MODULE`, ``--topology T``), which loads all
of that once with the collector off, freezes it (`gc.freeze`: the collector never writes to those objects,
so their pages stay shared), and then forks one child per agent (the way ``multiprocessing``'s forkserver
does). The child gets, in this order: its own log (``STATE/agent.log``, 0600) as stdout and stderr, its
state directory (0700), the environment the lab gives it, its network namespace (``setns`` on
``/run/netns/NAME``, before any socket is opened), and then runs ``an-agent serve ...`` with the same
arguments as an agent process started by exec (`an_agent.lab.processes.serve_args`). Its pages are the
template's until it writes them (copy-on-write).

The template never starts a thread (it checks before each fork: forking a process with threads copies
locks held by threads that do not exist in the child); torch and sentence-transformers are not loaded
in it (an agent that needs the model loads it itself, lazily).

Protocol between the lab process and its template, over a Unix socket pair (the template's end is the
descriptor ``--channel-fd`` names), one JSON object per line:

- template -> lab: ``{"ready": PID}`` once loaded, or ``{"failed": MESSAGE}`` and it exits;
- lab -> template: ``{"id": N, "args": [...], "env": {...}, "state_dir": DIR, "log": FILE, "append": B,
  "netns": NAME or null, "title": NAME}``; template -> lab: ``{"id": N, "pid": PID}`` or
  ``{"id": N, "error": MESSAGE}``;
- template -> lab: ``{"exit": PID, "code": C}`` when a child ends (C as `subprocess.Popen.returncode`:
  negative for a signal). The template reaps its children; the lab learns their end only from it.

The template ends when the lab closes its end of the socket. Its children do not end with it: each
stops when the lab's control channel tells it to (or is killed by the lab), as an exec'd agent does.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from an_agent.errors import LabStartError
from an_agent.lab.processes import log_tail

CLONE_NEWNET = 0x40000000
RUN_NETNS = Path("/run/netns")
PR_SET_NAME = 15
TEMPLATE_MODULE = "an_agent.cli.lab_template"
"""The template process's program (``python -m``): it loads the stack and calls `serve_template`."""
LOAD_TIMEOUT = 300.0
"""Real seconds the template process may take to load (it imports once what each agent imported)."""
Run = Callable[[Sequence[str]], int]
"""Runs ``an-agent ARGS`` in a forked child; its exit code."""


# ---- the template process ------------------------------------------------------------------------
def enter_netns(name: str) -> None:
    """Move this process into network namespace ``name`` (``/run/netns/NAME``, as ``ip netns`` names it).

    Python 3.11 has no ``os.setns``: libc's ``setns(fd, CLONE_NEWNET)``. Needs CAP_SYS_ADMIN (root).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(RUN_NETNS / name, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into network namespace {name}: {os.strerror(errno)}")
    finally:
        os.close(fd)


def _set_title(title: str) -> None:
    """The process's name in ``ps``/``top`` (the kernel keeps 15 bytes): which agent this child is."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_NAME, ctypes.c_char_p(title.encode()[:15]), 0, 0, 0)


def _child(request: Mapping[str, Any], closing: Sequence[int], run: Run) -> NoReturn:
    """In the forked child: become the agent (module docstring), run ``an-agent serve``, exit with its code."""
    code = 1
    fallback = 2
    try:
        for fd in closing:
            with contextlib.suppress(OSError):
                os.close(fd)
        gc.enable()  # the template's objects are frozen: this collector sees only the agent's own
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any Python program (`serve` sets its own)
        state_dir = Path(request["state_dir"])
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if request.get("append") else os.O_TRUNC)
        log = os.open(request["log"], flags, 0o600)
        fallback = os.dup(2)  # the template's log: where a failure goes that the agent's own log cannot take
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.environ.clear()
        os.environ.update(request["env"])
        _set_title(str(request.get("title") or "an-agent"))
        if request.get("netns"):
            enter_netns(str(request["netns"]))
        sys.argv = ["an-agent", *request["args"]]
        code = run(request["args"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        report = traceback.format_exc()
        try:
            sys.stderr.write(report)
            sys.stderr.flush()
        except OSError:  # its log is on a full disk (found by lab soak: agents died with no word anywhere)
            with contextlib.suppress(OSError):
                title = request.get("title") or "an agent"
                os.write(fallback, f"{title} (pid {os.getpid()}) could not write its log:\n{report}".encode())
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
    os._exit(code)


class _Template:
    """The template's loop: fork on request, reap children, report both to the lab."""

    def __init__(self, channel: socket.socket, run: Run) -> None:
        self.channel = channel
        self.run = run
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wake-up byte is what matters
        self.children: set[int] = set()

    def send(self, message: Mapping[str, Any]) -> None:
        self.channel.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self.channel, selectors.EVENT_READ)
        selector.register(self.wake_r, selectors.EVENT_READ)
        buffer = b""
        while True:
            for key, _ in selector.select():
                if key.fileobj == self.wake_r:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self.wake_r, 4096)
                    continue
                data = self.channel.recv(1 << 16)
                if not data:
                    return  # the lab is gone
                buffer += data
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    self.fork(json.loads(line))
            self.reap()

    def fork(self, request: dict[str, Any]) -> None:
        if threading.active_count() != 1:  # see the module docstring: never fork with threads
            self.send({"id": request.get("id"), "error": "the template process has threads: it cannot fork"})
            return
        try:
            pid = os.fork()
        except OSError as exc:
            self.send({"id": request.get("id"), "error": f"fork: {exc.strerror or exc}"})
            return
        if pid == 0:
            _child(request, [self.channel.fileno(), self.wake_r, self.wake_w], self.run)
        self.children.add(pid)
        self.send({"id": request.get("id"), "pid": pid})

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.children.discard(pid)
            self.send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})


def serve_template(channel_fd: int, preload: Callable[[], None], run: Run) -> int:
    """The template process (module docstring): ``preload``, freeze, then fork a child running ``run(ARGS)``
    per request on the socket ``channel_fd``, until the lab closes it. Its exit code."""
    # Ctrl-C on a lab in a terminal reaches its whole process group: the lab stops its agents and then
    # this process (as multiprocessing's forkserver, it ignores SIGINT; its children do not).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    channel = socket.socket(fileno=channel_fd)
    template = _Template(channel, run)
    # As the gc module's documentation advises for fork without exec: no collection while loading (one
    # frees objects between the loaded ones, and a child's new objects then fill those holes, copying
    # the pages around them) and none in the template after; `gc.freeze` before forking, the collector
    # back on in each child. 20-30 MiB less for a 100-agent lab than collecting before the freeze.
    gc.disable()
    try:
        preload()
    except Exception as exc:  # the lab reports it and stops
        template.send({"failed": f"{type(exc).__name__}: {exc}"})
        return 1
    gc.freeze()  # from here on the collector leaves the loaded objects (and their pages) alone
    template.send({"ready": os.getpid()})
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the lab went away
        template.serve()
    return 0


# ---- the lab's side ------------------------------------------------------------------------------
class ForkedProcess:
    """An agent process forked by a `Zygote`: what `subprocess.Popen` offers the lab (pid, poll, wait,
    send_signal, returncode), its end as the template reports it."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self._zygote = zygote
        self.pid = pid

    @property
    def returncode(self) -> int | None:
        return self._zygote.exit_code(self.pid)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """The exit code; `subprocess.TimeoutExpired` after ``timeout`` seconds."""
        code = self._zygote.wait_exit(self.pid, timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"agent process {self.pid}", timeout or 0.0)
        return code

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:  # not reaped: the pid is still this process's
            os.kill(self.pid, signum)


class Zygote:
    """The lab's handle on its template process: `start` it, `spawn` agents from it, `close` it.

    ``log`` receives the template's own output (0600). `LabStartError` when it cannot be started or dies.
    """

    def __init__(self, process: subprocess.Popen[bytes], channel: socket.socket, log: Path) -> None:
        self._process = process
        self._channel = channel
        self._log = log
        self._cond = threading.Condition()
        self._replies: dict[int, dict[str, Any]] = {}
        self._exits: dict[int, int] = {}
        self._ready: int | None = None
        self._failed: str | None = None
        self._gone = False
        self._next = 0
        self._send_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="lab-zygote", daemon=True)
        self._reader.start()

    @classmethod
    def start(
        cls, topology_file: Path | None, log: Path, env: Mapping[str, str] | None = None, host_key: Path | None = None
    ) -> Zygote:
        """Start the template process; returns at once (`spawn` waits until it has loaded). ``host_key``: the
        lab's SSH host key, of which each agent gets a copy (loaded once, in the template)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        argv = [sys.executable, "-m", TEMPLATE_MODULE]
        if topology_file is not None:
            argv += ["--topology", str(topology_file.resolve())]
        if host_key is not None:
            argv += ["--host-key", str(host_key.resolve())]
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        argv += ["--channel-fd", str(theirs.fileno())]
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=fd,
                stderr=fd,
                pass_fds=(theirs.fileno(),),
                env=dict(env) if env is not None else None,
                close_fds=True,
            )
        finally:
            os.close(fd)
            theirs.close()
        return cls(process, ours, log)

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive(self) -> bool:
        with self._cond:
            return not self._gone and self._failed is None and self._process.poll() is None

    def wait_loaded(self, timeout: float | None = None) -> int:
        """Wait until the template has loaded the stack; returns its pid. `LabStartError` when it fails or dies
        first (with the end of its log), or is still loading after ``timeout`` seconds."""
        started = time.monotonic()
        with self._cond:
            while self._ready is None:
                if self._failed is not None or self._gone:
                    raise LabStartError(f"the lab's template process failed: {self._failed or self._tail()}")
                remaining = None if timeout is None else timeout - (time.monotonic() - started)
                if remaining is not None and remaining <= 0:
                    raise LabStartError(f"the lab's template process has not loaded after {timeout:g} s")
                self._cond.wait(0.5 if remaining is None else min(remaining, 0.5))
            return self._ready

    def spawn(
        self,
        args: Sequence[str],
        state_dir: Path,
        log: Path,
        env: Mapping[str, str],
        netns: str | None = None,
        append_log: bool = False,
        title: str = "an-agent",
    ) -> ForkedProcess:
        """Fork an agent running ``an-agent ARGS`` (module docstring); `LabStartError` when the template cannot."""
        self.wait_loaded(LOAD_TIMEOUT)
        with self._cond:
            self._next += 1
            ident = self._next
        request = {
            "id": ident,
            "args": list(args),
            "env": dict(env),
            "state_dir": str(state_dir),
            "log": str(log),
            "append": append_log,
            "netns": netns,
            "title": title,
        }
        try:
            with self._send_lock:
                self._channel.sendall(json.dumps(request).encode() + b"\n")
        except OSError as exc:
            raise LabStartError(f"the lab's template process is gone ({exc.strerror or exc}): {self._tail()}") from None
        with self._cond:
            while ident not in self._replies:
                if self._gone:
                    raise LabStartError(f"the lab's template process died: {self._tail()}")
                self._cond.wait(0.5)
            reply = self._replies.pop(ident)
        if "pid" not in reply:
            raise LabStartError(f"the lab's template process could not start an agent: {reply.get('error')}")
        return ForkedProcess(self, int(reply["pid"]))

    def exit_code(self, pid: int) -> int | None:
        with self._cond:
            code = self._exits.get(pid)
            if code is None and self._gone and _gone(pid):
                return -9  # its template died: no one will report its end (it did end: the pid is gone)
            return code

    def wait_exit(self, pid: int, timeout: float | None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                code = self.exit_code(pid)
                if code is not None:
                    return code
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(0.2 if remaining is None else min(remaining, 0.2))

    def close(self) -> None:
        """End the template process (its children run on: the lab stops them); returns once it is gone."""
        with contextlib.suppress(OSError):
            self._channel.shutdown(socket.SHUT_RDWR)
        self._channel.close()
        try:
            self._process.wait(10.0)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._reader.join(5.0)

    def _read(self) -> None:
        buffer = b""
        try:
            while True:
                data = self._channel.recv(1 << 16)
                if not data:
                    break
                buffer += data
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    self._handle(json.loads(line))
        except (OSError, ValueError):
            pass
        with self._cond:
            self._gone = True
            self._cond.notify_all()

    def _handle(self, message: dict[str, Any]) -> None:
        with self._cond:
            if "exit" in message:
                self._exits[int(message["exit"])] = int(message["code"])
            elif "ready" in message:
                self._ready = int(message["ready"])
            elif "failed" in message:
                self._failed = str(message["failed"])
            elif "id" in message:
                self._replies[int(message["id"])] = message
            self._cond.notify_all()

    def _tail(self) -> str:
        return log_tail(self._log) or f"(see {self._log})"


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
