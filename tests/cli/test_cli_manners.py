"""The CLI behaves like the tools operators use: --version, quiet ends on SIGPIPE and Ctrl-C with the
conventional status, errors that say what to do next, shell completion, no colour, and a start-up path
that never loads the embedding model."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from an_agent.cli import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, build_parser
from an_agent.cli._tree import walk
from an_agent.cli.completion import script
from an_agent.model import Task, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer

AN_AGENT = Path(sys.executable).parent / "an-agent"  # the installed console script, as a shell runs it


def _run(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AN_AGENT), *args], capture_output=True, text=True, timeout=60, **kwargs)  # type: ignore[call-overload, no-any-return]


def test_version_is_the_installed_distributions() -> None:
    done = _run("--version")
    assert done.returncode == 0
    assert done.stdout == f"an-agent {version('an-agent')}\n"


def test_a_closed_pipe_ends_quietly_by_sigpipe() -> None:
    """`an-agent ... | head`: the reader is gone before the first write; no traceback, died by SIGPIPE (141)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [str(AN_AGENT), "yang", "tree"], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60
        )
    finally:
        os.close(write_end)
    assert done.returncode == -signal.SIGPIPE, done.stderr
    assert done.stderr == ""
    in_a_shell = subprocess.run(
        ["bash", "-c", f"{AN_AGENT} yang tree | head -c 0; echo ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert in_a_shell.stdout.strip() == str(EXIT_BROKEN_PIPE) and in_a_shell.stderr == ""


def test_ctrl_c_ends_a_watch_quietly_by_sigint(agent_server: AgentServer) -> None:
    with AgentClient.connect(host="127.0.0.1", port=agent_server.port, username="admin", password="admin") as client:
        client.assign_task(Task("ctrl-c", content=build_prompt("SITE-07", "diagnose the outage"), task_async=True))
    watch = subprocess.Popen(
        [str(AN_AGENT), "task", "watch", "--port", str(agent_server.port), "--since", "all", "--duration", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watch.stdout is not None
        first = watch.stdout.readline()  # the replayed event: the command is in its loop, waiting for more
        assert "ctrl-c" in first
        watch.send_signal(signal.SIGINT)
        _, err = watch.communicate(timeout=30)
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    assert watch.returncode == -signal.SIGINT
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_main_returns_130_after_ctrl_c_for_callers_in_python() -> None:
    """In-process callers get the status instead of a signal (the console script re-raises it)."""
    program = (
        "import os, signal, sys\n"
        "from an_agent.cli import main\n"
        "signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signal.SIGINT))\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.5)\n"
        "sys.exit(main(['users', 'hash', '--stdin']))"
    )
    # stdin stays open and empty: 'users hash --stdin' waits on it until the SIGINT comes.
    with subprocess.Popen(
        [sys.executable, "-c", program], stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.stderr is not None
        code = subprocess.CompletedProcess(proc.args, proc.returncode, "", proc.stderr.read())
    assert code.returncode == EXIT_INTERRUPTED, code.stderr
    assert "Traceback" not in code.stderr


def test_errors_say_what_to_do_next() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    unreachable = _run("profile", "--port", str(port))
    assert unreachable.returncode == 3
    assert f"is an agent serving NETCONF at 127.0.0.1:{port}? Start one with 'an-agent serve'" in unreachable.stderr
    usage = _run("task", "assign", "--bogus")
    assert usage.returncode == 2
    assert "Run 'an-agent task assign --help' for what it takes." in usage.stderr
    assert "Traceback" not in unreachable.stderr + usage.stderr


def test_no_colour_anywhere() -> None:
    """No escape sequences, whatever the terminal says, so NO_COLOR has nothing to turn off."""
    env = {**os.environ, "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    for args in (("--help",), ("task", "assign", "--help"), ("schema", "list"), ("task", "bogus")):
        done = _run(*args, env=env)
        assert "\x1b[" not in done.stdout + done.stderr, args


def test_start_up_loads_no_model_and_no_protocol_stack() -> None:
    """--help and completion run the parser only: no torch, sentence-transformers, ncclient or a2a."""
    probe = (
        "import sys\nfrom an_agent.cli import build_parser\nbuild_parser().format_help()\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'ncclient', 'a2a', 'uvicorn') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def _complete(shell_script: Path, words: list[str]) -> list[str]:
    """What the bash completion offers for the last of ``words`` (the word under the cursor)."""
    probe = (
        f"source {shell_script}\n"
        'COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n'
        "__an_agent_complete\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(["bash", "-c", probe, "probe", *words], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.split()


def test_bash_completion_offers_commands_options_and_choices(tmp_path: Path) -> None:
    generated = _run("completion", "bash")
    assert generated.returncode == 0
    path = tmp_path / "an-agent.bash"
    path.write_text(generated.stdout)
    assert _complete(path, ["an-agent", "ta"]) == ["task"]
    assert _complete(path, ["an-agent", "task", "a"]) == ["assign"]
    assert _complete(path, ["an-agent", "schema", "patches", ""]) == ["list", "approve", "reject", "withdraw"]
    assert _complete(path, ["an-agent", "task", "assign", "--port", "830", "--sch"]) == ["--schema", "--schema-version"]
    assert _complete(path, ["an-agent", "task", "negotiate", "--type", ""]) == ["feasibility", "fulfillment"]
    assert _complete(path, ["an-agent", "completion", ""]) == []  # a positional: the shell's own completion
    # A TAB runs bash alone: the function calls no program, let alone Python.
    function = generated.stdout.split("__an_agent_complete() {", 1)[1].split("\n}\n", 1)[0]
    assert "an-agent " not in function and "python" not in function
    # Every command and every option of the parser is in the script.
    for command in walk(build_parser()).walk():
        words = ["an-agent", *command.path, "-"]
        offered = set(_complete(path, words))
        assert {flag for option in command.options for flag in option.flags if flag.startswith("-")} <= offered, words


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (make setup installs it)")
def test_zsh_completion_registers_through_bashcompinit(tmp_path: Path) -> None:
    path = tmp_path / "an-agent.zsh"
    path.write_text(script(build_parser(), "zsh"))
    probe = (
        f"source {path}\n"
        "print -r -- ${_comps[an-agent]}\n"
        "t() { emulate -L sh; COMP_WORDS=(an-agent task negotiate --type ''); COMP_CWORD=4; "
        '__an_agent_complete; echo "${COMPREPLY[*]}"; }\nt\n'
    )
    done = subprocess.run(
        ["zsh", "-f", "-c", probe],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "_bash_complete -o bashdefault -o default -F __an_agent_complete",
        "feasibility fulfillment",
    ]
