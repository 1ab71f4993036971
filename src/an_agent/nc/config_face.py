"""The NETCONF face of the configuration operations: candidate, commit, validate, copy-config, NMDA.

Parses the parameters of ``<commit>``, ``<discard-changes>``,
``<cancel-commit>``, ``<validate>``, ``<copy-config>`` (RFC 6241) and
``<get-data>`` / ``<edit-data>`` (RFC 8526), and the RFC 6243
``with-defaults`` parameter, and calls `an_agent.runtime.commits.ConfigOperations`
or `Operations`. It decides nothing: every check of data happens in the
operation layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from lxml import etree

from an_agent.errors import RpcError
from an_agent.model import NETCONF_BASE_NS
from an_agent.nc import state as nc_state
from an_agent.runtime.candidate import datastore_name
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import DEFAULT_CONFIRM_TIMEOUT, Commit, EditConfig, EditOperation, ReadScope
from an_agent.yang.context import WithDefaults

WITH_DEFAULTS_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-with-defaults"
NMDA_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-nmda"
DATASTORES_NS = "urn:ietf:params:xml:ns:yang:ietf-datastores"
_NC = f"{{{NETCONF_BASE_NS}}}"
_DA = f"{{{NMDA_NS}}}"
_MODES = ("report-all", "report-all-tagged", "trim", "explicit")

WITH_DEFAULTS_CAPABILITY = (
    "urn:ietf:params:netconf:capability:with-defaults:1.0?basic-mode=explicit"
    "&also-supported=report-all,report-all-tagged,trim"
)
"""RFC 6243 section 4.2: the datastore keeps what clients set (explicit); the other modes on request."""


def with_defaults(operation: etree._Element) -> WithDefaults:
    """The RFC 6243 ``with-defaults`` parameter of a retrieval (default: the basic mode, explicit)."""
    found = [c for c in operation if isinstance(c.tag, str) and etree.QName(c).localname == "with-defaults"]
    if not found:
        return "explicit"
    value = (found[0].text or "").strip()
    if value not in _MODES:
        raise RpcError.invalid_value(
            f"with-defaults {value!r} is not a retrieval mode; use one of {', '.join(_MODES)}",
            error_type="protocol",
        )
    return cast(WithDefaults, value)


def datastore_of(operation: etree._Element, param: str) -> str:
    """The datastore named in ``<param>`` (``<running/>`` or ``<candidate/>``)."""
    holder = operation.find(_NC + param)
    if holder is None:
        raise RpcError.missing_element(param, f"<{etree.QName(operation).localname}> needs <{param}>")
    chosen = [etree.QName(c).localname for c in holder if isinstance(c.tag, str)]
    if len(chosen) != 1:
        raise RpcError.missing_element(param, f"<{param}> must name exactly one datastore, e.g. <running/>")
    return datastore_name(chosen[0])


def source_of(operation: etree._Element) -> str | etree._Element:
    """A ``<source>``: a datastore name, or the ``<config>`` element it holds inline."""
    holder = operation.find(_NC + "source")
    if holder is None:
        raise RpcError.missing_element("source", f"<{etree.QName(operation).localname}> needs <source>")
    inline = holder.find(_NC + "config")
    if inline is None:
        inline = holder.find("config")  # clients that leave the base namespace off (ncclient)
    if inline is not None:
        return inline
    if holder.find(_NC + "url") is not None:
        raise RpcError.operation_not_supported("<url> is not supported (no :url capability)")
    return datastore_of(operation, "source")


def edit_request(operation: etree._Element, config: etree._Element, target: str) -> EditConfig:
    """The typed edit of an ``<edit-config>`` (or ``<edit-data>``): default-operation, test-option, error-option."""
    ns = etree.QName(operation).namespace
    default_operation = (operation.findtext(f"{{{ns}}}default-operation") or "merge").strip()
    if default_operation not in ("merge", "replace", "none"):
        raise RpcError.invalid_value(
            f"default-operation must be merge, replace or none, not {default_operation!r}", error_type="protocol"
        )
    test_option = (operation.findtext(_NC + "test-option") or "test-then-set").strip()
    if test_option not in ("test-then-set", "set", "test-only"):
        raise RpcError.invalid_value(
            f"test-option {test_option!r} is not one of test-then-set, set, test-only", error_type="protocol"
        )
    error_option = (operation.findtext(_NC + "error-option") or "stop-on-error").strip()
    if error_option == "continue-on-error":
        raise RpcError.operation_not_supported(
            "error-option continue-on-error is not supported: an edit is applied whole or not at all "
            "(use stop-on-error or rollback-on-error)"
        )
    if error_option not in ("stop-on-error", "rollback-on-error"):
        raise RpcError.invalid_value(f"error-option {error_option!r} is not known", error_type="protocol")
    return EditConfig(
        config,
        cast(EditOperation, default_operation),
        "candidate" if target == "candidate" else "running",
        test_only=test_option == "test-only",
    )


def commit(operations: Operations, principal: Principal, session_id: int, operation: etree._Element) -> None:
    """``<commit>`` with the :confirmed-commit:1.1 parameters."""
    timeout_text = operation.findtext(_NC + "confirm-timeout")
    timeout = DEFAULT_CONFIRM_TIMEOUT
    if timeout_text is not None:
        try:
            timeout = float(int(timeout_text.strip()))
        except ValueError:
            timeout = 0.0
        if timeout < 1 or timeout > 4294967295:
            raise RpcError.invalid_value(
                f"confirm-timeout {timeout_text.strip()!r} is not a number of seconds from 1 to 4294967295",
                path="/ietf-netconf:commit/confirm-timeout",
            )
    confirmed = operation.find(_NC + "confirmed") is not None
    persist = operation.findtext(_NC + "persist")
    if not confirmed and (timeout_text is not None or persist is not None):
        raise RpcError.missing_element("confirmed", "confirm-timeout and persist go with <confirmed/>")
    persist_id = operation.findtext(_NC + "persist-id")
    operations.config.commit(
        principal,
        session_id,
        Commit(confirmed, timeout, persist, persist_id),
    )


def get_data_params(operation: etree._Element) -> tuple[str, bool | None]:
    """``<get-data>``'s datastore (running, candidate, operational) and config-filter (None: both)."""
    text = (operation.findtext(_DA + "datastore") or "").strip()
    if not text:
        raise RpcError.missing_element("datastore", "<get-data> needs <datastore>, e.g. ds:operational")
    prefix, _, name = text.rpartition(":")
    element = operation.find(_DA + "datastore")
    assert element is not None
    if (element.nsmap.get(prefix or None)) != DATASTORES_NS or name not in ("running", "candidate", "operational"):
        raise RpcError.invalid_value(
            f"datastore {text!r} is not one this agent has: use ds:running, ds:candidate or ds:operational "
            f"(prefix ds bound to {DATASTORES_NS})",
            path="/ietf-netconf-nmda:get-data/datastore",
        )
    for unsupported in ("origin-filter", "negated-origin-filter", "with-origin"):
        if operation.find(_DA + unsupported) is not None:
            raise RpcError.operation_not_supported(f"<{unsupported}> is not supported (no origin feature)")
    config_filter = operation.findtext(_DA + "config-filter")
    if config_filter is None:
        return name, None
    return name, config_filter.strip() == "true"


