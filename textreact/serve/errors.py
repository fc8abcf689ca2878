"""Faults -> OpenAI error bodies: a malformed request is a 400 that names the field; an
upstream failure keeps its meaning (a timeout is 504, an overloaded or rate-limited upstream
503, anything else 502) and its own message, with every key blanked. What the client sent
wrong to the upstream (an unknown model, a refused key) keeps the upstream's 4xx status."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from textreact.redact import blank_data, blank_text, cut, public_url

#: Upstream statuses that are the client's to fix, passed on as they are.
_CLIENT_STATUSES = frozenset({400, 401, 403, 404, 409, 413, 422})
#: The shortest key blanked in messages: a shorter one is no secret worth the damage of
#: blanking it wherever it occurs (a key "k" would turn "bad key" into "bad ***ey").
MIN_SECRET_CHARS = 8
#: The longest upstream message shown, in characters (blanked first, then cut).
_MESSAGE_CHARS = 400


def secret_keys(keys: Sequence[str | None]) -> list[str]:
    """The keys long enough to be secrets, the ones blanked in what a client is shown."""
    return [key for key in keys if key and len(key) >= MIN_SECRET_CHARS]


class ServeError(Exception):
    """An HTTP error in OpenAI's shape; raised inside the server, answered by the app."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        """`{"error": {"message", "type", "param", "code"}}`, as OpenAI's API answers."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


def bad_request(message: str, param: str | None = None) -> ServeError:
    """A 400 for what the client sent: `message` says what was expected and what was found."""
    return ServeError(400, message, param=param)


def status_fault(response: Any, url: str, secrets: Sequence[str]) -> ServeError:
    """The error to answer for an upstream's error status (`response`, an httpx2 response
    whose body has been read), its own words kept with `secrets` blanked."""
    status = response.status_code
    try:
        data = json.loads(response.content)
    except ValueError:
        data = None
    body = data.get("error", data) if isinstance(data, dict) else data  # as the SDK unwraps it
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        message = body["message"]
    elif isinstance(body, (dict, list)):
        message = json.dumps(blank_data(body, secrets), ensure_ascii=False, default=str)
    else:
        message = f"Error code: {status} - {response.text}"
    message = cut(blank_text(message, secrets), _MESSAGE_CHARS)
    retry = response.headers.get("retry-after")
    headers = {"retry-after": retry} if retry else {}
    if status in _CLIENT_STATUSES:
        blanked = blank_data(body if isinstance(body, dict) else {}, secrets)
        return ServeError(
            status,
            message,
            type=str(blanked.get("type") or "invalid_request_error"),
            param=blanked.get("param") if isinstance(blanked.get("param"), str) else None,
            code=blanked.get("code") if isinstance(blanked.get("code"), str) else None,
            headers=headers,
        )
    shown = f"the upstream at {public_url(url)} answered HTTP {status}: {message}"
    if status in (429, 503):
        return ServeError(503, shown, type="upstream_unavailable", headers=headers)
    return ServeError(502, shown, type="upstream_error", headers=headers)


def connection_fault(exc: Exception, url: str, secrets: Sequence[str]) -> ServeError:
    """The error to answer when no response came: a timeout is 504, anything else 502."""
    import httpx2

    where = public_url(url)
    said = cut(blank_text(f"{type(exc).__name__}: {exc}".rstrip(": "), secrets), _MESSAGE_CHARS)
    if isinstance(exc, httpx2.TimeoutException):
        return ServeError(
            504, f"the upstream at {where} did not answer in time: {said}", type="timeout"
        )
    return ServeError(502, f"cannot reach the upstream at {where}: {said}", type="upstream_error")


def malformed_upstream(url: str, what: str) -> ServeError:
    """A 502 for an upstream reply that is not a chat completion."""
    return ServeError(
        502,
        f"the upstream at {public_url(url)} sent {what}; check that it speaks the OpenAI "
        "chat-completions format (its base URL usually ends in /v1)",
        type="upstream_error",
    )
