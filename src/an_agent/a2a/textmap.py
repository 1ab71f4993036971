"""Text-only A2A messages: the offline NL mapping (`an_agent.schemas.mapping`) builds the payload when it can.

A message with no structured part and text that is not already a draft prompt (``## target object``
...) is mapped against each template the agent's skills accept as input; the mapping that fills every
required key wins (the highest total confidence among several), and the task is created with that
payload as if the client had sent it as a data part, so the operation layer validates it the same way.
A mapping that leaves required keys empty is returned too, with ``missing_required`` set: the caller
creates a task from the text alone (the agent's behaviour reads the prompt) and names what the
mapping could not find.

The embedding model is the agent's (its schema service's); ``now`` anchors relative dates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from an_agent.schemas.embedding import Embedder
from an_agent.schemas.mapping import MappingResult, map_text
from an_agent.schemas.template import Template


class TextMapper:
    """Maps a message's text to a payload of one of ``templates()`` (module docstring)."""

    def __init__(
        self, templates: Callable[[], Sequence[Template]], embedder: Embedder, now: Callable[[], float]
    ) -> None:
        self._templates = templates
        self._embedder = embedder
        self._now = now

    def __call__(self, text: str) -> MappingResult | None:
        """The best mapping of ``text`` (complete ones first), or None when the agent accepts no schema."""
        best: tuple[tuple[bool, float], MappingResult] | None = None
        for template in self._templates():
            result = map_text(template, text, self._embedder, now=self._now())
            score = (not result.missing_required, sum(a.confidence for a in result.assignments))
            if best is None or score > best[0]:
                best = (score, result)
        return None if best is None else best[1]
