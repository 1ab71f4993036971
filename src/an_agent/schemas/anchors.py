"""What a key means, in words: the texts NL mapping and conflict detection compare fragments with.

A key's anchors are its name in words, the first sentence of its semantic description, and the phrases
on the left of its mapping examples (``'raise the power by 2 dB' -> 2``). `example_mappings` returns the
examples themselves, phrase and value, with the value decoded when it is JSON-like.
"""

from __future__ import annotations

import json
import re
from typing import Any

from an_agent.schemas.template import KeyDef

# 'phrase' -> value   where value is 'text', a number, true/false, or a [...] list; ends at ; or . + space/end
_EXAMPLE = re.compile(r"'([^']{2,160})'\s*->\s*('(?:[^']*)'|\[[^\]]*\]|-?\d+(?:\.\d+)?|true|false)")


def key_anchors(key: KeyDef) -> list[str]:
    """The key's name in words, its description's first sentence, and its example phrases."""
    anchors = [key.key_name.replace("_", " ")]
    first = re.split(r"(?<=[.;])\s", key.semantic_description.strip(), maxsplit=1)[0]
    anchors.append(first)
    anchors.extend(phrase for phrase, _ in example_mappings(key))
    return anchors


def example_mappings(key: KeyDef) -> list[tuple[str, Any]]:
    """(phrase, value) of each ``'phrase' -> value`` mapping example in the key's description."""
    out: list[tuple[str, Any]] = []
    for match in _EXAMPLE.finditer(key.semantic_description):
        raw = match.group(2)
        value: Any
        if raw.startswith("'"):
            value = raw[1:-1]
        elif raw.startswith("["):
            value = [v.strip().strip("'\"") for v in raw[1:-1].split(",") if v.strip()]
        else:
            value = json.loads(raw)
        out.append((match.group(1), value))
    return out
