"""How one logged event becomes the bytes of a ``<notification>`` for each subscriber.

`Rendering` parses, filters, wraps and encodes a live event once per distinct view and encoding (the
fan-out policy of `an_agent.runtime.notifications`); `EventSink` is what a face gives the bus for one
subscription; `envelope` and `marker` build the RFC 5277 messages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Protocol

from lxml import etree

from an_agent.clock import to_rfc3339
from an_agent.model.ns import NETCONF_NOTIFICATION_NS, NETMOD_NOTIFICATION_NS
from an_agent.runtime.requests import EventFilter

log = logging.getLogger(__name__)


@dataclass
class LoggedEvent:
    """One entry of the notification log: its position, time and content element (XML text)."""

    seq: int
    event_time: float
    xml: str  # content element only


class EventSink(Protocol):
    """Where one subscription's messages go (a session of a face).

    Sinks with equal ``encoding`` must turn a message into the same bytes
    with `encode`, so that the bus encodes an event once for all of them.
    """

    @property
    def encoding(self) -> Hashable:
        """What `encode` depends on (e.g. the session's framing)."""
        ...

    def encode(self, message: str) -> bytes:
        """``message`` (one serialised ``<notification>``) as the bytes `send_encoded` writes."""
        ...

    def send_encoded(self, data: bytes) -> None:
        """Write bytes made by `encode` (called from the subscription's writer thread only).

        A sink may also have ``try_send_encoded(data) -> bool``: write the
        whole of ``data`` now if that cannot block, else write nothing and
        return False (the writer thread sends it then). The bus calls it from
        the publishing thread, never concurrently with the writer's sends.
        """
        ...


class TextSink:
    """An `EventSink` over a function that takes each message as text (faces without framing)."""

    encoding: Hashable = "text/utf-8"

    def __init__(self, send: Callable[[str], None]) -> None:
        self._send = send

    def encode(self, message: str) -> bytes:
        return message.encode("utf-8")

    def send_encoded(self, data: bytes) -> None:
        self._send(data.decode("utf-8"))


def passes(event_filter: EventFilter | None, element: etree._Element) -> bool:
    if event_filter is None:
        return True
    try:
        return event_filter(element)
    except Exception:  # a filter that cannot evaluate an event does not select it
        log.debug("subscription filter failed on an event", exc_info=True)
        return False


class Rendering:
    """One live event on its way to every subscriber: parsed, filtered and encoded once per view.

    Used only under the bus lock, by one thread; the parsed element is shared
    read-only by the filters (which copy what they keep).
    """

    def __init__(self, event: LoggedEvent) -> None:
        self.event = event
        self._element: etree._Element | None = None
        self._envelope: str | None = None
        self._decisions: dict[Hashable, bool] = {}
        self._encoded: dict[Hashable, bytes] = {}

    def for_subscriber(self, view: Hashable, event_filter: EventFilter | None, sink: EventSink) -> bytes | None:
        """The bytes to queue for a subscriber with this view and sink; None when its filter drops the event."""
        passed = self._decisions.get(view)
        if passed is None:
            if self._element is None:
                self._element = etree.fromstring(self.event.xml)
            passed = self._decisions[view] = passes(event_filter, self._element)
        if not passed:
            return None
        key = sink.encoding
        data = self._encoded.get(key)
        if data is None:
            if self._envelope is None:
                self._envelope = envelope(self.event.event_time, self.event.xml)
            data = self._encoded[key] = sink.encode(self._envelope)
        return data


def envelope(event_time: float, content_xml: str) -> str:
    """The ``<notification>`` message for one event."""
    return (
        f'<notification xmlns="{NETCONF_NOTIFICATION_NS}"><eventTime>{to_rfc3339(event_time)}</eventTime>'
        f"{content_xml}</notification>"
    )


def marker(event_time: float, name: str) -> str:
    """An RFC 5277 marker notification (``replayComplete``, ``notificationComplete``)."""
    return envelope(event_time, f'<{name} xmlns="{NETMOD_NOTIFICATION_NS}"/>')
