"""Fixtures of the lab tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"
