"""The prompt format of a task's ``content`` (draft-wang-nmrg-magent-im figure 7).

::

    ## target object
    gNB-1001, gNB-1002
    ## task description
    Diagnose why the base stations are out of service.
    ## environmental information
    Transport link alarms since 14:19 UTC.

Each marker starts a line; its section's text follows on the same line and/or
the next lines, up to the next marker. The draft writes the markers both as
``##task description`` and ``## task description``: both are accepted, as is
any letter case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TARGET_OBJECT = "target object"
TASK_DESCRIPTION = "task description"
ENVIRONMENT = "environmental information"

_MARKER = re.compile(
    r"^[ \t]*##[ \t]*(target[ \t]+object|task[ \t]+description|environmental[ \t]+information)\b[ \t:]*(.*)$",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True)
class PromptSections:
    """The sections of a prompt; None for a section that is absent.

    ``preamble`` is any text before the first marker (None when there is none).
    """

    target_object: str | None = None
    task_description: str | None = None
    environment: str | None = None
    preamble: str | None = None

    @property
    def complete(self) -> bool:
        """True when the two sections the draft requires (target object, task description) are non-empty."""
        return bool(self.target_object) and bool(self.task_description)


def build_prompt(target_object: str, task_description: str, environment: str | None = None) -> str:
    """The ``content`` text for these sections, each marker on its own line (``## x``)."""
    parts = [f"## {TARGET_OBJECT}", target_object.strip(), f"## {TASK_DESCRIPTION}", task_description.strip()]
    if environment is not None:
        parts += [f"## {ENVIRONMENT}", environment.strip()]
    return "\n".join(parts)


def parse_prompt(content: str) -> PromptSections:
    """Split ``content`` into its sections (text stripped; a section given twice keeps both, joined by a newline)."""
    found: dict[str, list[str]] = {}
    matches = list(_MARKER.finditer(content))
    preamble = content[: matches[0].start()].strip() if matches else content.strip()
    for i, match in enumerate(matches):
        name = " ".join(match.group(1).lower().split())
        end = matches[i + 1].start() if i + 1 < len(matches) else len(content)
        body = (match.group(2) + content[match.end() : end]).strip()
        found.setdefault(name, []).append(body)

    def section(name: str) -> str | None:
        bodies = found.get(name)
        return None if bodies is None else "\n".join(b for b in bodies if b)

    return PromptSections(
        target_object=section(TARGET_OBJECT),
        task_description=section(TASK_DESCRIPTION),
        environment=section(ENVIRONMENT),
        preamble=preamble or None,
    )
