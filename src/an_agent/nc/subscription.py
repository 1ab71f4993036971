"""RFC 5277 notifications as a client receives them: `Notification`, its `NotificationKind`, `Subscription`.

`Subscription` reads the notifications a session has received (through the
session's ``take_notification``, duck-typed: ncclient's manager in
`an_agent.nc.client`) and parses each ``<notification>`` envelope on plain
lxml. No ncclient import, so it lives apart from the module that is the only
importer of ncclient; `NetconfClient.subscribe` returns a `Subscription`.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lxml import etree

from an_agent.clock import from_rfc3339
from an_agent.errors import RequestTimeout, RpcError, TransportError
from an_agent.model.ns import NETCONF_NOTIFICATION_NS, NETMOD_NOTIFICATION_NS

__all__ = ["Notification", "NotificationKind", "Subscription"]


class NotificationKind(enum.StrEnum):
    """What an RFC 5277 ``<notification>`` carries."""

    EVENT = "event"
    """An event of the stream (e.g. ``condition-notifications``)."""
    REPLAY_COMPLETE = "replayComplete"
    """All replayed events (from ``startTime``) have been sent; live events follow."""
    NOTIFICATION_COMPLETE = "notificationComplete"
    """The subscription reached its ``stopTime``; no more events will come."""


@dataclass(frozen=True)
class Notification:
    """One received ``<notification>``.

    ``element`` is the event's content element (the child after
    ``<eventTime>``, e.g. ``<condition-notifications>``), or the
    ``<replayComplete>``/``<notificationComplete>`` element for those kinds.
    ``envelope`` is the whole ``<notification>``.
    """

    event_time: float
    element: etree._Element
    kind: NotificationKind
    envelope: etree._Element


class Subscription:
    """An RFC 5277 subscription of one session; read events with `next` or by iterating.

    RFC 5277 allows one subscription per session: it ends when the session
    closes or, with a ``stopTime``, after ``notificationComplete``.
    """

    # How often a waiting `next` checks that the session is still alive.
    _POLL = 0.5

    def __init__(self, manager: Any) -> None:
        self._manager = manager
        self.completed = False
        """True once ``notificationComplete`` has been received."""

    def next(self, timeout: float | None = None) -> Notification:
        """The next notification, waiting at most ``timeout`` seconds (None: until one comes).

        Raises RequestTimeout when none arrives in time, TransportError when
        the session is closed and nothing is left to read.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = self._POLL if deadline is None else min(self._POLL, max(0.0, deadline - time.monotonic()))
            received = self._manager.take_notification(block=True, timeout=wait)
            if received is None:
                if not self._manager.connected:
                    raise TransportError("the NETCONF session is closed; no more notifications")
                if deadline is not None and time.monotonic() >= deadline:
                    raise RequestTimeout(f"no notification within {timeout} s")
                continue
            note = _parse_notification(received.notification_ele)
            if note.kind is NotificationKind.NOTIFICATION_COMPLETE:
                self.completed = True
            return note

    def __iter__(self) -> Iterator[Notification]:
        """Every notification, in order, until ``notificationComplete`` (included) or the session closes."""
        while not self.completed:
            try:
                yield self.next()
            except TransportError:
                return


def _parse_notification(envelope: etree._Element) -> Notification:
    event_time_el = envelope.find(f"{{{NETCONF_NOTIFICATION_NS}}}eventTime")
    if event_time_el is None or not event_time_el.text:
        raise RpcError.missing_element("eventTime", "a <notification> without <eventTime>", error_type="protocol")
    try:
        event_time = from_rfc3339(event_time_el.text)
    except ValueError as exc:
        raise RpcError.invalid_value(str(exc), error_type="protocol") from None
    content = [child for child in envelope if child is not event_time_el and isinstance(child.tag, str)]
    if not content:
        raise RpcError.missing_element("notification content", "a <notification> with no event", error_type="protocol")
    element = content[0]
    kind = NotificationKind.EVENT
    if element.tag == f"{{{NETMOD_NOTIFICATION_NS}}}replayComplete":
        kind = NotificationKind.REPLAY_COMPLETE
    elif element.tag == f"{{{NETMOD_NOTIFICATION_NS}}}notificationComplete":
        kind = NotificationKind.NOTIFICATION_COMPLETE
    return Notification(event_time, element, kind, envelope)
