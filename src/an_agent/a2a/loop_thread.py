"""The a2a-sdk's asyncio client called from synchronous code: an event loop on a thread of its own.

`LoopThread` runs each coroutine on that loop and waits for it (at most a
timeout, or without bound for a stream's next event), cancels what is still
waiting when it is closed, and translates the SDK's and httpx's exceptions
into ours at this one boundary (`an_agent.a2a.sdk.from_a2a_error`). It knows
nothing of A2A requests, so it lives apart from `an_agent.a2a.client`, which
is the protocol on top of it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from an_agent.a2a.sdk import from_a2a_error
from an_agent.errors import AnAgentError, RequestTimeout, TransportError

T = TypeVar("T")


class LoopThread:
    """An event loop running on a daemon thread named ``name``, for a client of the agent at ``url``.

    ``url`` and ``timeout`` appear in the errors raised: `TransportError`
    once closed, `RequestTimeout` when a bounded call waited ``timeout`` + 5 s.
    """

    def __init__(self, url: str, timeout: float, name: str = "a2a-client") -> None:
        self.url = url
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self._lock = threading.Lock()
        self._pending: set[Future[Any]] = set()
        self._closed = False

    def run(self, work: Awaitable[T], bounded: bool = True) -> T:
        """Run ``work`` on the loop and wait for it: at most the timeout, or (a stream's next
        event, ``bounded`` False) until it comes or the loop is closed."""
        with self._lock:
            if self._closed:
                if asyncio.iscoroutine(work):
                    work.close()  # never scheduled
                raise TransportError(f"the A2A client of {self.url} was closed")
            future = asyncio.run_coroutine_threadsafe(_translated(work), self._loop)
            self._pending.add(future)
        try:
            return future.result(self.timeout + 5 if bounded else None)
        except FutureTimeout:
            future.cancel()
            raise RequestTimeout(f"the A2A agent at {self.url} did not answer in {self.timeout:g} s") from None
        except CancelledError:
            raise TransportError(f"the A2A client of {self.url} was closed") from None
        finally:
            with self._lock:
                self._pending.discard(future)

    def close(self, shutdown: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Cancel what waits (its callers get `TransportError`), run ``shutdown()`` on the loop, stop it; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pending, self._pending = list(self._pending), set()
        for future in pending:  # streams being read in other threads end with TransportError
            future.cancel()
        if self._loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(5)
        if not self._loop.is_running():
            self._loop.close()


async def _translated(work: Awaitable[T]) -> T:
    try:
        return await work
    except (AnAgentError, StopAsyncIteration):
        raise
    except Exception as exc:  # the SDK's and httpx's, translated at the one boundary
        translated = from_a2a_error(exc)
        if translated is exc:
            raise
        raise translated from None
