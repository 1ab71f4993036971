"""Large data-params made whole before anyone reads them: chunked pieces joined, ``url`` data fetched.

`DataResolver.resolve` is applied to the data-params of a task wherever the
operation layer reads them (admission, before validation; `AgentInfo.data_params`
for behaviours), so a payload that came in pieces or by reference is
validated and used like inline data.

``url`` (draft-wang 5.2: "where to fetch the data, for large data") is
fetched only when it starts with an allowed prefix: by default ``file://``
URLs inside the agent's state directory (``<state>/data/...`` is the place to
drop files); `DataPolicy.allow` adds more (``file:///srv/exports/``,
``https://files.example.net/``). Anything else, a path escaping the allowed
directory (``..``, symlinks), or data above `DataPolicy.max_url_bytes` is
refused with an `RpcError` that names the data-param.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from an_agent.errors import RpcError
from an_agent.model import DataParam
from an_agent.model.chunks import ChunkLimits, join_chunks


@dataclass(frozen=True)
class DataPolicy:
    """Limits for large data: chunk joining, and where ``url`` data may come from and how big it may be."""

    allow: tuple[str, ...] = ()
    """URL prefixes allowed besides ``file://<state dir>/`` (e.g. ``https://files.example.net/``)."""
    max_url_bytes: int = 64 * 1024 * 1024
    chunks: ChunkLimits = field(default_factory=ChunkLimits)
    url_timeout: float = 30.0


class DataResolver:
    """Joins chunked data-params and fetches ``url`` ones (see the module docstring)."""

    def __init__(self, state_dir: Path, policy: DataPolicy | None = None) -> None:
        self.policy = policy or DataPolicy()
        self._state_dir = state_dir.resolve()
        self._prefixes = (self._state_dir.as_uri() + "/", *self.policy.allow)

    def resolve(self, params: Sequence[DataParam]) -> list[DataParam]:
        """``params`` with pieces joined and ``url`` data fetched (``url`` is kept; ``data`` filled in)."""
        return [self._fetched(p) if p.url and p.data is None else p for p in join_chunks(params, self.policy.chunks)]

    def _fetched(self, param: DataParam) -> DataParam:
        url = param.url or ""
        path = f"/irtf-agent:data-params[id='{param.id}']/url"
        if not any(url.startswith(prefix) for prefix in self._prefixes):
            raise RpcError.invalid_value(
                f"data-param {param.id}: this agent fetches data only from {', '.join(self._prefixes)}, not from {url}",
                path=path,
                app_tag="url-not-allowed",
            )
        fetch = self._read_file if url.startswith("file://") else self._download
        raw = fetch(param.id, url, path)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise RpcError.invalid_value(
                f"data-param {param.id}: the data at {url} is not UTF-8 text", path=path, app_tag="url-not-text"
            ) from None
        return replace(param, data=text)

    def _read_file(self, param_id: str, url: str, path: str) -> bytes:
        target = Path(urllib.parse.unquote(urllib.parse.urlparse(url).path)).resolve()
        allowed = [self._state_dir] + [
            Path(urllib.parse.unquote(urllib.parse.urlparse(p).path)).resolve()
            for p in self.policy.allow
            if p.startswith("file://")
        ]
        if not any(target == root or root in target.parents for root in allowed):
            raise RpcError.invalid_value(
                f"data-param {param_id}: {url} leads outside the allowed directories",
                path=path,
                app_tag="url-not-allowed",
            )
        try:
            size = target.stat().st_size
            self._check_size(param_id, size, path)
            return target.read_bytes()
        except OSError as exc:
            raise RpcError.operation_failed(
                f"data-param {param_id}: cannot read {url}: {exc.strerror}", path=path, app_tag="url-unreachable"
            ) from None

    def _download(self, param_id: str, url: str, path: str) -> bytes:
        try:
            with urllib.request.urlopen(url, timeout=self.policy.url_timeout) as response:  # the prefix is allow-listed
                raw: bytes = response.read(self.policy.max_url_bytes + 1)
        except (urllib.error.URLError, OSError) as exc:
            raise RpcError.operation_failed(
                f"data-param {param_id}: cannot fetch {url}: {exc}", path=path, app_tag="url-unreachable"
            ) from None
        self._check_size(param_id, len(raw), path)
        return raw

    def _check_size(self, param_id: str, size: int, path: str) -> None:
        if size > self.policy.max_url_bytes:
            raise RpcError.invalid_value(
                f"data-param {param_id}: the data at its url is larger than this agent's limit of "
                f"{self.policy.max_url_bytes} bytes",
                path=path,
                app_tag="url-data-too-large",
            )
