"""The benchmark harness's reference server (bench/reference.py) sets up, answers, and tears down.

These run the real thing: Debian's netconfd behind a private sshd on a free
loopback port, reached with the benchmark's own NETCONF client. They exist so
that CI notices when the harness breaks (a package update, a changed YANG
module netconfd cannot load), not to measure anything.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level package of the repository, not installed
    sys.path.insert(0, str(ROOT))

from bench.reference import NetconfdReference  # noqa: E402
from bench.reference_yang import derive_reference_modules  # noqa: E402
from bench.wire import BASE_NS, BenchError, BenchRpcError  # noqa: E402

from bench import data, procs  # noqa: E402

MODULES = ROOT / "src" / "an_agent" / "yang" / "modules"


def _reply(data_xml: str) -> str:
    return f'<rpc-reply xmlns="{BASE_NS}" message-id="1"><data>{data_xml}</data></rpc-reply>'


def test_reference_serves_the_profile_and_tasks_then_leaves_nothing_behind() -> None:
    reference = NetconfdReference(MODULES, ["irtf-agent"], data.profile_xml() + data.tasks_xml(3))
    with reference as ref:
        workdir = ref.workdir
        assert workdir is not None and (workdir / "sshd_config").exists()
        assert 1 <= ref.port <= 65535
        with ref.connect() as session:
            assert "urn:ietf:params:xml:ns:yang:irtf-agent?module=irtf-agent" in session.server_hello
            assert data.same_data(session.request(data.GET_PROFILE), _reply(data.profile_xml()))
            assert data.same_data(session.request(data.GET_CONFIG_TASKS), _reply(data.tasks_xml(3)))
            # netconfd validates edits against the module: a bad enum is refused, the session lives on.
            bad = data.edit_config(
                f'<tasks xmlns="{data.IRTF_NS}"><task><task-id>{data.task_id(0)}</task-id>'
                "<commuType>noSuchType</commuType></task></tasks>"
            )
            with pytest.raises(BenchRpcError, match="invalid-value"):
                session.request(bad)
            assert data.same_data(session.request(data.GET_CONFIG_TASKS), _reply(data.tasks_xml(3)))
            # With a session open the stack is netconfd, the sshd listener, and per-session processes.
            running = ref.pids()
            assert len(running) >= 3
            assert all(procs.alive(pid) for pid in running)
    assert not workdir.exists()
    assert not any(procs.alive(pid) for pid in running)


def test_a_startup_error_is_reported_and_cleaned_up() -> None:
    # task-status is config false: netconfd must refuse to load it from the startup file.
    bad_config = data.tasks_xml(1).replace("<task-async>", "<task-status>created</task-status><task-async>")
    reference = NetconfdReference(MODULES, ["irtf-agent"], bad_config, start_timeout=20.0)
    with pytest.raises(BenchError, match="read-only"):
        reference.start()
    assert reference.workdir is None
    assert reference._netconfd is None and reference._sshd is None


def test_the_derived_module_makes_only_the_profile_config(tmp_path: Path) -> None:
    written = derive_reference_modules(MODULES, ["irtf-agent"], tmp_path)
    names = sorted(path.name.split("@")[0] for path in written)
    assert names == ["agent-message", "irtf-agent"]  # imports follow; yuma's own modules are not copied
    derived = (tmp_path / next(p.name for p in written if p.name.startswith("irtf-agent"))).read_text()
    original = next(MODULES.glob("irtf-agent@*.yang")).read_text()
    agent = derived[derived.index("container agent {") :]
    agent = agent[: agent.index("\n  }\n")]
    assert "config false" not in agent and "presence" in agent
    assert "config false" in original[original.index("container agent {") :][:200]
    # Task state stays read-only, as in the shipped module.
    assert derived.count("config false") == original.count("config false") - 1
    rpc = derived[derived.index("rpc task-negotiate") :]
    assert "must " not in rpc[: rpc.index("output")]
