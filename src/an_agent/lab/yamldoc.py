"""YAML documents that remember where each value came from, for error messages with line numbers.

PyYAML's composer keeps a start mark on every node; `YamlDocument.line_of` walks the node tree along a
JSON path (as jsonschema reports it: keys and list indices) and returns the line of the value, or of the
key when the path ends on a mapping key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from an_agent.errors import ConfigError

PathItem = str | int


@dataclass
class YamlDocument:
    """A parsed YAML file: its data and its node tree."""

    path: Path
    data: Any
    root: yaml.Node

    def line_of(self, path: Sequence[PathItem], key: bool = False) -> int:
        """1-based line of the value at ``path`` (of its key with ``key=True``); the nearest known line."""
        node = self.root
        key_node: yaml.Node | None = None
        for item in path:
            child, key_node = _child(node, item)
            if child is None:
                break
            node = child
        chosen = key_node if key and key_node is not None else node
        return int(chosen.start_mark.line) + 1

    def where(self, path: Sequence[PathItem], key: bool = False) -> str:
        """``file:line`` for the value at ``path``."""
        return f"{self.path}:{self.line_of(path, key)}"


def _child(node: yaml.Node, item: PathItem) -> tuple[yaml.Node | None, yaml.Node | None]:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if str(key_node.value) == str(item):
                return value_node, key_node
        return None, None
    if isinstance(node, yaml.SequenceNode) and isinstance(item, int) and 0 <= item < len(node.value):
        return node.value[item], None
    return None, None


def format_path(path: Sequence[PathItem]) -> str:
    """``agents[2].port`` for a JSON path."""
    out = ""
    for item in path:
        out += f"[{item}]" if isinstance(item, int) else (f".{item}" if out else str(item))
    return out or "(top level)"


def load_yaml(path: Path) -> YamlDocument:
    """Read and parse ``path``; `ConfigError` with ``file:line:column`` on syntax errors and duplicate keys."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        # libyaml's parser when present (10x faster on a generated 200-site file); marks either way.
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        data = None if root is None else yaml.SafeLoader("").construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if root is None:
        raise ConfigError(f"{path}:1: the file is empty")
    _check_duplicate_keys(path, root)
    return YamlDocument(path, data, root)


def _check_duplicate_keys(path: Path, node: yaml.Node) -> None:
    """YAML silently keeps the last of two equal keys; in a topology that is always a mistake."""
    stack = [node]
    seen_nodes: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in seen_nodes:
            continue
        seen_nodes.add(id(current))
        if isinstance(current, yaml.MappingNode):
            keys: dict[str, int] = {}
            for key_node, value_node in current.value:
                name = str(key_node.value)
                line = int(key_node.start_mark.line) + 1
                if name in keys:
                    raise ConfigError(f"{path}:{line}: duplicate key {name!r} (first given on line {keys[name]})")
                keys[name] = line
                stack.append(value_node)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
