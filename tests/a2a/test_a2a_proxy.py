"""Our A2A client and card fetcher go through the proxy the environment names (HTTPS_PROXY, HTTP_PROXY,
ALL_PROXY, ...) as httpx reads it, except for the hosts NO_PROXY lists and this host's own 127.0.0.1; TLS is
verified through the proxy too.

The agent (HTTPS, its own certificate; or plain HTTP) listens on 127.0.0.1 and is advertised as
``LAB_NAME``, a name only the proxy knows (it tunnels every CONNECT to 127.0.0.1 and forwards every request
for an ``http://`` URL there), as a CSP lab's agents are known only behind its proxy. A client that goes direct looks the name up itself: the test's resolver answers 127.0.0.1 for it and
records each lookup, so no query leaves the machine and a direct route shows."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2asupport import energy_agent_config

from an_agent.a2a.client import A2AAgentClient
from an_agent.a2a.discovery import fetch_card, is_this_host, proxy_mounts
from an_agent.errors import ConfigError, ConnectError
from an_agent.model import ConditionNotification, Task, TaskStatus
from an_agent.server import AgentServer

LAB_NAME = "peer.an-agent.example"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


class TunnelProxy:
    """An HTTP proxy on 127.0.0.1 that sends everything to 127.0.0.1, whatever host it names: it tunnels each
    CONNECT, and forwards each request for an ``http://`` URL (absolute-form, RFC 9112 section 3.2.2), one
    request per connection. It records what it was asked (``CONNECT host:port``, ``POST http://...``) and
    the JSON-RPC method of each forwarded call; anything else is answered 501."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.calls: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="test-proxy", daemon=True)
        self._thread.start()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server = asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _listen(self) -> asyncio.Server:
        return await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target = head.split(b"\r\n", 1)[0].decode().split(" ")[:2]
            self.asked.append(f"{method} {target}")
            if target.startswith("http://"):
                await self._forward(head, reader, writer)
                return
            if method != "CONNECT":
                writer.write(b"HTTP/1.1 501 Not Implemented\r\ncontent-length: 0\r\n\r\n")
                return
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", int(target.rsplit(":")[1]))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            try:
                await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
            finally:
                upstream_writer.close()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _forward(self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The request to 127.0.0.1 in origin-form, and its reply back as it comes (an SSE stream too); the
        reply says ``Connection: close``: the client's next request comes on a new connection."""
        request_line, *fields = head.decode("latin-1").rstrip("\r\n").split("\r\n")
        method, target, version = request_line.split(" ")
        url = urllib.parse.urlsplit(target)
        length = 0
        kept = []
        for field in fields:
            name = field.partition(":")[0].strip().lower()
            if name == "content-length":
                length = int(field.partition(":")[2])
            if name == "transfer-encoding":  # httpx sends a JSON-RPC body with its length
                writer.write(b"HTTP/1.1 501 Not Implemented\r\ncontent-length: 0\r\n\r\n")
                return
            if name not in ("connection", "proxy-connection", "keep-alive", "proxy-authorization"):
                kept.append(field)
        body = await reader.readexactly(length)
        if body.startswith(b"{"):
            self.calls.append(str(json.loads(body).get("method")))
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", url.port)
        try:
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            upstream_writer.write(
                "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""]).encode("latin-1") + body
            )
            reply_line, *reply_fields = (await upstream_reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            kept_reply = [f for f in reply_fields if f and f.partition(":")[0].strip().lower() != "connection"]
            writer.write("\r\n".join([reply_line, *kept_reply, "Connection: close", "", ""]).encode("latin-1"))
            await _pipe(upstream_reader, writer)
        finally:
            upstream_writer.close()

    def stop(self) -> None:
        async def shut() -> None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    with contextlib.suppress(OSError):
        sink.write_eof()


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    config = energy_agent_config(tmp_path_factory.mktemp("proxied") / "state", 0.1)
    with AgentServer(dataclasses.replace(config, advertise=LAB_NAME)) as running:
        yield running


@pytest.fixture(scope="module")
def plain_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    """The same agent over plain HTTP."""
    config = energy_agent_config(tmp_path_factory.mktemp("plain") / "state", 0.1)
    with AgentServer(dataclasses.replace(config, advertise=LAB_NAME, a2a_tls=False)) as running:
        yield running


@pytest.fixture(scope="module")
def second_loopback_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    """The same agent over plain HTTP on 127.0.0.2: this host too, though not 127.0.0.1."""
    config = energy_agent_config(tmp_path_factory.mktemp("loopback") / "state", 0.1)
    with AgentServer(dataclasses.replace(config, host="127.0.0.2", a2a_tls=False)) as running:
        yield running


@pytest.fixture
def proxy() -> Iterator[TunnelProxy]:
    running = TunnelProxy()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def looked_up(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names this process resolved itself (LAB_NAME answered with 127.0.0.1); no proxy variable set."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    names: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        names.append(host.decode() if isinstance(host, bytes) else str(host))
        return real("127.0.0.1" if names[-1] == LAB_NAME else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return names


def _lab_url(agent: AgentServer) -> str:
    assert agent.a2a is not None
    return agent.a2a.url


def _certificate(agent: AgentServer) -> Path:
    assert agent.a2a is not None and agent.a2a.certificate is not None
    return agent.a2a.certificate


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "https_proxy", "ALL_PROXY"])
def test_the_client_reaches_an_agent_through_the_proxy_of_the_environment(
    agent: AgentServer, proxy: TunnelProxy, looked_up: list[str], monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, proxy.url)
    url = _lab_url(agent)
    assert url.startswith(f"https://{LAB_NAME}:")
    with A2AAgentClient.connect(url, "admin", "admin", timeout=10, trust=_certificate(agent)) as client:
        assert client.card["name"] == "IETF-TestLab-RAN-1.0"
        client.list_tasks()  # a JSON-RPC call, to the URL the card names
    assert proxy.asked and set(proxy.asked) == {f"CONNECT {LAB_NAME}:{agent.a2a.port if agent.a2a else 0}"}
    assert LAB_NAME not in looked_up  # the proxy resolved the name, never this process: nothing went direct


def test_a_host_in_no_proxy_and_this_host_are_reached_directly(
    agent: AgentServer, proxy: TunnelProxy, looked_up: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv("no_proxy", f"other.example,{LAB_NAME}")
    with A2AAgentClient.connect(_lab_url(agent), "admin", "admin", timeout=10, trust=_certificate(agent)) as client:
        client.list_tasks()
    assert LAB_NAME in looked_up
    monkeypatch.delenv("no_proxy")
    assert agent.a2a is not None
    loopback = f"https://127.0.0.1:{agent.a2a.port}"  # no NO_PROXY: 127.0.0.1 is this host, never proxied
    with A2AAgentClient.connect(loopback, "admin", "admin", timeout=10, trust=_certificate(agent)) as client:
        assert client.card["name"] == "IETF-TestLab-RAN-1.0"
    assert fetch_card(loopback, timeout=10, trust=_certificate(agent)).status == 200
    assert proxy.asked == []


def test_the_card_fetcher_takes_the_same_route(
    agent: AgentServer, proxy: TunnelProxy, looked_up: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    fetched = fetch_card(_lab_url(agent), timeout=10, trust=_certificate(agent))
    assert fetched.status == 200 and fetched.document["name"] == "IETF-TestLab-RAN-1.0"
    assert len(proxy.asked) == 1 and LAB_NAME not in looked_up


def test_the_agent_is_verified_through_the_proxy(
    agent: AgentServer, proxy: TunnelProxy, looked_up: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    with pytest.raises(ConnectError, match=r"(?i)certificate"):  # the system's CAs do not know the agent's
        A2AAgentClient.connect(_lab_url(agent), "admin", "admin", timeout=10)
    assert len(proxy.asked) == 1


def test_a_proxy_that_cannot_be_used_is_a_config_error(looked_up: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:9")  # no SOCKS package installed
    with pytest.raises(ConfigError, match=r"cannot use the proxy socks5://127\.0\.0\.1:9"):
        A2AAgentClient.connect(f"https://{LAB_NAME}:9", timeout=5)
    assert looked_up == []


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_a_plain_http_agent_is_reached_through_a_forwarding_proxy(
    plain_agent: AgentServer, proxy: TunnelProxy, looked_up: list[str], monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, proxy.url)
    url = _lab_url(plain_agent)
    assert url.startswith(f"http://{LAB_NAME}:")
    with A2AAgentClient.connect(url, "admin", "admin", timeout=10) as client:
        events = list(
            client.stream(scenario="energy_saving_adjust", payload={"cell_ids": ["CELL-1"], "action": "reduce"})
        )
        assert isinstance(events[0], Task)
        statuses = [e.status for e in events if isinstance(e, ConditionNotification)]
        assert statuses[-1] == TaskStatus.FINISHED  # the whole stream came through the proxy
        assert client.get_task(events[0].task_id).status == TaskStatus.FINISHED
        assert events[0].task_id in [t.task_id for t in client.list_tasks()]
    assert fetch_card(url, timeout=10).status == 200
    card = f"GET {url}/.well-known/agent-card.json"
    assert proxy.asked.count(card) == 2  # the client's and the card fetcher's
    assert all(asked == card or asked.startswith(f"POST {url}/") for asked in proxy.asked), proxy.asked
    assert proxy.calls == ["SendStreamingMessage", "GetTask", "ListTasks"]  # every call, in absolute-form
    assert LAB_NAME not in looked_up  # the proxy resolved the name, never this process: nothing went direct


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "[::1]", "::ffff:127.0.0.9", "localhost", "LOCALHOST",
     "localhost.", "LocalHost."],
)  # fmt: skip
def test_this_host_by_any_spelling(host: str) -> None:
    assert is_this_host(host)


@pytest.mark.parametrize(
    "host",
    ["128.0.0.1", "126.255.255.255", "10.0.0.1", "0.0.0.0", "::2", "::", "::ffff:10.0.0.1", "localhost.example",
     "mylocalhost", "localhost..", LAB_NAME, ""],
)  # fmt: skip
def test_not_this_host(host: str) -> None:
    assert not is_this_host(host)


def test_this_host_and_no_proxy_entries_go_direct(looked_up: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The routes alone (no socket): which transport each host reaches through the mounts. NO_PROXY's
    names, domains and addresses as httpx reads them; its ranges as curl does (httpx took 192.168.0.0/16
    for 192.168.0.0 alone, and an IPv6 range made the client fail to build)."""
    monkeypatch.setenv("ALL_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "skip.example, .mgmt.example,10.9.8.7,::2,LocalHost,192.168.0.0/16,fd00::/8")

    def answering(name: str) -> httpx.MockTransport:
        return httpx.MockTransport(lambda request: httpx.Response(200, text=name))

    direct = answering("direct")
    mounts = proxy_mounts(direct, lambda url: answering(f"through {url}"))
    with httpx.Client(transport=direct, mounts=mounts) as client:
        routes = {host: client.get(f"http://{host}:8080/").text for host in [
            "127.0.0.1", "127.8.9.10", "[::1]", "LOCALHOST.", "localhost", "skip.example", "a.mgmt.example",
            "10.9.8.7", "[::2]", "192.168.7.1", "[fd00::5]", LAB_NAME, "mgmt.example", "10.9.8.6", "128.0.0.1",
            "192.169.0.1", "[fe00::5]",
        ]}  # fmt: skip
    proxied = {LAB_NAME, "mgmt.example", "10.9.8.6", "128.0.0.1", "192.169.0.1", "[fe00::5]"}
    assert routes == {h: "through http://proxy.example:3128" if h in proxied else "direct" for h in routes}


@pytest.mark.parametrize("variable", ["ALL_PROXY", "HTTP_PROXY"])
def test_an_agent_on_another_loopback_address_is_reached_directly(
    second_loopback_agent: AgentServer, proxy: TunnelProxy, looked_up: list[str], monkeypatch: pytest.MonkeyPatch,
    variable: str,
) -> None:  # fmt: skip
    monkeypatch.setenv(variable, proxy.url)
    url = _lab_url(second_loopback_agent)
    assert url.startswith("http://127.0.0.2:")  # the proxy would send it to its own 127.0.0.1
    with A2AAgentClient.connect(url, "admin", "admin", timeout=10) as client:
        assert client.card["name"] == "IETF-TestLab-RAN-1.0"
        client.list_tasks()
    assert fetch_card(url, timeout=10).status == 200
    assert proxy.asked == []
