"""Large data in pieces: how a data-param is split into ``chunked`` entries and joined again (draft-wang 5.2).

The YANG gives a data-param ``chunked`` ("the data is too large and is sent in
several pieces") and ``finished`` ("the last piece") but no ordering; we add
one by naming. Piece ``n`` (from 1) of the data ``D`` is the data-param entry
``D#n`` with ``chunked true``; the last piece also has ``finished true``. A
task refers to the pieces it carries in its ``msg-data`` (each piece is an
entry; the leafrefs of the model then hold). Pieces may be sent in several
``<edit-config>``s before the task, each below the server's message limit.

`split_data_param` cuts, `join_chunks` checks and reassembles: in order,
within `ChunkLimits`, and with an error naming the missing piece when there is
a gap.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from lxml import etree

from an_agent.errors import RpcError
from an_agent.model.data_param import DataParam
from an_agent.model.task import Task, tasks_element

_PIECE = re.compile(r"^(?P<base>.+)#(?P<n>[1-9][0-9]*)$")


CHUNK_CHARS = 1024 * 1024
"""Our client's piece size: data above it is sent in pieces."""
EDIT_CHARS = 8 * 1024 * 1024
"""Our client's budget of data per ``<edit-config>`` (agents take 16 MiB messages by default)."""


@dataclass(frozen=True)
class ChunkLimits:
    """What a receiver accepts when joining: at most ``max_chunks`` pieces, ``max_chars`` characters in all."""

    max_chunks: int = 4096
    max_chars: int = 64 * 1024 * 1024


def piece_id(base: str, n: int) -> str:
    """The id of piece ``n`` (from 1) of the data-param ``base``."""
    return f"{base}#{n}"


def split_data_param(param: DataParam, max_chars: int) -> list[DataParam]:
    """``param`` cut into pieces of at most ``max_chars`` characters of ``data`` (itself when it fits)."""
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    data = param.data or ""
    if len(data) <= max_chars:
        return [param]
    cuts = [data[i : i + max_chars] for i in range(0, len(data), max_chars)]
    return [
        replace(
            param,
            id=piece_id(param.id, n),
            data=piece,
            data_size=param.data_size or str(len(data)),
            chunked=True,
            finished=True if n == len(cuts) else None,
        )
        for n, piece in enumerate(cuts, start=1)
    ]


def split_for_task(task: Task, params: Sequence[DataParam], max_chars: int) -> tuple[Task, list[DataParam]]:
    """The task and its data-params with every data above ``max_chars`` in pieces; ``msg-data`` names the pieces."""
    pieces: dict[str, list[DataParam]] = {p.id: split_data_param(p, max_chars) for p in params}
    msg_data: list[str] = []
    for ref in task.msg_data:
        if ref in pieces:
            msg_data.extend(p.id for p in pieces[ref])
        else:
            msg_data.append(ref)
    return replace(task, msg_data=msg_data), [piece for group in pieces.values() for piece in group]


def assignment_edits(
    task: Task, params: Sequence[DataParam], chunk_chars: int = CHUNK_CHARS, edit_chars: int = EDIT_CHARS
) -> list[list[etree._Element]]:
    """The ``<config>`` contents that assign ``task`` with ``params``, large data in pieces, in order.

    Pieces go ahead in edits of at most about ``edit_chars`` characters of
    data; the last edit carries the remaining data-params and creates the
    task, so the task is assigned only once all its data is there.
    """
    task, pieces = split_for_task(task, params, chunk_chars)
    edits: list[list[etree._Element]] = [[]]
    size = 0
    for piece in pieces:
        length = len(piece.data or "")
        if edits[-1] and size + length > edit_chars:
            edits.append([])
            size = 0
        edits[-1].append(piece.to_xml(operation="merge"))
        size += length
    edits[-1].append(tasks_element([task], operation="create"))
    return edits


def join_chunks(params: Sequence[DataParam], limits: ChunkLimits = ChunkLimits()) -> list[DataParam]:
    """``params`` with the pieces of each chunked data joined into one data-param named by its base id.

    Pieces take the place of the first piece listed; other data-params are
    kept as they are. `RpcError` invalid-value (with the path of the
    offending entry and an app-tag) when a piece is misnamed
    (``chunk-misnamed``), one is missing or the last has no ``finished``
    (``chunk-missing``), ``finished`` is on a piece that is not the last
    (``chunk-after-finished``), or the limits are passed (``chunks-too-large``).
    """
    groups: dict[str, dict[int, DataParam]] = {}
    order: list[str | DataParam] = []
    for param in params:
        if not param.chunked:
            order.append(param)
            continue
        match = _PIECE.match(param.id)
        if match is None:
            raise RpcError.invalid_value(
                f"data-param {param.id} is chunked, so its id must name its piece: <data id>#<n>, n from 1",
                path=f"/irtf-agent:data-params[id='{param.id}']/chunked",
                app_tag="chunk-misnamed",
            )
        base, n = match["base"], int(match["n"])
        if base not in groups:
            groups[base] = {}
            order.append(base)
        groups[base][n] = param
    joined = {base: _join(base, pieces, limits) for base, pieces in groups.items()}
    return [joined[item] if isinstance(item, str) else item for item in order]


def _join(base: str, pieces: dict[int, DataParam], limits: ChunkLimits) -> DataParam:
    if len(pieces) > limits.max_chunks:
        raise RpcError.invalid_value(
            f"data {base} comes in {len(pieces)} pieces; this agent joins at most {limits.max_chunks}",
            path=f"/irtf-agent:data-params[id='{piece_id(base, 1)}']",
            app_tag="chunks-too-large",
        )
    finished = sorted(n for n, p in pieces.items() if p.finished)
    last = max(pieces)
    if finished and finished[0] != last:
        raise RpcError.invalid_value(
            f"data {base}: piece {finished[0]} says finished but piece {last} follows it",
            path=f"/irtf-agent:data-params[id='{piece_id(base, finished[0])}']/finished",
            app_tag="chunk-after-finished",
        )
    missing = [n for n in range(1, last + 1) if n not in pieces]
    if missing:
        have = ", ".join(str(n) for n in sorted(pieces))
        raise RpcError.invalid_value(
            f"data {base}: piece {missing[0]} is missing (the task carries pieces {have}); "
            f"send {piece_id(base, missing[0])} and list it in msg-data",
            path=f"/irtf-agent:data-params[id='{piece_id(base, missing[0])}']",
            app_tag="chunk-missing",
        )
    if not finished:
        raise RpcError.invalid_value(
            f"data {base}: piece {last} is the last the task carries but it does not say finished; "
            f"send the remaining pieces, the last with finished true",
            path=f"/irtf-agent:data-params[id='{piece_id(base, last)}']/finished",
            app_tag="chunk-missing",
        )
    total = sum(len(p.data or "") for p in pieces.values())
    if total > limits.max_chars:
        raise RpcError.invalid_value(
            f"data {base} is {total} characters in all; this agent joins at most {limits.max_chars}",
            path=f"/irtf-agent:data-params[id='{piece_id(base, 1)}']",
            app_tag="chunks-too-large",
        )
    first = pieces[1]
    return replace(
        first, id=base, data="".join(pieces[n].data or "" for n in range(1, last + 1)), chunked=None, finished=None
    )
