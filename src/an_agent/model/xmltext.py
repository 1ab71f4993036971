"""Client text that XML 1.0 cannot hold, carried losslessly in the data tree.

A2A text parts are JSON or protobuf strings: they may hold any character, ``\\b`` or ``\\f`` among them.
XML 1.0 (and so NETCONF and a YANG ``string``, RFC 7950 section 9.4) allows no C0 control character but
tab, line feed and carriage return. Such client text is neither refused nor damaged: in the data tree
each forbidden C0 character is written as its Unicode control picture (U+2400 + code: U+0008 is
"␈", U+000C "␌"), which a person reading the task over NETCONF sees for what it was, and it is read
back as the character itself, so A2A gives the text back unchanged. A character of U+2400..U+2420 that
the text itself holds is written after "␠" (U+2420), the escape, so the round trip is exact for any
text; text without either (nearly all) is unchanged.
"""

from __future__ import annotations

import re

_PICTURES = 0x2400
_ESCAPE = "\u2420"
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\u2400-\u2420]")
_WRITTEN = re.compile("\u2420[\u2400-\u2420]|[\u2400-\u241f]")


def _write_one(match: re.Match[str]) -> str:
    char = match.group()
    if ord(char) >= _PICTURES:
        return _ESCAPE + char
    return chr(_PICTURES + ord(char))


def _read_one(match: re.Match[str]) -> str:
    written = match.group()
    if len(written) == 2:
        return written[1]
    return chr(ord(written) - _PICTURES)


def to_xml_text(value: str) -> str:
    """``value`` as XML 1.0 can hold it (module docstring); the identity for text without C0 controls
    or control pictures."""
    return _FORBIDDEN.sub(_write_one, value) if _FORBIDDEN.search(value) else value


def from_xml_text(value: str) -> str:
    """The client's text back from `to_xml_text`'s form."""
    return _WRITTEN.sub(_read_one, value) if _WRITTEN.search(value) else value
