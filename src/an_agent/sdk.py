"""``an_agent.sdk``: the public behaviour API under its short name — the same names, the same objects as
`an_agent.agents.sdk` (whose docstring is the contract), so either import works and stays working."""

from __future__ import annotations

from an_agent.agents.sdk import *  # noqa: F403  (the public API is exactly that module's __all__)
from an_agent.agents.sdk import __all__ as _public

__all__ = list(_public)
