"""HTTP clients whose timeout is a deadline: one request (connect, headers and body together)
ends by `timeout` seconds after it starts, whatever the server does.

httpx's timeouts bound each read, so a server that sends one byte every quarter second keeps a
2 s timeout waiting forever. `DeadlineTransport` wraps a transport and bounds the whole request:

- every timeout httpx passes down (connect, write, pool, read) is shrunk to the time left;
- the wait for the status line and headers runs in a helper thread that the caller waits for
  only until the deadline (a blocked socket read cannot be interrupted in Python), and the
  socket a late request connected is shut down so the helper ends too;
- the body is read in the caller's thread; each chunk checks the deadline, and a timer shuts the
  connection's socket down at the deadline so a read blocked mid-body returns.

A request past its deadline raises `httpx.ReadTimeout`, which the SDKs report (and retry) as a
timeout. `AsyncDeadlineTransport` does the same with cancellation scopes instead of threads.
The SDK passes these clients as `http_client=`; `deadline_client(timeout)` builds one.

A client built here uses the proxy it is given (`proxy=`), not the `HTTP(S)_PROXY` environment
variables: httpx reads those only when it builds its own transport."""

from __future__ import annotations

import contextlib
import contextvars
import math
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx2 as httpx  # the openai and anthropic SDKs' own HTTP library since their 3.x / 2.x

from textreact.errors import ConfigError

__all__ = [
    "AsyncDeadlineTransport",
    "DeadlineTransport",
    "async_deadline_client",
    "deadline_client",
    "httpx",
]

_PHASES = ("connect", "read", "write", "pool")


