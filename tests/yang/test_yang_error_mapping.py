"""libyang errors -> RFC 7950 section 15 / RFC 6241 error-tags, on a test module with every constraint kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from yangdocs import rpc_error

from an_agent.yang import YangContext
from an_agent.yang.lyerrors import LyErrorItem, to_rpc_error

NS = "urn:an-agent:test"
BASE = "<tags>t</tags><a>1</a>"


@pytest.fixture(scope="module")
def test_ctx() -> YangContext:
    return YangContext(Path(__file__).parent / "constraints")


def doc(body: str) -> str:
    return f'<c xmlns="{NS}">{body}</c>'


def test_valid(test_ctx: YangContext) -> None:
    test_ctx.validate_config(doc(BASE + "<item><name>a</name><slot>1</slot></item><mode>x</mode><extra>e</extra>"))


def test_unique_violation(test_ctx: YangContext) -> None:
    items = "<item><name>a</name><slot>1</slot></item><item><name>b</name><slot>1</slot></item>"
    err = rpc_error(test_ctx.validate_config, doc(BASE + items))
    assert (err.error_type, err.error_tag, err.app_tag) == ("application", "operation-failed", "data-not-unique")
    assert err.path == "/an-test:c/item[name='b']"


def test_max_elements(test_ctx: YangContext) -> None:
    items = "".join(f"<item><name>{n}</name></item>" for n in "abc")
    err = rpc_error(test_ctx.validate_config, doc(BASE + items))
    assert (err.error_tag, err.app_tag, err.path) == (
        "operation-failed",
        "too-many-elements",
        "/an-test:c/item[name='c']",
    )


def test_min_elements(test_ctx: YangContext) -> None:
    err = rpc_error(test_ctx.validate_config, doc("<a>1</a>"))
    assert (err.error_tag, err.app_tag, err.path) == ("operation-failed", "too-few-elements", "/an-test:c/tags")


def test_when_false(test_ctx: YangContext) -> None:
    err = rpc_error(test_ctx.validate_config, doc(BASE + "<mode>y</mode><extra>e</extra>"))
    assert (err.error_tag, err.path, err.info) == ("unknown-element", "/an-test:c/extra", {"bad-element": "extra"})


def test_must_violation(test_ctx: YangContext) -> None:
    err = rpc_error(test_ctx.validate_config, doc(BASE + "<limit>20</limit>"))
    assert (err.error_tag, err.app_tag, err.path) == ("operation-failed", "must-violation", "/an-test:c/limit")


def test_mandatory_choice(test_ctx: YangContext) -> None:
    err = rpc_error(test_ctx.validate_config, doc("<tags>t</tags>"))
    assert (err.error_type, err.error_tag, err.app_tag) == ("application", "data-missing", "missing-choice")
    assert (err.path, err.info) == ("/an-test:c", {"missing-choice": "how"})


def test_range(test_ctx: YangContext) -> None:
    err = rpc_error(test_ctx.validate_config, doc(BASE + "<limit>300</limit>"))
    assert (err.error_tag, err.path) == ("invalid-value", "/an-test:c/limit")
    assert "300" in err.message


def test_several_errors_are_kept_in_the_message() -> None:
    items = [
        LyErrorItem('Invalid boolean value "maybe".', data_path="/m:a/b"),
        LyErrorItem('Mandatory node "c" instance does not exist.', schema_path="/m:a/c"),
    ]
    err = to_rpc_error(items, lambda item, name: None, lambda ns: None)
    assert (err.error_tag, err.path) == ("invalid-value", "/m:a/b")
    assert err.message.endswith('(and 1 more: /m:a/c: Mandatory node "c" instance does not exist.)')
    assert str(err).startswith("invalid-value (application) at /m:a/b: ")


def test_location_strings_are_parsed() -> None:
    item = LyErrorItem.from_raw("m", "Data location \"/a:b/c[k='x']\", line number 3.", None, 9)
    assert (item.data_path, item.schema_path, item.line) == ("/a:b/c[k='x']", None, 3)
    item = LyErrorItem.from_raw("m", 'Schema location "/a:b/c", data location "/a:b", line number 7.', "tag", 9)
    assert (item.data_path, item.schema_path, item.line, item.app_tag) == ("/a:b", "/a:b/c", 7, "tag")
