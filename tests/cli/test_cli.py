"""The an-agent command line against a real agent: output formats, exit codes, messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import paramiko
import pytest

from an_agent.cli import main
from an_agent.server import AgentServer, ServerConfig
from rawnc import wait_for


def run(capsys: pytest.CaptureFixture[str], server: AgentServer, *argv: str) -> tuple[int, str, str]:
    code = main(
        [*argv[:2], "--port", str(server.port), *argv[2:]]
        if argv[0] == "task"
        else [argv[0], "--port", str(server.port), *argv[1:]]
    )
    out, err = capsys.readouterr()
    return code, out, err


def test_profile_table_json_and_xml(capsys, agent_server) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(capsys, agent_server, "profile")
    assert code == 0
    assert "IETF-TestLab-RAN-1.0" in out and "fault-diagnosis" in out and "FIELD" in out
    code, out, _ = run(capsys, agent_server, "profile", "--json")
    document = json.loads(out)
    assert document["irtf-agent:agent"]["name"] == "IETF-TestLab-RAN-1.0"
    code, out, _ = run(capsys, agent_server, "profile", "--xml")
    assert out.startswith('<agent xmlns="urn:ietf:params:xml:ns:yang:irtf-agent"')


def test_task_assign_wait_get_negotiate_watch_cancel(capsys, agent_server) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run(
        capsys,
        agent_server,
        "task",
        "assign",
        "--id",
        "c1",
        "--target",
        "SITE-07",
        "--description",
        "diagnose the fault",
        "--wait",
        "--json",
    )
    assert code == 0, err
    task = json.loads(out)
    assert task["task-id"] == "c1" and task["task-status"] == "finished"
    assert json.loads(task["result"]["data"])["target_object"] == "SITE-07"

    code, out, _ = run(capsys, agent_server, "task", "get")
    assert code == 0 and "c1" in out and "finished" in out

    code, out, _ = run(
        capsys, agent_server, "task", "negotiate", "--target", "CELL-1", "--description", "increase power"
    )
    assert code == 1 and "NOT feasible" in out and "counter-proposal" in out
    code, out, _ = run(capsys, agent_server, "task", "negotiate", "--type", "fulfillment", "--id", "c1", "--json")
    assert code == 0 and json.loads(out)["fulfilled"] is True

    code, out, _ = run(capsys, agent_server, "task", "watch", "c1", "--since", "all", "--json", "--count", "3")
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["task-status"] for e in events] == ["created", "processing", "finished"]

    code, _, err = run(capsys, agent_server, "task", "cancel", "c1")
    assert code == 1 and "operation-failed" in err and "already ended as finished" in err
    code, _, err = run(capsys, agent_server, "task", "cancel", "ghost")
    assert code == 1 and "data-missing" in err and "ghost" in err
    code, _, err = run(capsys, agent_server, "task", "get", "ghost")
    assert code == 1 and "no task 'ghost'" in err


def test_refused_edit_shows_tag_and_path(capsys, agent_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("no sections at all")
    code, _, err = run(capsys, agent_server, "task", "assign", "--id", "bad", "--content-file", str(prompt))
    assert code == 1
    assert "invalid-value" in err and "/irtf-agent:tasks/task[task-id='bad']/content" in err


def test_usage_errors_and_unreachable_agent(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["task", "assign", "--port", "1"]) == 2
    assert "give the task with --description" in capsys.readouterr().err
    assert main(["profile", "--port", "1", "--timeout", "3"]) == 3
    err = capsys.readouterr().err
    assert "127.0.0.1" in err and "1" in err, err


def test_serve_refuses_a_public_address_without_credentials(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "an_agent.cli",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--state-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0 without credentials" in done.stderr


def test_users_and_authorized_keys(tmp_path: Path, profile) -> None:  # type: ignore[no-untyped-def]
    key = paramiko.RSAKey.generate(2048)
    keys_file = tmp_path / "authorized_keys"
    keys_file.write_text(f"{key.get_name()} {key.get_base64()} lab-operator\n")
    config = ServerConfig(
        state_dir=tmp_path / "s", port=0, profile=profile, users={"noc": "s3cret"}, authorized_keys=keys_file
    )
    with AgentServer(config) as server:
        assert server.notice is None  # credentials were given: no admin/admin
        from an_agent.errors import AuthError
        from an_agent.nc.client import NetconfClient

        with pytest.raises(AuthError):
            NetconfClient.connect(host="127.0.0.1", port=server.port, username="admin", password="admin", timeout=10)
        with NetconfClient.connect(host="127.0.0.1", port=server.port, username="noc", password="s3cret") as c:
            assert c.session_id > 0
        pem = tmp_path / "id_rsa"
        key.write_private_key_file(str(pem))
        with NetconfClient.connect(host="127.0.0.1", port=server.port, username="operator", key_filename=str(pem)) as c:
            assert c.session_id > 0
            wait_for(lambda: server.session_count() == 1)
        host_key = (tmp_path / "s" / "ssh_host_rsa_key").read_text()
    # The host key is kept: a restart presents the same one.
    with AgentServer(config):
        assert (tmp_path / "s" / "ssh_host_rsa_key").read_text() == host_key
