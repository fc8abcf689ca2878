"""What the two SDK clients (`openai_compat`, `anthropic`) share, in one place: the settings
checked at construction, the SDK's client built with the key and the base URL always passed (an
SDK given None reads its own environment variables), the base URL shown with its credentials
blanked, closing, an SDK fault mapped to a ModelError, and the reply's token counts read without
trusting the server."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Final, TypeVar

from textreact.errors import ConfigError, ModelError
from textreact.models.faults import sdk_fault
from textreact.redact import public_url
from textreact.steps import Usage

__all__ = ["PLACEHOLDER_API_KEY", "AsyncSdkClient", "SdkClient", "usage_of"]

#: Sent when no key is given: the SDK refuses to start without one, and local servers need none.
PLACEHOLDER_API_KEY = "textreact-no-key"
#: The largest token count believed: far past any context window; `1e30` is no count.
MAX_TOKENS: Final = 10**9

_Client = TypeVar("_Client", bound="SdkClient")


class SdkClient:
    """The base of a client on an official SDK (`sdk`, the imported module): `model`, `base_url`
    (credentials written into it kept, and blanked in `shown_url`), `max_tokens`, `timeout` and
    `max_retries`, checked once; the SDK's client in `_client`, given `http_client`; a context
    manager that closes its connection pool."""

    #: The wire format of native tool calls this client speaks (see NativeProtocol).
    tool_dialect: ClassVar[str]
    #: The SDK's client class.
    _SDK_CLIENT: ClassVar[str]
    #: Where requests go when no base URL is given.
    _DEFAULT_BASE_URL: ClassVar[str]
    #: The environment variable the CLI reads the key from, named in a missing key's message.
    _KEY_VARIABLE: ClassVar[str]
    #: How to start a server that cannot be reached, for the fault's message ("" for none).
    _START_HINT: ClassVar[str] = ""

    def __init__(
        self,
        sdk: Any,
        model: str,
        base_url: str | None,
        api_key: str | None,
        max_tokens: int | None,
        timeout: float,
        max_retries: int,
        http_client: Any,
    ) -> None:
        _check_settings(model, timeout=timeout, max_retries=max_retries, max_tokens=max_tokens)
        self.model = model
        self.base_url = (base_url or self._DEFAULT_BASE_URL).rstrip("/")
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self._api_key = api_key
        self._client = getattr(sdk, self._SDK_CLIENT)(
            api_key=self._api_key or PLACEHOLDER_API_KEY,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=http_client,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.shown_url!r})"

    @property
    def shown_url(self) -> str:
        """The base URL as messages show it: credentials written into it are blanked."""
        return public_url(self.base_url)

    def _fault(self, sdk: Any, exc: Exception) -> ModelError:
        """A fault of this client's SDK as a ModelError that says what to do."""
        return sdk_fault(
            sdk,
            exc,
            url=self.shown_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            api_key=self._api_key,
            key_variable=self._KEY_VARIABLE,
            start_hint=self._START_HINT,
        )

    def close(self) -> None:
        """Close the SDK's connection pool."""
        self._client.close()

    def __enter__(self: _Client) -> _Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_Async = TypeVar("_Async", bound="AsyncSdkClient")


class AsyncSdkClient(SdkClient):
    """The async form: the SDK's async client, closed with `await model.aclose()` (or `async
    with`); the sync `close` refuses, since it cannot close an async pool."""

    async def aclose(self) -> None:
        """Close the SDK's connection pool."""
        await self._client.close()

    def close(self) -> None:  # the sync form cannot close an async pool
        raise TypeError(f"{type(self).__name__} is closed with `await model.aclose()`")

    async def __aenter__(self: _Async) -> _Async:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _check_settings(
    model: object, *, timeout: float, max_retries: int, max_tokens: int | None
) -> None:
    """Refuse settings no server could honour, at construction, the same way for every client
    (`max_tokens=None` leaves the limit to the server, where the API allows that)."""
    if not isinstance(model, str) or not model:
        raise ConfigError(f"model must be a non-empty model name, got {model!r}")
    if timeout <= 0 or max_retries < 0 or (max_tokens is not None and max_tokens < 1):
        raise ConfigError(
            "timeout must be > 0, max_retries >= 0 and max_tokens >= 1, got "
            f"{timeout!r}, {max_retries!r} and {max_tokens!r}"
        )


def usage_of(reported: Any) -> Usage:
    """The reply's usage as Usage. Usage is a courtesy of the server, so a count that is not a
    whole number of tokens (a string, NaN, a negative number, 1e30) is dropped, read as 0
    like a count the server leaves out, and the reply it came with is kept."""
    counts = []
    for name in ("prompt_tokens", "completion_tokens"):
        value = (
            getattr(reported, name, None)
            if not isinstance(reported, Mapping)
            else reported.get(name)
        )
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        whole = isinstance(value, int) and not isinstance(value, bool)
        counts.append(value if whole and 0 <= value <= MAX_TOKENS else 0)
    return Usage(*counts)
