"""An official SDK's faults as ModelErrors that say what to do: the fault library of the two
SDK clients (`openai_compat`, `anthropic`), which the proxy's upstream transport reads too
(`retry_after`). What a server sent is shown short and with every secret blanked: the API key,
credentials written into a URL, and any other secret the caller names."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from textreact.errors import ModelError
from textreact.redact import blank_data, blank_text, cut, public_url

__all__ = ["retry_after", "sdk_fault", "server_message", "shown"]


def shown(value: Any) -> str:
    """A short, safe rendering of what a server sent, for an error message."""
    try:
        text = str(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return repr(text[:80])


def sdk_fault(
    sdk: Any,
    exc: Exception,
    *,
    url: str,
    timeout: float,
    max_retries: int,
    api_key: str | None,
    key_variable: str,
    start_hint: str = "",
) -> ModelError:
    """A fault of an official SDK (`openai` or `anthropic`: their exception classes share
    names) as a ModelError that says what to do. Never shows the API key, nor credentials
    written into `url`; counts the tries that were really made (the SDK skips its retries when
    a server asks to wait longer than it will)."""
    url = public_url(url)
    message = server_message(exc, api_key)
    made = _tries_made(exc, max_retries)
    tries = f"{made} {'try' if made == 1 else 'tries'}"
    if isinstance(exc, sdk.APITimeoutError):
        return ModelError(
            f"the model server at {url} did not answer within {timeout:g} s ({tries}); "
            "a slow local model needs a larger timeout, or the server is overloaded"
        )
    if isinstance(exc, sdk.APIConnectionError):
        return _connection_fault(exc, url, tries, start_hint, api_key)
    if isinstance(exc, sdk.AuthenticationError):
        if api_key is None:
            return ModelError(
                f"the model server at {url} needs an API key (HTTP 401) and none was given: "
                f"pass api_key= (the textreact CLI reads --api-key or {key_variable})"
            )
        return ModelError(
            f"the model server at {url} rejected the API key that was given (HTTP 401: "
            f"{message}); check --api-key or {key_variable}"
        )
    wait = retry_after(getattr(getattr(exc, "response", None), "headers", None))
    if isinstance(exc, sdk.APIStatusError) and wait is not None and made <= max_retries:
        return ModelError(
            f"the model server at {url} refused with HTTP {exc.status_code} and asked to wait "
            f"{wait:g} s (Retry-After), longer than textreact waits between tries, so {tries} "
            f"made ({message}); wait that long and rerun"
        )
    if isinstance(exc, sdk.RateLimitError):
        return ModelError(
            f"the model server at {url} still refused with HTTP 429 Too Many Requests after "
            f"{tries} ({message}); wait and rerun, or allow more max_retries"
        )
    if isinstance(exc, sdk.APIStatusError):
        after = f" after {tries}" if exc.status_code >= 500 else ""
        return ModelError(
            f"the model server at {url} failed with HTTP {exc.status_code}{after}: {message}"
        )
    return ModelError(
        f"the model server at {url} sent a reply that is not valid JSON ({message}); check "
        "that the base URL is the API's endpoint (OpenAI-compatible ones usually end in /v1)"
    )


#: httpx's names for a connection that was never made, and for one lost after it was made.
_NOT_CONNECTED = {"ConnectError", "ConnectTimeout", "ProxyError", "UnsupportedProtocol"}
_DROPPED = {"ReadError", "WriteError", "RemoteProtocolError", "CloseError"}


def _connection_fault(
    exc: Exception, url: str, tries: str, start_hint: str, api_key: str | None
) -> ModelError:
    """Unreachable and dropped mid-reply call for different advice: the SDK reports both as a
    connection error, and its cause chain (httpx's exceptions, by name) tells them apart."""
    causes = []
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(causes) < 10:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    names = {type(c).__name__ for c in causes}
    detail = blank_text(str(causes[-1]) if causes else str(exc), [api_key]) or type(exc).__name__
    if names & _DROPPED and not names & _NOT_CONNECTED:
        return ModelError(
            f"the model server at {url} accepted the connection, then dropped it before the "
            f"reply was complete ({detail}; {tries}); it may have crashed or restarted: check "
            "its log, or a proxy between you and it"
        )
    return ModelError(
        f"cannot reach the model server at {url} — is it running? {start_hint}"
        f"check the base URL and port ({detail}; {tries})"
    )


def _tries_made(exc: Exception, max_retries: int) -> int:
    """How many requests were sent: the SDK numbers each retry in a request header; without
    it, the most that could have been made."""
    response = getattr(exc, "response", None)
    request = getattr(exc, "request", None)
    if request is None and response is not None:
        request = getattr(response, "request", None)
    try:
        return int(request.headers["x-stainless-retry-count"]) + 1
    except (AttributeError, KeyError, TypeError, ValueError, RuntimeError):
        return max_retries + 1


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """The wait in seconds that a response's headers ask for (`retry-after-ms` first, then
    `retry-after`); a value that is not a finite number above 0 (`nan`, `inf`, `-1`, `0`, a
    date) asks for nothing, and the other header is read. The proxy's transport and the
    model clients read it alike."""
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            value = float(headers.get(name)) / divisor  # None: a TypeError
        except (TypeError, ValueError):
            continue
        if math.isfinite(value) and value > 0:
            return value
    return None


def server_message(
    exc: Exception, api_key: str | None, *, secrets: Sequence[str] = (), limit: int = 400
) -> str:
    """The server's own error message (or the exception's), with the API key, any other
    `secrets` and credentials in URLs blanked, then cut to about `limit` characters (blanked
    first: a key cut in half would no longer be found)."""
    hidden = [api_key, *secrets]
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]  # Anthropic's envelope; the openai SDK unwraps its own
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        message = body["message"]
    elif isinstance(body, (Mapping, list)):
        message = json.dumps(blank_data(body, hidden), ensure_ascii=False, default=str)
    else:
        message = str(exc)
    return cut(blank_text(message, hidden), limit)
