"""Where the model clients' parts live: the seam's types in `models.chat` (the package re-exports
them, and no module of the package imports the package itself), what the two SDK clients share
in `models.sdk` (one constructor, close and fault mapping), the fault library in
`models.faults`."""

from __future__ import annotations

import ast
import asyncio
import types
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai
import pytest

import textreact.models
from textreact.errors import ConfigError, ModelError
from textreact.models import anthropic, chat, faults, openai_compat
from textreact.models.sdk import PLACEHOLDER_API_KEY, AsyncSdkClient, SdkClient

MODELS = Path(textreact.models.__file__).parent


def test_the_package_reexports_the_seams_types() -> None:
    for name in ("AsyncChatModel", "ChatModel", "Message"):
        assert getattr(textreact.models, name) is getattr(chat, name)


def test_no_module_of_the_package_imports_a_name_from_the_package_itself() -> None:
    submodules = {path.stem for path in MODELS.glob("*.py")}
    for path in sorted(MODELS.glob("*.py")):
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "textreact.models":
                names = {alias.name for alias in node.names}
                assert names <= submodules, (path.name, names - submodules)


#: What the two SDK clients share, and so define only in `SdkClient` / `AsyncSdkClient` (each
#: client keeps its own `__init__`, for its own signature, and hands the settings to the base's).
SHARED = ("__repr__", "shown_url", "_fault", "close", "__enter__", "__exit__")
ASYNC_SHARED = ("aclose", "close", "__aenter__", "__aexit__")


@pytest.mark.parametrize(
    ("client", "base"),
    [
        (openai_compat.OpenAICompatModel, SdkClient),
        (anthropic.AnthropicModel, SdkClient),
        (openai_compat.AsyncOpenAICompatModel, AsyncSdkClient),
        (anthropic.AsyncAnthropicModel, AsyncSdkClient),
    ],
)
def test_both_sdk_clients_take_their_shared_parts_from_one_base(client, base) -> None:
    assert issubclass(client, base)
    shared = ASYNC_SHARED if base is AsyncSdkClient else SHARED
    assert not [name for name in shared if name in vars(client)]


def test_the_fault_helpers_live_in_their_own_module() -> None:
    for name in ("retry_after", "sdk_fault", "server_message", "shown"):
        assert getattr(faults, name).__module__ == "textreact.models.faults"
        assert name not in openai_compat.__all__ and name not in anthropic.__all__
    assert "_shown" not in vars(openai_compat) and "_shown" not in vars(anthropic)
    assert faults.shown("x" * 200) == repr("x" * 80)

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert faults.shown(Unprintable()) == repr("<Unprintable>")


class _Pool:
    """A stand-in SDK client: records how it was built, and whether it was closed."""

    def __init__(self, **options: Any) -> None:
        self.options, self.closed = options, False

    def close(self) -> None:
        self.closed = True


class _AsyncPool(_Pool):
    async def close(self) -> None:  # type: ignore[override]
        self.closed = True


#: A stand-in SDK module: its clients, and the openai SDK's exception classes (the two official
#: SDKs name them alike, which is what `sdk_fault` relies on).
ERRORS = ("APIConnectionError", "APIStatusError", "APITimeoutError", "AuthenticationError",
          "RateLimitError")  # fmt: skip
FAKE_SDK = types.SimpleNamespace(
    Pool=_Pool, AsyncPool=_AsyncPool, **{name: getattr(openai, name) for name in ERRORS}
)


class Client(SdkClient):
    _SDK_CLIENT = "Pool"
    _DEFAULT_BASE_URL = "https://api.example/v1"
    _KEY_VARIABLE = "EXAMPLE_API_KEY"

    def __init__(self, base_url: str | None = None, api_key: str | None = None, **options: Any):
        settings = {"max_tokens": 10, "timeout": 5.0, "max_retries": 1, **options}
        super().__init__(FAKE_SDK, "m", base_url, api_key, http_client=None, **settings)


class AsyncClient(AsyncSdkClient, Client):
    _SDK_CLIENT = "AsyncPool"


def test_the_shared_constructor_passes_every_setting_and_never_no_key() -> None:
    client = Client("http://user:secret@host:8080/v1/")
    assert client._client.options == {
        "api_key": PLACEHOLDER_API_KEY,
        "base_url": "http://user:secret@host:8080/v1",
        "timeout": 5.0,
        "max_retries": 1,
        "http_client": None,
    }
    assert client.shown_url == "http://***@host:8080/v1" and "secret" not in repr(client)
    assert Client(api_key="k")._client.options["api_key"] == "k"
    assert Client().base_url == "https://api.example/v1"


@pytest.mark.parametrize("bad", [{"timeout": 0}, {"max_retries": -1}, {"max_tokens": 0}])
def test_the_shared_constructor_refuses_what_no_server_honours(bad) -> None:
    with pytest.raises(ConfigError, match="timeout must be > 0"):
        Client(**bad)


def test_closing_is_shared_sync_and_async() -> None:
    with Client() as client:
        pass
    assert client._client.closed
    waiting = AsyncClient()
    with pytest.raises(TypeError, match=r"AsyncClient is closed with `await model\.aclose\(\)`"):
        waiting.close()

    async def closed() -> bool:
        async with AsyncClient() as client:
            pass
        return client._client.closed

    assert asyncio.run(closed())


def test_a_fault_names_the_clients_own_key_variable() -> None:
    request = httpx.Request("POST", "http://host/v1")
    refusal = openai.AuthenticationError(
        "no", response=httpx.Response(401, request=request), body=None
    )
    error = Client("http://host/v1")._fault(FAKE_SDK, refusal)
    assert isinstance(error, ModelError)
    assert "needs an API key (HTTP 401)" in str(error) and "EXAMPLE_API_KEY" in str(error)
