"""The chat path's faults -> Anthropic's error shape: `{"type": "error", "error": {"type",
"message"}}` with the same HTTP status and message, the type named after the status as
Anthropic names it (a 400 `invalid_request_error`, a 503 `overloaded_error`...); in a stream
that has begun, an `error` event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from textreact.serve.errors import ServeError
from textreact.serve.sse import named_event

_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
}
#: The status a chat stream's error event stands for, by its type (`textreact.serve.errors`).
_STATUSES: Final = {"timeout": 504, "upstream_unavailable": 503}


def error_type(status: int) -> str:
    return _TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")


def error_body(error: ServeError) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type(error.status), "message": error.message}}


def error_event(error: Mapping[str, Any]) -> bytes:
    """The `error` event for a chat stream's error event (`{"message", "type", ...}`)."""
    status = _STATUSES.get(str(error.get("type")), 502)
    message = str(error.get("message") or "the upstream failed mid-stream")
    return named_event(
        "error", {"type": "error", "error": {"type": error_type(status), "message": message}}
    )
