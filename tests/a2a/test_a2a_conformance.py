"""The A2A face against the A2A v1 spec, method by method and error by error, with the reference a2a-sdk
client over both bindings the card declares (and raw HTTP where the SDK hides the wire)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    UnsupportedOperationError,
)
from a2asupport import collect, energy_agent_config, run, structured, text, verify

from an_agent.model import Task as DraftTask
from an_agent.model import TaskStatus
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer

BINDINGS = ["JSONRPC", "HTTP+JSON"]
PAYLOAD = {"cell_ids": ["CELL-0401"], "action": "reduce", "duration_minutes": 30}
PROMPT = "## target object\nSITE-07\n## task description\ndiagnose"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    """One agent for the module (tasks take 3 s: long enough to act on a running one)."""
    with AgentServer(energy_agent_config(tmp_path_factory.mktemp("conformance") / "state", 3.0)) as running:
        yield running


async def _start(client: Any, request: SendMessageRequest) -> Task:
    """Send ``request`` and leave its stream at the first event: the task as created."""
    stream = client.send_message(request)
    try:
        first = await anext(stream)
    finally:
        await stream.aclose()
    task: Task = first.task
    return task


def _rpc(server: AgentServer, method: str, params: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    """A raw JSON-RPC call (A2A-Version 1.0 unless ``headers`` say otherwise): the decoded reply."""
    assert server.a2a is not None
    reply = httpx.post(
        f"{server.a2a.url}/",
        json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
        headers={"A2A-Version": "1.0"} if headers is None else headers,
        auth=("admin", "admin"),
        verify=verify(server),
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def _netconf_status(server: AgentServer, task_id: str) -> TaskStatus | None:
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        return nc.get_task(task_id).status


@pytest.mark.slow
@pytest.mark.parametrize("binding", BINDINGS)
def test_a_task_that_ended_refuses_messages_subscriptions_and_cancels(server: AgentServer, binding: str) -> None:
    """Spec 3.1.1/3.1.2 (UnsupportedOperationError), 3.1.6 (UnsupportedOperationError), 3.1.5
    (TaskNotCancelableError, also for a task already canceled); before, a message to a finished task was an
    internal error, a subscription streamed the ended task, and a second cancel succeeded."""

    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> dict[str, Any]:
        events = await collect(client.send_message(structured(PAYLOAD)))  # the stream closes once it ended
        done = await client.get_task(GetTaskRequest(id=events[0].task.id))
        refused: dict[str, Any] = {"state": TaskState.Name(done.status.state)}
        for name, request in (("text", text("one more thing")), ("data", structured(PAYLOAD))):
            request.message.task_id = done.id
            with pytest.raises(UnsupportedOperationError) as info:
                await collect(client.send_message(request))
            refused[name] = str(info.value)
        with pytest.raises(UnsupportedOperationError):
            await collect(client.subscribe(SubscribeToTaskRequest(id=done.id)))
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=done.id))
        running = await _start(client, structured(PAYLOAD))
        canceled = await client.cancel_task(CancelTaskRequest(id=running.id))
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=running.id))
        refused["canceled"] = (running.id, TaskState.Name(canceled.status.state))
        return refused

    refused = run(server, test, binding)
    assert refused["state"] == "TASK_STATE_COMPLETED"
    assert "already ended as finished" in refused["text"] and "already ended" in refused["data"]
    task_id, state = refused["canceled"]
    assert state == "TASK_STATE_CANCELED"
    assert _netconf_status(server, task_id) == TaskStatus.CANCELED  # the same task and state over NETCONF


@pytest.mark.slow
def test_structured_data_to_a_running_task_is_refused_as_already_running(server: AgentServer) -> None:
    """Schemas extension, section 3: a structured part for an existing task that asks for no input."""

    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> str:
        running = await _start(client, structured(PAYLOAD))
        follow = structured(PAYLOAD)
        follow.message.task_id = running.id
        try:
            with pytest.raises(UnsupportedOperationError) as info:
                await collect(client.send_message(follow))
            return str(info.value)
        finally:
            await client.cancel_task(CancelTaskRequest(id=running.id))

    assert "already running" in run(server, test)


@pytest.mark.slow
@pytest.mark.parametrize("binding", BINDINGS)
def test_list_tasks_filters_and_pages_the_callers_tasks(server: AgentServer, binding: str) -> None:
    """Spec 3.1.4: contextId/status filters, pageSize (default 50, 1..100), cursor paging with nextPageToken
    "" on the last page, totalSize before paging, no artifacts unless asked; before, every task came in
    one page whatever was asked."""

    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> dict[str, Any]:
        ids = []
        for _ in range(3):
            ids.append((await _start(client, structured(PAYLOAD))).id)
        await client.cancel_task(CancelTaskRequest(id=ids[0]))
        everything = await client.list_tasks(ListTasksRequest())
        pages, token = [], ""
        while True:
            page = await client.list_tasks(ListTasksRequest(page_size=2, page_token=token))
            pages.append(page)
            token = page.next_page_token
            if not token:
                break
        canceled = await client.list_tasks(ListTasksRequest(status=TaskState.TASK_STATE_CANCELED))
        in_context = await client.list_tasks(ListTasksRequest(context_id=ids[1], include_artifacts=True))
        errors = []
        for bad in (
            ListTasksRequest(page_size=0),
            ListTasksRequest(page_size=101),
            ListTasksRequest(history_length=-1),
        ):
            with pytest.raises(InvalidParamsError) as info:
                await client.list_tasks(bad)
            errors.append(str(info.value))
        with pytest.raises(InvalidParamsError):
            await client.list_tasks(ListTasksRequest(page_token="not a token"))
        for running in ids[1:]:
            await client.cancel_task(CancelTaskRequest(id=running))
        return {"ids": ids, "all": everything, "pages": pages, "canceled": canceled, "context": in_context}

    got = run(server, test, binding)
    everything, pages = got["all"], got["pages"]
    assert everything.page_size == 50 and everything.next_page_token == ""
    assert everything.total_size == len(everything.tasks) >= 3
    listed = [t.id for t in everything.tasks]
    assert set(got["ids"]) <= set(listed)
    paged = [t.id for page in pages for t in page.tasks]
    assert paged == listed  # the same order, each task once, across pages
    assert all(page.page_size == 2 and page.total_size == everything.total_size for page in pages)
    assert all(len(page.tasks) == 2 for page in pages[:-1]) and len(pages[-1].tasks) in (1, 2)
    stamps = [t.status.timestamp.ToNanoseconds() for t in everything.tasks]
    assert stamps == sorted(stamps, reverse=True)  # most recently updated first
    assert got["ids"][0] in [t.id for t in got["canceled"].tasks]
    assert all(t.status.state == TaskState.TASK_STATE_CANCELED for t in got["canceled"].tasks)
    assert [t.id for t in got["context"].tasks] == [got["ids"][1]]


def test_list_tasks_over_json_rpc_always_carries_next_page_token(server: AgentServer) -> None:
    reply = _rpc(server, "ListTasks", {"pageSize": 100})
    result = reply["result"]
    assert result["nextPageToken"] == "" and result["pageSize"] == 100, result
    assert result["totalSize"] == len(result["tasks"])
    assert all("artifacts" not in task for task in result["tasks"])


@pytest.mark.slow
def test_a_client_context_id_is_refused_not_replaced(server: AgentServer) -> None:
    """Spec 3.4.1: an agent that cannot accept a client's contextId MUST refuse the request (here: a task is
    its own context); before, the task silently got another contextId. The task's own id is accepted."""

    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> tuple[str, str, list[str]]:
        joined = structured(PAYLOAD)
        joined.message.context_id = "conversation-1"
        with pytest.raises(InvalidParamsError) as new:
            await collect(client.send_message(joined))
        task = await _start(client, text("diagnose SITE-09"))  # waits for the keys the text does not give
        wrong = text("CELL-1")
        wrong.message.task_id, wrong.message.context_id = task.id, "conversation-1"
        with pytest.raises(InvalidParamsError) as other:
            await collect(client.send_message(wrong))
        contexts = [task.context_id]
        right = text("CELL-7")
        right.message.task_id, right.message.context_id = task.id, task.context_id
        async for event in client.send_message(right):  # answers the task's input-required, same context
            payload = getattr(event, event.WhichOneof("payload"))
            contexts.append(payload.context_id)
        return str(new.value), str(other.value), contexts

    new, other, contexts = run(server, test)
    assert "conversation-1" in new and "conversation-1" in other
    assert len(set(contexts)) == 1 and len(contexts) > 1, contexts


