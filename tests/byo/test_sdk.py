"""The public behaviour API (`an_agent.agents.sdk`): its names, its loading, and a plugin served on its own."""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest
from byosupport import REPO, assign, connect, env_with, feasibility, profile_file, run_cli, serve, wait_end, wait_status

from an_agent.agents import sdk
from an_agent.agents.plugins import load_behaviour_class
from an_agent.errors import ConfigError
from an_agent.model import DataParam, DataType

PLUGIN = textwrap.dedent(
    '''
    """A plugin that imports nothing of an-agent but its public API."""
    from an_agent.agents.sdk import Behaviour, LabBehaviour, NegotiationResult, NegotiationType, NotFeasible, TaskFailure, TaskResult, TaskStatus

    class Echo(Behaviour):
        def execute(self, task, run):
            run.set_status(TaskStatus.PROCESSING)
            run.finish(TaskResult(summary="echo", format="text/plain", data=task.content))

        def negotiate(self, request, task):
            return NegotiationResult(NegotiationType.FEASIBILITY, feasible=True, reason="always")

    class Diagnoser(LabBehaviour):
        description = "diagnoses, asks, blocks, checks its results"

        def feasibility(self, description, payload, requester):
            if payload is None:
                raise NotFeasible("send a fault_diagnosis_v1 payload")
            if "severity" not in payload.values:
                counter = {"schema_id": "fault_diagnosis_v1", "payload": {**payload.values, "severity": "major"}}
                raise NotFeasible("say how severe", counter=counter)
            return f"can diagnose {payload.values['fault_type']}"

        def handle(self, task, payload, run):
            run.block("waiting on the planner")
            run.suspend("maintenance window")
            run.resume()
            if "QUESTION" in task.content:
                answers = self.ask_input(run, ["ticket_id"], "which ticket is this?", 20)
                if answers is None:
                    raise TaskFailure("no ticket id came")
                self.finish(run, "answered", {"fault_type": "unknown", "other": answers["ticket_id"]})
            elif "BADRESULT" in task.content:
                self.finish(run, "not what the skill declares", {"bogus": 1})
            elif "FAILNOW" in task.content:
                raise TaskFailure("the planner is down")
            else:
                self.finish(run, "diagnosed", {"fault_type": payload.values["fault_type"], "severity": "minor"})

    class NotABehaviour:
        pass
    '''
)


def test_exported_names_are_complete_and_sorted() -> None:
    public = {name for name in vars(sdk) if not name.startswith("_") and name != "annotations"}
    assert set(sdk.__all__) == public
    assert sdk.__all__ == sorted(sdk.__all__, key=lambda n: (not n.isupper(), n[0].islower(), n))
    assert sdk.API_VERSION.count(".") == 1 and all(p.isdigit() for p in sdk.API_VERSION.split("."))
    for name in sdk.__all__:
        value = getattr(sdk, name)
        if callable(value):
            assert value.__doc__, f"{name} has no docstring: the docstring is the contract"


def test_shipped_roles_use_the_public_api_only() -> None:
    """No back door: the roles take the seam's names from the sdk module, as a plugin does."""
    public = set(sdk.__all__)
    for path in sorted((REPO / "src/an_agent/agents").glob("*.py")):
        if path.name in ("sdk.py", "base.py", "environment.py", "payloads.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in (
                "an_agent.runtime.behaviour",
                "an_agent.agents.base",
            ):
                leaked = {a.name for a in node.names} & public
                assert not leaked, f"{path.name} imports {leaked} from {node.module}, not from an_agent.agents.sdk"


