"""NETCONF transport: nc/server.py (the only importer of ``netconf``) and nc/client.py (of ``ncclient``)."""

import logging
import threading


class _QuietDisconnects(logging.Filter):
    """paramiko logs a peer that hangs up without closing the SSH session as an
    ERROR ("Socket exception: Connection reset by peer"); for agents and their
    clients that is routine, so it goes to our debug log instead of stderr.

    A connection that never sends its SSH banner (closed by the hello timeout)
    is logged as an error followed by its traceback, one record per line, from
    the dying transport thread: those lines are dropped with it."""

    def __init__(self) -> None:
        super().__init__()
        self._after_banner_error = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "Socket exception" in message or "Error reading SSH protocol banner" in message:
            logging.getLogger(__name__).debug("peer went away: %s", message)
            self._after_banner_error.active = True
            return False
        # The traceback of the routine error just dropped follows it in the same thread.
        return not (getattr(self._after_banner_error, "active", False) and record.levelno >= logging.ERROR)


# paramiko logs under "paramiko.transport" unless told otherwise; ncclient moves
# its transports' log channel to its own logger.
for _name in ("paramiko.transport", "ncclient.transport.ssh"):
    logging.getLogger(_name).addFilter(_QuietDisconnects())