@pytest.mark.parametrize("binding", BINDINGS)
def test_parts_of_media_types_no_skill_takes_are_refused(server: AgentServer, binding: str) -> None:
    """Spec 3.1.1/3.3.2 ContentTypeNotSupportedError, for a part or for the artifact acceptedOutputModes
    allow; before, a file part was dropped (text + file made a task from the text alone) or called a message
    "with neither text nor data" (InvalidParams), and output modes were not looked at."""

    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> list[str]:
        messages = [
            [Part(text="diagnose SITE-1"), Part(url="https://example.net/site-1.png", media_type="image/png")],
            [Part(raw=b"\x89PNG", media_type="image/png")],
            [Part(text="<p>diagnose SITE-1</p>", media_type="text/html")],
        ]
        out = []
        for parts in messages:
            request = SendMessageRequest(message=Message(message_id="m9", role=Role.ROLE_USER, parts=parts))
            with pytest.raises(ContentTypeNotSupportedError) as info:
                await collect(client.send_message(request))
            out.append(str(info.value))
        images_only = structured(PAYLOAD)  # results are text or JSON: an artifact it could not take
        images_only.configuration.accepted_output_modes.append("image/png")
        with pytest.raises(ContentTypeNotSupportedError) as info:
            await collect(client.send_message(images_only))
        out.append(str(info.value))
        return out

    before = _rpc(server, "ListTasks", {})["result"]["totalSize"]
    first, second, third, output = run(server, test, binding)
    assert "parts[1]: a file part (image/png)" in first
    assert "parts[0]: a file part (image/png)" in second
    assert "text/html" in third
    assert "acceptedOutputModes image/png" in output
    assert _rpc(server, "ListTasks", {})["result"]["totalSize"] == before  # no task was made


