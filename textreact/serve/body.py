"""The request's bytes -> a JSON value every later stage can send on: read within a size and a
time limit (`read_body`), read as JSON, then
refused (a 400 naming the field) where it holds what no JSON encoder writes, so a request the
checks accept never fails later, while being sent upstream or answered.

Python's `json` reads `NaN`, `Infinity` and `-Infinity` (not JSON: the SDK's encoder refuses
them), and `\\ud800` escapes that pair with nothing (a lone surrogate: no UTF-8 encoder writes
one). Both are looked for only when the raw bytes hold what spells them, so an ordinary body
costs one byte search, not a walk."""

from __future__ import annotations

import asyncio
import json
import math
import re
from typing import TYPE_CHECKING, Any, Final

from textreact.serve.errors import ServeError, bad_request

if TYPE_CHECKING:
    from starlette.requests import Request

#: The largest request body read: a conversation past it is refused (413) before it is held.
MAX_BODY_BYTES: Final = 32 * 1024 * 1024
#: Bytes without which a body can hold neither a non-finite number nor a lone surrogate.
_MAYBE: Final = re.compile(rb"NaN|Infinity|\\[uU][dD][89a-fA-F]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def read_json(raw: bytes) -> Any:
    """The body as JSON; raises ServeError (400) when it is not JSON or cannot be sent on."""
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise bad_request(f"the request body is not JSON: {exc}") from None
    except RecursionError:
        raise bad_request("the request body is JSON nested too deeply to read") from None
    if _MAYBE.search(raw) is not None:
        _check_sendable(value)
    return value


def too_large(size: int) -> ServeError:
    """The 413 for a body of `size` bytes (or more) over MAX_BODY_BYTES. It ends the
    connection, whose rest of the body is never read as a request (`protocol.ServeProtocol`
    drops it, within a bound, so that the client reads this answer rather than a reset)."""
    return ServeError(
        413,
        f"the request body is {size} bytes or more; at most {MAX_BODY_BYTES} are read: "
        "summarise or drop the oldest turns, or cut long tool results",
        code="request_too_large",
        headers={"connection": "close"},
    )


def _check_sendable(value: Any) -> None:
    """A 400 for the first non-finite number or lone surrogate, naming where it is; walked
    without recursion, since `json` reads deeper nesting than a recursive walk may take."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise bad_request(
                f"{where or 'the body'} is {item}, which is not a JSON number: send a finite "
                "number (or leave the field out)",
                where or None,
            )
        if isinstance(item, str) and _SURROGATE.search(item):
            raise _surrogate(where, "holds")
        if isinstance(item, dict):
            for key, member in reversed(item.items()):
                if _SURROGATE.search(key):
                    raise _surrogate(where, "has a member name that holds")
                stack.append((member, f"{where}.{key}" if where else key))
        elif isinstance(item, list):
            stack.extend((member, f"{where}[{i}]") for i, member in reversed(list(enumerate(item))))


def _surrogate(where: str, what: str) -> Exception:
    return bad_request(
        f"{where or 'the body'} {what} a lone surrogate (a \\ud800-\\udfff escape that is not "
        "half of a pair), which no UTF-8 text can carry: send the character itself, or both "
        "halves of its pair",
        where or None,
    )


async def read_body(request: Request, timeout: float) -> bytes:
    """The request's body, at most MAX_BODY_BYTES (refused as soon as it says or shows it is
    larger, before it is held whole), sent within `timeout` seconds (else a 408: a client
    that drips its body must not hold a connection for ever); a client gone before it was
    sent is a 400 no one reads."""
    from starlette.requests import ClientDisconnect

    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large(int(declared))

    async def read() -> bytes:
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise too_large(size)
            chunks.append(chunk)
        return b"".join(chunks)

    try:
        return await asyncio.wait_for(read(), timeout)
    except ClientDisconnect:
        raise bad_request("the client disconnected before sending its request") from None
    except asyncio.TimeoutError:
        raise ServeError(
            408,
            f"the request body did not arrive within {timeout:g} s; send it whole at once",
            code="request_timeout",
            headers={"connection": "close"},
        ) from None
