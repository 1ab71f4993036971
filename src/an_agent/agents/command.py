"""`CommandBehaviour`: an agent whose work is done by a program, in any language, over JSON lines.

The protocol is a contract with outsiders, versioned as `PROTOCOL` and documented in
docs/behaviour-command.md (with a complete example that imports nothing of ours). In short: per task the
program is started (argv, never a shell; a minimal environment; cwd the agent's state directory; its own
process group), gets ONE JSON line on stdin (the task), stdin is closed, and it answers with JSON lines on
stdout: statuses, ``input_required`` (the program then exits; it is run again with the task and one
``{"input": {...}}`` line per question answered), ``result`` or ``error``. FEASIBILITY runs it with
``{"negotiate": "feasibility"}``.

Everything that can go wrong with the program — it cannot be started, prints something that is not a
protocol message, exits without a result, outlives ``timeout`` — ends the task failed with a reason that
says so; the agent itself goes on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from an_agent.agents.environment import AgentEnvironment
from an_agent.agents.peers import Peers
from an_agent.agents.sdk import LabBehaviour, NotFeasible, Task, TaskFailure, TaskRun, TaskStatus, ValidatedPayload
from an_agent.model import parse_prompt

log = logging.getLogger(__name__)

PROTOCOL = "an-agent-command/1"
"""The protocol version (docs/behaviour-command.md); a program may read it from ``AN_AGENT_PROTOCOL``."""
FEASIBILITY_SECONDS = 10.0
"""The longest a FEASIBILITY run may take (it answers on the requester's session)."""
KILL_GRACE = 3.0
"""Seconds between SIGTERM and SIGKILL when a program is stopped."""
_STATUSES = {"processing", "blocked", "suspended"}
_DEVICE = re.compile(r"\{device:([A-Za-z0-9_.-]+)\}")


class CommandBehaviour(LabBehaviour):
    """Runs ``argv`` per task (module docstring). ``cwd`` defaults to a private temporary directory."""

    description = "an agent whose work is done by a program (JSON-lines protocol an-agent-command/1)"

    def __init__(
        self,
        env: AgentEnvironment,
        peers: Peers,
        argv: Sequence[str] = (),
        cwd: Path | None = None,
        timeout: float = 300.0,
        address_of: Callable[[str], tuple[str, int] | None] = lambda name: None,
    ) -> None:
        super().__init__(env, peers)
        if not argv:
            raise ValueError("a command behaviour needs a program to run")
        self.argv = list(argv)
        self.cwd = cwd
        self.timeout = timeout
        self._address_of = address_of

    def _argv(self) -> list[str]:
        """The argv with its ``{device:NAME}`` put in (`expand_devices`), looked up per run: an element
        manager's address is known once the lab serves it."""
        try:
            return expand_devices(self.argv, self._address_of)
        except LookupError as exc:
            raise TaskFailure(f"{{device:{exc}}} in the command: the lab serves no element manager {exc}") from None

    # ---- the task ---------------------------------------------------------------------------------------
    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        deadline = time.monotonic() + self.timeout
        lines = [_task_message(task, payload)]
        answered: set[str] = set()
        while True:
            outcome = self._run(lines, deadline, run, answered)
            if outcome is None:  # cancelled: the runtime has ended the task already
                return
            kind, message = outcome
            if kind == "result":
                result = message["result"]
                summary = message.get("summary")
                if not isinstance(result, dict):
                    raise TaskFailure(f"program {self.argv[0]}: 'result' must be a JSON object")
                self.finish(run, str(summary) if summary else f"{self.argv[0]} finished", result)
                return
            keys = message["input_required"]
            remaining = max(0.0, deadline - time.monotonic())
            answers = self.ask_input(run, keys, str(message.get("reason") or "input required"), remaining)
            if answers is None:
                if not run.cancelled:
                    raise TaskFailure(f"program {self.argv[0]} asked for {', '.join(keys)}; none came in time")
                return
            # Run again with every answer so far, one line per question in the order asked: a program that
            # re-reads its stdin and one that reads on after its question (and asks again) both get them.
            lines = [*lines, {"input": answers}]
            answered.update(keys)

    def _run(
        self,
        lines: list[dict[str, Any]],
        deadline: float,
        run: TaskRun | None,
        answered: frozenset[str] | set[str] = frozenset(),
    ) -> tuple[str, Any] | None:
        """Run the program once with ``lines`` on stdin; ``("result"|"input", message)``, None when cancelled.

        Status lines are reported on ``run`` as they come; an ``error`` line raises `TaskFailure`. An
        ``input_required`` for keys all in ``answered`` is a question asked again whose answer is already on
        the program's stdin: reading goes on.
        """
        with _Program(self._argv(), self._cwd(), lines) as program:
            while True:
                if run is not None and run.cancelled:
                    return None
                if time.monotonic() > deadline:
                    raise TaskFailure(f"program {self.argv[0]} did not end within {self.timeout:g} s: stopped")
                line = program.next_line(0.1)
                if line is None:
                    continue
                if line is _EOF:
                    code = program.wait()
                    why = program.last_stderr() or f"exit status {code}"
                    raise TaskFailure(f"program {self.argv[0]} ended without a result: {why}")
                message = _parse(line, self.argv[0])
                if "result" in message:
                    return "result", message
                if "error" in message:
                    raise TaskFailure(str(message["error"]) or f"program {self.argv[0]} reported an error")
                if "input_required" in message:
                    keys = message["input_required"]
                    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
                        raise TaskFailure(f"program {self.argv[0]}: 'input_required' must be a list of key names")
                    if set(keys) <= answered:
                        continue
                    return "input", message
                if "status" in message and run is not None:
                    _report(run, message, self.argv[0])
                    continue
                raise TaskFailure(f"program {self.argv[0]} sent a message this protocol does not have: {line[:200]!r}")

    # ---- FEASIBILITY ------------------------------------------------------------------------------------
    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        message = {
            "negotiate": "feasibility",
            "sender": requester,
            "schema": payload.schema_id if payload else None,
            "payload": _payload_dict(payload),
            "description": description,
            "language": "en",
        }
        deadline = time.monotonic() + min(self.timeout, FEASIBILITY_SECONDS)
        try:
            with _Program(self._argv(), self._cwd(), [message]) as program:
                while True:
                    if time.monotonic() > deadline:
                        raise NotFeasible(f"{self.argv[0]} did not answer the feasibility question in time")
                    line = program.next_line(0.1)
                    if line is None:
                        continue
                    if line is _EOF:
                        why = program.last_stderr() or f"exit status {program.wait()}"
                        raise NotFeasible(f"{self.argv[0]} gave no feasibility answer: {why}")
                    answer = _parse(line, self.argv[0])
                    if "feasible" in answer:
                        break
                    if "status" not in answer:  # statuses mean nothing here; anything else is a broken answer
                        raise NotFeasible(f"{self.argv[0]} answered the feasibility question with {line[:200]!r}")
        except TaskFailure as exc:
            raise NotFeasible(str(exc)) from None
        reason = str(answer.get("reason") or "")
        if answer["feasible"] is True:
            return reason or f"{self.argv[0]} accepts"
        counter = answer.get("counter")
        envelope = None
        if isinstance(counter, dict) and payload is not None:
            envelope = {"schema_id": payload.schema_id, "payload": counter}
        raise NotFeasible(reason or f"{self.argv[0]} refuses", counter=envelope)

    def _cwd(self) -> Path:
        if self.cwd is None:
            self.cwd = Path(tempfile.mkdtemp(prefix=f"an-agent-{self.name}-"))  # 0700
        return self.cwd


def expand_devices(argv: Sequence[str], address_of: Callable[[str], tuple[str, int] | None]) -> list[str]:
    """``argv`` with each ``{device:NAME}`` replaced by ``HOST:PORT`` of the lab's element manager NAME;
    `LookupError` (its argument: the name) for one that does not serve."""
    out = []
    for arg in argv:
        for name in _DEVICE.findall(arg):
            where = address_of(name)
            if where is None:
                raise LookupError(name)
            arg = arg.replace(f"{{device:{name}}}", f"{where[0]}:{where[1]}")
        out.append(arg)
    return out


_EOF = "\x00eof"


class _Program:
    """One run of the program: started in its own process group, stdin written and closed, stdout read
    line by line on a thread, stderr kept (its last line is the reason of an early exit)."""

    def __init__(self, argv: list[str], cwd: Path, lines: list[dict[str, Any]]) -> None:
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=minimal_env(cwd),
                start_new_session=True,  # its own process group: a cancel stops its children too
                text=True,
                encoding="utf-8",
                errors="replace",
            )
        except OSError as exc:
            raise TaskFailure(f"program {argv[0]} cannot be started: {exc.strerror or exc}") from None
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None and self.proc.stdin is not None
        threading.Thread(target=self._read, args=(self.proc.stdout, True), daemon=True).start()
        self._err = threading.Thread(target=self._read, args=(self.proc.stderr, False), daemon=True)
        self._err.start()
        try:
            self.proc.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
            self.proc.stdin.close()
        except OSError:  # it exited before reading: its stderr says why
            pass

    def _read(self, stream: IO[str], out: bool) -> None:
        for line in stream:
            if out:
                self.lines.put(line.rstrip("\n"))
            else:
                self.stderr = [*self.stderr[-19:], line.rstrip("\n")]
        if out:
            self.lines.put(_EOF)

    def next_line(self, timeout: float) -> str | None:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        return line if line == _EOF or line.strip() else None

    def wait(self) -> int:
        code = self.proc.wait()
        self._err.join(1.0)
        return code

    def last_stderr(self) -> str:
        self._err.join(1.0)
        return next((line.strip() for line in reversed(self.stderr) if line.strip()), "")

    def __enter__(self) -> _Program:
        return self

    def __exit__(self, *exc: object) -> None:
        stop(self.proc)


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM to the program's process group, SIGKILL after `KILL_GRACE` seconds; reaped either way."""
    if proc.poll() is None:
        _signal(proc, signal.SIGTERM)
        try:
            proc.wait(KILL_GRACE)
        except subprocess.TimeoutExpired:
            _signal(proc, signal.SIGKILL)
            proc.wait()
    _signal(proc, signal.SIGKILL)  # children it left behind in its group
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _signal(proc: subprocess.Popen[str], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def minimal_env(cwd: Path) -> dict[str, str]:
    """The program's whole environment: a PATH, UTF-8, HOME and TMPDIR in its directory, the protocol."""
    return {
        "PATH": os.defpath if os.defpath.startswith("/") else "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": str(cwd),
        "TMPDIR": str(cwd),
        "AN_AGENT_PROTOCOL": PROTOCOL,
    }


def _task_message(task: Task, payload: ValidatedPayload | None) -> dict[str, Any]:
    return {
        "task_id": task.task_id,
        "sender": task.send_from,
        "schema": payload.schema_id if payload else None,
        "payload": _payload_dict(payload),
        "prompt": task.content or "",
        "description": parse_prompt(task.content or "").task_description or "",
        "language": "en",
    }


def _payload_dict(payload: ValidatedPayload | None) -> dict[str, Any] | None:
    if payload is None:
        return None
    value = dict(payload.values)
    if payload.other.fragments:
        value["other"] = list(payload.other.fragments)
    return value


def _parse(line: str, program: str) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except json.JSONDecodeError:
        raise TaskFailure(
            f"program {program} printed something that is not a JSON line of the protocol: {line[:200]!r}"
        ) from None
    if not isinstance(message, dict):
        raise TaskFailure(f"program {program} printed JSON that is not an object: {line[:200]!r}")
    return message


def _report(run: TaskRun, message: dict[str, Any], program: str) -> None:
    status = message["status"]
    reason = message.get("reason")
    if status not in _STATUSES:
        raise TaskFailure(f"program {program}: status {status!r} is not one of processing, blocked, suspended")
    if status == "processing":
        run.set_status(TaskStatus.PROCESSING, str(reason) if reason else None)
    elif status == "blocked":
        run.block(str(reason or f"{program} is blocked"))
    else:
        run.suspend(str(reason or f"{program} suspended the task"))