def _checked(timeout: float) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ConfigError(f"timeout must be a number of seconds, got {timeout!r}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
    return float(timeout)


def _shrink(request: httpx.Request, deadline: float) -> None:
    """Every per-operation timeout of `request` cut to the time left before `deadline`."""
    left = max(deadline - time.monotonic(), 0.001)
    given = request.extensions.get("timeout") or {}
    request.extensions["timeout"] = {
        phase: left if given.get(phase) is None else min(given[phase], left) for phase in _PHASES
    }


def _late(request: httpx.Request, timeout: float) -> httpx.ReadTimeout:
    return httpx.ReadTimeout(
        f"no complete response within {timeout:g} s (a deadline for the whole request)",
        request=request,
    )


#: How near the deadline a read timeout counts as the deadline's: each read's timeout was cut to
#: the time left, so such a timeout fires at the deadline, give or take the clock's grain.
_GRAIN = 0.05


def _past(deadline: float, exc: BaseException | None = None) -> bool:
    """Whether the deadline has come, or `exc` is a read timed out at it (httpx's own, racing the
    deadline's timer on a busy machine: the user's timeout either way, reported as one)."""
    now = time.monotonic()
    return now >= deadline or (isinstance(exc, httpx.TimeoutException) and now >= deadline - _GRAIN)


def _shut(stream: Any) -> None:
    """Shut an httpcore network stream's socket down, waking any read blocked on it."""
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed: nothing is blocked on it
            sock.shutdown(socket.SHUT_RDWR)


def _record_connects(request: httpx.Request, streams: list[Any]) -> None:
    """Note each network stream httpcore opens for `request` (its `trace` extension), keeping
    any trace callback already there."""
    before = request.extensions.get("trace")

    def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith((".connect_tcp.complete", ".start_tls.complete")):
            streams.append(info.get("return_value"))
        if before is not None:
            before(event, info)

    request.extensions["trace"] = trace


class DeadlineTransport(httpx.BaseTransport):
    """A transport that ends each request by `timeout` seconds after it starts (see the module
    docstring); `transport` does the HTTP (default: httpx's own)."""

    def __init__(self, timeout: float, transport: httpx.BaseTransport | None = None) -> None:
        self.timeout = _checked(timeout)
        self.transport = transport if transport is not None else httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.timeout
        _shrink(request, deadline)
        connected: list[Any] = []
        _record_connects(request, connected)
        response = _by_deadline(
            lambda: self.transport.handle_request(request),
            deadline,
            on_late=lambda: [_shut(s) for s in connected],
            late=lambda: _late(request, self.timeout),
        )
        _shrink(request, deadline)  # the body's reads start now, with what is left
        stream = response.extensions.get("network_stream")
        response.stream = _DeadlineStream(response.stream, deadline, stream, request, self.timeout)
        return response

    def close(self) -> None:
        self.transport.close()


def _by_deadline(
    send: Callable[[], httpx.Response],
    deadline: float,
    *,
    on_late: Callable[[], object],
    late: Callable[[], Exception],
) -> httpx.Response:
    """`send()` in a helper thread, waited for until `deadline`; a response that arrives after
    the caller has given up is closed by the helper, so its connection goes back to the pool."""
    lock = threading.Lock()
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["response"] = send()
        except BaseException as exc:  # handed to the caller, who re-raises it
            outcome["error"] = exc
        with lock:
            done.set()
            abandoned = outcome.get("abandoned", False)
        if abandoned and "response" in outcome:
            outcome["response"].close()

    helper = threading.Thread(
        target=contextvars.copy_context().run, args=(work,), name="textreact-request", daemon=True
    )
    helper.start()

    def abandon() -> bool:
        with lock:
            outcome["abandoned"] = not done.is_set()
        if outcome["abandoned"]:
            on_late()
        return outcome["abandoned"]

    try:
        done.wait(max(deadline - time.monotonic(), 0.0))
    except BaseException:  # KeyboardInterrupt while waiting: the helper is left to end
        abandon()
        raise
    error = outcome.get("error")
    if abandon() or (error is not None and _past(deadline, error)):
        raise late() from error
    if "error" in outcome:
        raise outcome["error"]
    return outcome["response"]


class _DeadlineStream(httpx.SyncByteStream):
    """A response body that ends with ReadTimeout at the deadline, however slowly it drips."""

    def __init__(
        self,
        inner: Any,
        deadline: float,
        network_stream: Any,
        request: httpx.Request,
        timeout: float,
    ) -> None:
        self._inner = inner
        self._deadline = deadline
        self._network_stream = network_stream
        self._request = request
        self._timeout = timeout

    def __iter__(self) -> Iterator[bytes]:
        left = self._deadline - time.monotonic()
        timer = threading.Timer(max(left, 0.0), _shut, args=(self._network_stream,))
        timer.daemon = True
        timer.start()
        try:
            for chunk in self._inner:
                if time.monotonic() >= self._deadline:
                    raise _late(self._request, self._timeout)
                yield chunk
        except httpx.TransportError as exc:
            if _past(self._deadline, exc):  # the timer's shutdown, or a read cut at the deadline
                raise _late(self._request, self._timeout) from exc
            raise
        finally:
            timer.cancel()

    def close(self) -> None:
        self._inner.close()


class AsyncDeadlineTransport(httpx.AsyncBaseTransport):
    """The async twin of DeadlineTransport: the same deadline, kept by cancellation."""

    def __init__(self, timeout: float, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.timeout = _checked(timeout)
        self.transport = transport if transport is not None else httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import anyio  # the SDKs' own async layer: asyncio and trio alike

        deadline = time.monotonic() + self.timeout
        _shrink(request, deadline)
        with anyio.move_on_after(max(deadline - time.monotonic(), 0.0)) as scope:
            try:
                response = await self.transport.handle_async_request(request)
            except httpx.TimeoutException as exc:
                if _past(deadline, exc):
                    raise _late(request, self.timeout) from exc
                raise
        if scope.cancelled_caught:
            raise _late(request, self.timeout)
        _shrink(request, deadline)
        response.stream = _AsyncDeadlineStream(response.stream, deadline, request, self.timeout)
        return response

    async def aclose(self) -> None:
        await self.transport.aclose()


class _AsyncDeadlineStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, deadline: float, request: httpx.Request, timeout: float):
        self._inner = inner
        self._deadline = deadline
        self._request = request
        self._timeout = timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import anyio

        chunks = self._inner.__aiter__()
        while True:
            with anyio.move_on_after(max(self._deadline - time.monotonic(), 0.0)) as scope:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    return
                except httpx.TimeoutException as exc:
                    if _past(self._deadline, exc):
                        raise _late(self._request, self._timeout) from exc
                    raise
            if scope.cancelled_caught:
                raise _late(self._request, self._timeout)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def deadline_client(
    timeout: float,
    *,
    transport: httpx.BaseTransport | None = None,
    proxy: str | None = None,
    **client_options: Any,
) -> httpx.Client:
    """An httpx Client (for an SDK's `http_client=`) whose requests each end within `timeout`
    seconds; `client_options` go to `httpx.Client` (e.g. `auth=`, `headers=`), `proxy` to the
    default transport. Redirects are followed, as the SDKs' own clients do."""
    inner = transport if transport is not None else httpx.HTTPTransport(proxy=proxy)
    client_options.setdefault("follow_redirects", True)
    return httpx.Client(
        transport=DeadlineTransport(timeout, inner), timeout=timeout, **client_options
    )


def async_deadline_client(
    timeout: float,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    proxy: str | None = None,
    **client_options: Any,
) -> httpx.AsyncClient:
    """The async twin of `deadline_client`, for `AsyncOpenAI(http_client=...)`."""
    inner = transport if transport is not None else httpx.AsyncHTTPTransport(proxy=proxy)
    client_options.setdefault("follow_redirects", True)
    return httpx.AsyncClient(
        transport=AsyncDeadlineTransport(timeout, inner), timeout=timeout, **client_options
    )
