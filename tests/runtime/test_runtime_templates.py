"""get-schema-template serves personal patches only to their client or an administrator (no sockets)."""

from __future__ import annotations

import pytest
from runtimesupport import OpsFactory

from an_agent.errors import RpcError
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import GetSchemaTemplate

BOB = Principal("bob")
NOC = Principal("noc-user", agent_names=frozenset({"noc-1"}))
ADMIN = Principal.authenticated("root")


def test_client_id_is_the_caller_unless_it_may_speak_for_another(make_ops: OpsFactory) -> None:
    ops = make_ops(schemas=True)
    asked: list[str | None] = []
    assert ops.schemas is not None
    serve = ops.schemas.get_schema_template

    def recording(request: GetSchemaTemplate, caller: str):  # type: ignore[no-untyped-def]
        asked.append(request.client_id)
        return serve(request, caller)

    ops.schemas.get_schema_template = recording  # type: ignore[method-assign]
    ops.get_schema_template(BOB, GetSchemaTemplate("energy_saving_adjust_v1"))
    ops.get_schema_template(NOC, GetSchemaTemplate("energy_saving_adjust_v1", client_id="noc-1"))
    ops.get_schema_template(ADMIN, GetSchemaTemplate("energy_saving_adjust_v1", client_id="noc-1"))
    assert asked == ["bob", "noc-1", "noc-1"]
    for principal, client in ((BOB, "noc-1"), (NOC, "bob")):
        with pytest.raises(RpcError) as caught:
            ops.get_schema_template(principal, GetSchemaTemplate("energy_saving_adjust_v1", client_id=client))
        assert caught.value.error_tag == "access-denied" and client in caught.value.message
    assert asked == ["bob", "noc-1", "noc-1"]  # nothing was served to the refused callers