def test_loading_errors_are_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "byo_plugin.py").write_text(PLUGIN, encoding="utf-8")
    (tmp_path / "byo_broken.py").write_text("import json\nraise RuntimeError('no licence key')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_behaviour_class("byo_plugin:Echo").__name__ == "Echo"
    cases = {
        "nope_nothing:Agent": "no module 'nope_nothing' is installed",
        "byo_plugin:Missing": "module byo_plugin has no 'Missing'",
        "byo_plugin:NotABehaviour": "does not subclass an_agent.agents.sdk.Behaviour",
        "byo_broken:Agent": "RuntimeError: no licence key (",
        "a b:c": "expected PACKAGE.MODULE:CLASS",
        "no-such-entry-point": "no installed package declares it in the an_agent.behaviours entry points",
        "an_agent.agents.sdk:LabBehaviour": "is abstract: it does not implement feasibility, handle",
    }
    for ref, message in cases.items():
        with pytest.raises(ConfigError, match=None) as caught:
            load_behaviour_class(ref)
        assert message in str(caught.value), (ref, str(caught.value))
    sys.modules.pop("byo_plugin", None)


def test_entry_point_names_a_behaviour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package declares its behaviour in the an_agent.behaviours group; it is found by that name."""
    (tmp_path / "byo_plugin.py").write_text(PLUGIN, encoding="utf-8")
    info = tmp_path / "byo_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: byo-plugin\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[an_agent.behaviours]\nbyo-echo = byo_plugin:Echo\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_behaviour_class("byo-echo").__name__ == "Echo"
    sys.modules.pop("byo_plugin", None)


def test_served_plugin_lifecycle(tmp_path: Path) -> None:
    """serve --behaviour: validated payload, FEASIBILITY with counter, blocked/suspended, input, checked result."""
    (tmp_path / "byo_plugin.py").write_text(PLUGIN, encoding="utf-8")
    profile = profile_file(tmp_path, output_modes=["application/json;schema=fault_diagnosis_v1"])
    env = env_with(tmp_path)
    with serve(tmp_path, "--behaviour", "byo_plugin:Diagnoser", "--profile", str(profile), env=env) as port:
        with connect(port) as client:
            answer = feasibility(client, "f1", "Diagnose the backhaul", {"fault_type": "transmission_failure"})
            assert not answer.feasible and answer.reason == "say how severe"
            assert '"severity": "major"' in (answer.counter_proposal or "")
            ok = feasibility(client, "f2", "Diagnose", {"fault_type": "transmission_failure", "severity": "major"})
            assert ok.feasible and ok.reason == "can diagnose transmission_failure"

            assign(client, "t1", "Diagnose the backhaul", {"fault_type": "transmission_failure"})
            done = wait_end(client, "t1")
            assert done.status is not None and done.status.value == "finished", done
            assert done.result is not None and done.result.format == "application/json;schema=fault_diagnosis_v1"

            # a payload that is not valid against the template never reaches the plugin
            with pytest.raises(Exception, match="fault_type"):
                assign(client, "t2", "Diagnose", {"severity": "major"})

            assign(client, "t3", "Diagnose BADRESULT", {"fault_type": "unknown"})
            failed = wait_end(client, "t3")
            assert failed.status is not None and failed.status.value == "failed"
            assert failed.result is not None and "not a valid fault_diagnosis_v1" in (failed.result.reason or "")

            assign(client, "t4", "Diagnose FAILNOW", {"fault_type": "unknown"})
            assert "the planner is down" in (wait_end(client, "t4").result.reason or "")  # type: ignore[union-attr]

            assign(client, "t5", "Diagnose QUESTION", {"fault_type": "unknown"})
            asked = wait_status(client, "t5", "input-required")
            assert "ticket_id" in asked.input_required[0].required
            answer_param = DataParam(
                id="t5.answer", data_type=DataType.TEXT, format="text/plain", data="ticket_id: TT-9"
            )
            client.provide_input("t5", [answer_param])
            finished = wait_end(client, "t5")
            assert finished.result is not None and "TT-9" in (finished.result.data or "")
        events = [line for line in (tmp_path / "serve.log").read_text().splitlines() if "Traceback" in line]
        assert not events


def test_serve_refuses_a_bad_plugin_path_without_a_traceback(tmp_path: Path) -> None:
    profile = profile_file(tmp_path)
    result = run_cli("serve", "--behaviour", "acme_missing.agent:Agent", "--profile", str(profile), "--port", "0",
                     "--state-dir", str(tmp_path / "s"), timeout=60)  # fmt: skip
    assert result.returncode != 0
    assert "no module 'acme_missing' is installed" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_short_name_is_the_same_api() -> None:
    """``an_agent.sdk`` and ``an_agent.agents.sdk`` are one API: the same names, the same objects."""
    import an_agent.agents.sdk as long_name
    import an_agent.sdk as short_name

    assert short_name.__all__ == long_name.__all__
    assert all(getattr(short_name, name) is getattr(long_name, name) for name in long_name.__all__)
