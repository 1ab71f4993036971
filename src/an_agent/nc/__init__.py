"""NETCONF transport: nc/server.py (the only importer of ``netconf``) and nc/client.py (of ``ncclient``)."""

import logging


class _QuietDisconnects(logging.Filter):
    """paramiko logs a peer that hangs up without closing the SSH session as an
    ERROR ("Socket exception: Connection reset by peer"); for agents and their
    clients that is routine, so it goes to our debug log instead of stderr."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "Socket exception" in message or "Error reading SSH protocol banner" in message:
            logging.getLogger(__name__).debug("peer went away: %s", message)
            return False
        return True


# paramiko logs under "paramiko.transport" unless told otherwise; ncclient moves
# its transports' log channel to its own logger.
for _name in ("paramiko.transport", "ncclient.transport.ssh"):
    logging.getLogger(_name).addFilter(_QuietDisconnects())
