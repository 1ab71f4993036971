"""The one draft task-status <-> A2A TaskState table."""

from __future__ import annotations

from a2a.types import TaskState

from an_agent.a2a.states import DRAFT_STATUS_KEY, FROM_A2A, TO_A2A, a2a_state, draft_status
from an_agent.model import TaskStatus


def test_every_draft_status_maps_to_a_real_a2a_state_and_back() -> None:
    assert set(TO_A2A) == set(TaskStatus)
    for status in TaskStatus:
        state = a2a_state(status)
        TaskState.Value(state)  # a name the SDK knows
        assert draft_status(state, {DRAFT_STATUS_KEY: status.value}) == status


def test_terminal_states_agree() -> None:
    terminal = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"}
    for status in TaskStatus:
        assert status.terminal == (a2a_state(status) in terminal)


def test_reading_back_without_metadata_and_unknown_states() -> None:
    assert draft_status("TASK_STATE_WORKING") == TaskStatus.PROCESSING
    assert draft_status("TASK_STATE_REJECTED") == TaskStatus.FAILED
    assert draft_status("TASK_STATE_AUTH_REQUIRED") is None
    # Metadata that contradicts the state is ignored.
    assert draft_status("TASK_STATE_COMPLETED", {DRAFT_STATUS_KEY: "blocked"}) == TaskStatus.FINISHED
    assert all(TaskState.Value(name) for name in FROM_A2A)