def edit_data_request(operation: etree._Element) -> EditConfig:
    """``<edit-data>`` (RFC 8526) as the typed edit of ds:running or ds:candidate it is."""
    datastore, _ = get_data_params(operation)
    if datastore == "operational":
        raise RpcError.invalid_value(
            "ds:operational is not writable; edit ds:running or ds:candidate",
            path="/ietf-netconf-nmda:edit-data/datastore",
        )
    config = operation.find(_DA + "config")
    if config is None:
        raise RpcError.missing_element("config", "<edit-data> needs <config> (no :url capability)")
    return edit_request(operation, config, datastore)


def get_data(
    operations: Operations,
    principal: Principal,
    operation: etree._Element,
    state_trees: Callable[[ReadScope], list[etree._Element]],
) -> etree._Element:
    """``<get-data>`` (RFC 8526): the ``<data>`` reply element.

    ``state_trees`` gives the face's own state (monitoring, YANG library) a
    read of ds:operational can select.
    """
    datastore, config_filter = get_data_params(operation)
    depth = (operation.findtext(_DA + "max-depth") or "unbounded").strip()
    if depth != "unbounded":
        raise RpcError.operation_not_supported("max-depth is not supported; leave it out (unbounded)")
    flt = nc_state.nmda_filter(operation.find(_DA + "subtree-filter"), operation.find(_DA + "xpath-filter"))
    scope = nc_state.read_scope(flt)
    config_only = datastore != "operational" or config_filter is True
    data = operations.read_data(
        principal,
        scope,
        config_only,
        [] if config_only else state_trees(scope),
        datastore="candidate" if datastore == "candidate" else "running",
        with_defaults=with_defaults(operation),
    )
    if config_filter is False:
        data = nc_state.state_only(data, operations.yang.schema_node)
    holder = etree.Element(_DA + "data", nsmap={None: NMDA_NS})  # type: ignore[dict-item]
    holder.extend(nc_state.filtered(flt, data, operations.keys_of))
    return holder
