"""The proxy's plain-http transport (`textreact.serve.wire`) against a loopback server that
writes the bytes each test names: kept-alive connections reused and dropped when the server
closes them, each way a body's end is told, and the failures httpx2 names. Which upstreams
take it (`transport._direct`), and the one reading of `Retry-After` serve and the model
clients share."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx2 as httpx
import pytest

from textreact.models.openai_compat import retry_after
from textreact.serve.transport import _direct
from textreact.serve.wire import Wire

Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}"


class _Server:
    """A loopback server that answers each request head with `answer`; counts connections."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while (await reader.readuntil(b"\r\n\r\n")) and not writer.is_closing():
                await self.answer(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def _client(answer: Answer) -> AsyncIterator[tuple[_Server, httpx.AsyncClient, str]]:
    server = _Server(answer)
    listening = await asyncio.start_server(server._serve, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    client = httpx.AsyncClient(transport=Wire(keepalive=4), timeout=2)
    try:
        yield server, client, f"http://127.0.0.1:{port}/v1/x"
    finally:
        await client.aclose()
        listening.close()
        for writer in server.writers:  # each handler reads the end and returns
            writer.close()
        await asyncio.sleep(0.01)


def _run(test: Callable[[_Server, httpx.AsyncClient, str], Awaitable[None]], answer: Answer):
    async def main() -> None:
        async for server, client, url in _client(answer):
            await test(server, client, url)

    asyncio.run(main())


async def _ok(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(OK)
    await writer.drain()


def test_one_connection_serves_request_after_request() -> None:
    async def test(server: _Server, client: httpx.AsyncClient, url: str) -> None:
        for _ in range(3):
            reply = await client.get(url)
            assert reply.status_code == 200 and reply.json() == {}
        assert server.connections == 1

    _run(test, _ok)


def test_a_connection_the_server_closed_is_not_used_again() -> None:
    async def closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _ok(reader, writer)
        writer.close()  # no Connection: close said: the client finds out from the socket

    async def test(server: _Server, client: httpx.AsyncClient, url: str) -> None:
        for _ in range(2):
            assert (await client.get(url)).status_code == 200
            await asyncio.sleep(0.05)  # the close reaches the client
        assert server.connections == 2

    _run(test, closing)


def test_a_chunked_body_comes_in_its_pieces() -> None:
    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for piece in (b"data: 1\n\n", b"data: 2\n\n"):
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
            await asyncio.sleep(0.01)
        writer.write(b"0\r\n\r\n")

    async def test(server: _Server, client: httpx.AsyncClient, url: str) -> None:
        async with client.stream("GET", url) as reply:
            pieces = [piece async for piece in reply.aiter_bytes()]
        assert b"".join(pieces) == b"data: 1\n\ndata: 2\n\n" and len(pieces) == 2
        assert (await client.get(url)).text == b"".join(pieces).decode()
        assert server.connections == 1

    _run(test, chunked)


def test_a_body_without_a_length_ends_with_its_connection() -> None:
    async def until_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it")
        writer.close()

    async def test(server: _Server, client: httpx.AsyncClient, url: str) -> None:
        assert (await client.get(url)).text == "all of it"
        assert (await client.get(url)).text == "all of it"
        assert server.connections == 2

    _run(test, until_close)


def test_a_body_larger_than_what_is_held_unread_comes_whole() -> None:
    body = bytes(range(256)) * 8192  # 2 MiB: reading pauses and resumes on the way

    async def large(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    async def test(server: _Server, client: httpx.AsyncClient, url: str) -> None:
        async with client.stream("GET", url) as reply:
            pieces = []
            async for piece in reply.aiter_bytes():
                pieces.append(piece)
                await asyncio.sleep(0)  # a reader slower than the socket
        assert b"".join(pieces) == body
        assert (await client.get(url)).content == body and server.connections == 1

    _run(test, large)


def test_a_connection_the_server_wrote_to_unasked_is_not_used_again() -> None:
    async def chatty(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _ok(reader, writer)
        await asyncio.sleep(0.02)
        writer.write(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")

    async def test(server: _Server, client: httpx.AsyncClient, url: str) -> None:
        for _ in range(2):
            assert (await client.get(url)).status_code == 200
            await asyncio.sleep(0.1)  # the unasked 408 reaches the client
        assert server.connections == 2

    _run(test, chatty)


@pytest.mark.parametrize(
    ("sent", "failure"),
    [
        (b"", httpx.RemoteProtocolError),  # closed before any byte of a response
        (OK[:-1], httpx.RemoteProtocolError),  # closed one byte short of the body
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", httpx.ReadTimeout),  # then silence
        (b"NOT HTTP\r\n\r\n", httpx.RemoteProtocolError),
    ],
)
def test_a_response_that_breaks_off_is_the_failure_httpx2_names(sent, failure) -> None:
    async def breaking(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(sent)
        await writer.drain()
        if failure is httpx.ReadTimeout:
            await reader.read()  # silent until the client gives up and closes
        writer.close()

    async def test(server: _Server, client: httpx.AsyncClient, url: str) -> None:
        with pytest.raises(failure):
            await client.get(url, timeout=httpx.Timeout(2, read=0.2))

    _run(test, breaking)


def test_no_server_is_a_connect_error() -> None:
    async def main() -> None:
        async with httpx.AsyncClient(transport=Wire(keepalive=1)) as client:
            with pytest.raises(httpx.ConnectError):
                await client.get("http://127.0.0.1:9/v1/models")

    asyncio.run(main())


def test_only_plain_http_without_an_environment_proxy_takes_the_wire(monkeypatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert _direct("http://127.0.0.1:8080/v1") and _direct("HTTP://gpu-box:8000/v1")
    assert not _direct("https://api.example.com/v1")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    assert not _direct("http://gpu-box:8000/v1")
    monkeypatch.setenv("NO_PROXY", "gpu-box")
    assert _direct("http://gpu-box:8000/v1")


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "2"}, 2.0),
        # nonsense asks for nothing, and the other header is read
        ({"retry-after-ms": "nan", "retry-after": "3"}, 3.0),
        ({"retry-after-ms": "-5", "retry-after": "inf"}, None),
        ({"retry-after": "0"}, None),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, None),
        ({}, None),
    ],
)
def test_retry_after_reads_only_a_finite_wait_above_zero(headers, wait) -> None:
    assert retry_after(httpx.Headers(headers)) == wait
    assert retry_after(None) is None