@pytest.mark.parametrize("binding", BINDINGS)
def test_get_task_validates_history_length_and_id(server: AgentServer, binding: str) -> None:
    """Spec 3.2.4 (historyLength non-negative) and 5.7 (a REQUIRED id): InvalidParams, not TaskNotFound."""

    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> str:
        started = await _start(client, text(PROMPT))
        with pytest.raises(InvalidParamsError):
            await client.get_task(GetTaskRequest(id=started.id, history_length=-1))
        task = await client.get_task(GetTaskRequest(id=started.id, history_length=0))
        assert not task.history
        return str(task.id)

    assert run(server, test, binding)
    error = _rpc(server, "GetTask", {})["error"]
    assert error["code"] == -32602, error


@pytest.mark.parametrize("binding", BINDINGS)
def test_push_notifications_and_extended_card_are_not_supported(server: AgentServer, binding: str) -> None:
    """Spec 3.3.4: the card declares neither, so PushNotificationNotSupportedError for the four push methods
    and for a push config in a message (before: silently ignored) and UnsupportedOperationError for
    GetExtendedAgentCard (before: ExtendedAgentCardNotConfiguredError, the error of an agent that declares
    the capability); a negative historyLength in a message's configuration is InvalidParams (3.2.4)."""

    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> AgentCard:
        calls = (
            client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id="t", url="https://127.0.0.1:9/hook")
            ),
            client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id="t", id="c")),
            client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id="t")),
            client.delete_task_push_notification_config(DeleteTaskPushNotificationConfigRequest(task_id="t", id="c")),
        )
        for call in calls:
            with pytest.raises(PushNotificationNotSupportedError):
                await call
        inline = structured(PAYLOAD)  # a webhook in the message's configuration: refused, no task made
        inline.configuration.task_push_notification_config.url = "https://127.0.0.1:9/hook"
        with pytest.raises(PushNotificationNotSupportedError):
            await collect(client.send_message(inline))
        negative = structured(PAYLOAD)
        negative.configuration.history_length = -1
        with pytest.raises(InvalidParamsError):
            await collect(client.send_message(negative))
        return card

    card = run(server, test, binding)
    assert not card.capabilities.push_notifications and not card.capabilities.extended_agent_card
    # The SDK client answers GetExtendedAgentCard with the public card itself when the card declares no
    # extended one, so the agent's answer is read on the wire.
    assert server.a2a is not None
    assert _rpc(server, "GetExtendedAgentCard", {})["error"]["code"] == -32004  # UnsupportedOperationError
    reply = httpx.get(
        f"{server.a2a.url}/rest/extendedAgentCard",
        headers={"A2A-Version": "1.0"},
        auth=("admin", "admin"),
        verify=verify(server),
        timeout=30,
    )
    assert reply.json()["error"]["details"][0]["reason"] == "UNSUPPORTED_OPERATION", reply.text


