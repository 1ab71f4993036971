"""Splitting a NETCONF byte stream into messages (RFC 6242: 1.0 end markers, 1.1 chunks), with a size limit.

The ``netconf`` package's reader buffers a message without bound and accepts
chunk sizes RFC 6242 forbids; this reader consumes an oversized message to
its end without keeping it (`MessageTooBig`, the session stays usable),
refuses text that is not UTF-8 (`BadEncoding`) and bad chunk headers
(`BadFraming`). It reads through a plain callable and knows no session, so it
lives apart from `an_agent.nc.server`, which adapts it to that package.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# How much one read asks of the stream.
RECV_BYTES = 65536

# RFC 6242 section 4.2: chunk-size = 1-9 DIGIT followed by 0-9 DIGIT, at most 4294967295.
_CHUNK_SIZE = re.compile(rb"[1-9][0-9]{0,9}")
_MAX_CHUNK = 4294967295


class StreamEnded(Exception):
    """The stream ended (or was detached) before a whole message arrived."""


class MessageTooBig(Exception):
    """A client message exceeded the limit; it has been read and dropped entirely."""


class BadEncoding(Exception):
    """A client message was not UTF-8 (RFC 6241 section 3); it has been read and dropped."""


class BadFraming(Exception):
    """The stream can no longer be split into messages (a bad chunk header)."""


def _decode(message: bytes) -> str:
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadEncoding(
            f"the message is not valid UTF-8 (RFC 6241 section 3): {exc.reason} at byte offset {exc.start} "
            f"(byte 0x{message[exc.start]:02x}); the message was discarded"
        ) from None


class MessageReader:
    """Reads whole messages of at most ``max_message`` bytes from ``recv`` (`RECV_BYTES` a call, b"" at the end)."""

    def __init__(self, recv: Callable[[], bytes], max_message: int) -> None:
        self._recv = recv
        self.max_message = max_message
        self.rbuffer = b""
        self._chunk_overflow = False

    def _recv_more(self) -> None:
        data = self._recv()
        if not data:
            raise StreamEnded()
        self.rbuffer += data

    def read_10(self) -> str:
        """The next message of NETCONF 1.0 framing (ended by ``]]>]]>``)."""
        searchfrom = 0
        dropped = False
        while True:
            eom = self.rbuffer.find(b"]]>]]>", searchfrom)
            if eom != -1:
                break
            if len(self.rbuffer) > self.max_message:
                # Keep only a tail that could hold the start of the delimiter.
                self.rbuffer = self.rbuffer[-5:]
                dropped = True
            searchfrom = max(0, len(self.rbuffer) - 5)
            self._recv_more()
        msg = self.rbuffer[:eom]
        self.rbuffer = self.rbuffer[eom + 6 :]
        if dropped or len(msg) > self.max_message:
            raise MessageTooBig()
        return _decode(bytes(msg))

    def read_11(self) -> str:
        """The next message of NETCONF 1.1 chunked framing."""
        parts: list[bytes] = []
        size = 0
        dropped = False
        self._chunk_overflow = False
        while True:
            chunk = self._receive_chunk()
            if chunk is None:
                break
            size += len(chunk)
            if self._chunk_overflow:
                size = self.max_message + 1  # part of the chunk was dropped unread
            if size > self.max_message:
                dropped = True
                parts = []
            elif not dropped:
                parts.append(chunk)
        if dropped:
            raise MessageTooBig()
        return _decode(b"".join(parts))

    def _receive_chunk(self) -> bytes | None:
        while len(self.rbuffer) < 4:
            self._recv_more()
        if self.rbuffer[:2] != b"\n#":
            raise BadFraming(f"expected a chunk header (LF '#'), got {bytes(self.rbuffer[:16])!r}")
        while True:
            nl = self.rbuffer.find(b"\n", 2)
            if nl != -1:
                break
            if len(self.rbuffer) > 13:
                raise BadFraming(f"chunk header too long: {bytes(self.rbuffer[:16])!r}")
            self._recv_more()
        header = bytes(self.rbuffer[2:nl])
        self.rbuffer = self.rbuffer[nl + 1 :]
        if header == b"#":
            return None
        # int() would also take " 12", "+12", "012" and "1_2": RFC 6242 allows digits only, no leading zero.
        if _CHUNK_SIZE.fullmatch(header) is None or int(header) > _MAX_CHUNK:
            raise BadFraming(f"invalid chunk size {header!r} (RFC 6242: 1 to 4294967295, digits, no leading zero)")
        length = int(header)
        while len(self.rbuffer) < length:
            if length > self.max_message and len(self.rbuffer) > RECV_BYTES:
                # Drop what we have of an oversized chunk instead of buffering it.
                self._chunk_overflow = True
                length -= len(self.rbuffer)
                self.rbuffer = b""
                self._recv_more()
                continue
            self._recv_more()
        chunk = self.rbuffer[:length]
        self.rbuffer = self.rbuffer[length:]
        return bytes(chunk)
