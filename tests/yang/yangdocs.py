"""Instance-document builders shared by the YANG layer tests."""

from __future__ import annotations

from collections.abc import Callable
from xml.sax.saxutils import escape

import pytest

from an_agent.errors import RpcError

AGT = "urn:ietf:params:xml:ns:yang:irtf-agent"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"

# Figure 7 of draft-wang-nmrg-magent-im-00, as the draft prints it (stray quotes included).
FIGURE_7 = """<content namespace=\\"prompt\\">
##target object
<object">xxx</object">
##task description
<description">xxx</description">
##environmental infomation
<environmentInput">xxx</environmentInput">"""


def task(task_id: str = "t1", content: str = "##task description\nrestore cell 12", extra: str = "") -> str:
    """One <tasks> element holding one task (content is XML-escaped)."""
    return (
        f'<tasks xmlns="{AGT}"><task><task-id>{task_id}</task-id>'
        f"<content>{escape(content)}</content>{extra}</task></tasks>"
    )


def data_param(param_id: str = "d1", extra: str = "") -> str:
    return f'<data-params xmlns="{AGT}"><id>{param_id}</id><dataType>text</dataType>{extra}</data-params>'


def rpc_error(call: Callable[..., object], *args: object) -> RpcError:
    """The RpcError ``call(*args)`` raises (fails the test if it raises nothing)."""
    with pytest.raises(RpcError) as info:
        call(*args)
    return info.value