def test_version_is_negotiated_by_header_or_query_parameter(server: AgentServer) -> None:
    """Spec 3.6: no A2A-Version means 0.3, which this 1.0 agent refuses (VersionNotSupportedError -32009), as
    it refuses 1.1 (Major.Minor must match; before, the SDK took any 1.x); the version may come as a request
    parameter instead of the header (before: refused as 0.3)."""
    assert server.a2a is not None
    assert _rpc(server, "ListTasks", {}, headers={})["error"]["code"] == -32009
    assert _rpc(server, "ListTasks", {}, headers={"A2A-Version": "0.5"})["error"]["code"] == -32009
    assert _rpc(server, "ListTasks", {}, headers={"A2A-Version": "1.1"})["error"]["code"] == -32009  # Major.Minor
    assert "result" in _rpc(server, "ListTasks", {}, headers={"a2a-version": "1.0"})
    assert "result" in _rpc(server, "ListTasks", {}, headers={"A2A-Version": "1.0.3"})  # patch not considered
    for url in (f"{server.a2a.url}/rest/tasks?A2A-Version=1.0", f"{server.a2a.url}/rest/tasks"):
        reply = httpx.get(url, auth=("admin", "admin"), verify=verify(server), timeout=30)
        assert reply.status_code == (200 if "A2A-Version" in url else 400), reply.text
    reply = httpx.post(
        f"{server.a2a.url}/?A2A-Version=1.0",
        json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}},
        auth=("admin", "admin"),
        verify=verify(server),
        timeout=30,
    )
    assert "result" in reply.json(), reply.text


@pytest.mark.slow
def test_a_task_assigned_over_netconf_is_the_same_task_over_a2a(server: AgentServer) -> None:
    """One task store, both faces: a NETCONF assignment is found, listed and followed over A2A, its states
    mapped through the one table (processing -> WORKING with the exact draft status in the metadata)."""
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        nc.assign_task(DraftTask("nc-made-1", send_from="admin", content=PROMPT, task_async=True))

    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> dict[str, Any]:
        task = await client.get_task(GetTaskRequest(id="nc-made-1"))
        listed = await client.list_tasks(ListTasksRequest(context_id="nc-made-1"))
        followed = await collect(client.subscribe(SubscribeToTaskRequest(id="nc-made-1")))
        return {"task": task, "listed": listed, "followed": followed}

    got = run(server, test)
    task = got["task"]
    assert task.id == task.context_id == "nc-made-1"
    assert TaskState.Name(task.status.state) == "TASK_STATE_WORKING"
    assert task.metadata["an-agent/task-status"] == "processing"
    assert [t.id for t in got["listed"].tasks] == ["nc-made-1"]
    followed = got["followed"]
    assert followed[0].task.id == "nc-made-1"
    last = followed[-1].status_update
    assert (
        TaskState.Name(last.status.state) == "TASK_STATE_COMPLETED"
        and last.metadata["an-agent/task-status"] == "finished"
    )
    assert _netconf_status(server, "nc-made-1") == TaskStatus.FINISHED
