"""Writing state files that only the agent's user may read."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``, mode 0600, atomically.

    ``mkstemp`` creates a fresh name with O_EXCL and mode 0600 beside ``path``, so a symlink planted at
    a predictable temporary name cannot redirect the write, and a reader sees the old file or the new.
    Nothing is written when ``path`` is already a regular 0600 file holding ``data``: an agent restarted
    on its state directory writes the same files again, and must start even when that directory is full
    (found by lab soak).
    """
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and path.read_bytes() == data:
            return
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
