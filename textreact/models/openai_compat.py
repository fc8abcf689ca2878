"""Models: one completion from any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp's
server, DeepSeek) through the official `openai` SDK.

The SDK does the HTTP and the retries (exponential backoff, honouring `Retry-After`); this module
decides what to send and turns every fault into a ModelError that says what to do. It reads no
environment variables: the SDK would read OPENAI_API_KEY and OPENAI_BASE_URL when given None, so
both are always passed explicitly (the CLI reads the environment and passes them in). The SDK
still reads OPENAI_ORG_ID, OPENAI_PROJECT_ID and OPENAI_CUSTOM_HEADERS on its own."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from textreact.errors import ModelError, NativeToolsUnsupportedError
from textreact.models import check_client_settings
from textreact.steps import Completion, Usage

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion

    from textreact.models import Message

__all__ = ["NativeToolsUnsupportedError", "OpenAICompatModel", "sdk_fault", "server_message"]

#: Where requests go when no base URL is given.
OPENAI_BASE_URL = "https://api.openai.com/v1"
#: Sent when no key is given: the SDK refuses to start without one, and local servers need none.
PLACEHOLDER_API_KEY = "textreact-no-key"
#: The OpenAI API rejects more than four stop sequences.
MAX_STOP_SEQUENCES = 4

_UNKNOWN_MODEL = re.compile(
    r"model.*(not exist|not found|unknown|no such)", re.IGNORECASE | re.DOTALL
)


class OpenAICompatModel:
    """A chat model behind an OpenAI-compatible `/v1/chat/completions` endpoint.

    `base_url=None` means the OpenAI API; `api_key=None` sends a placeholder key, which local
    servers accept and a server that needs a key answers with 401 (reported as a missing key).
    A server that rejects `stop` is asked again without it, and is not sent `stop` again by this
    instance: the parser cuts any observation the model writes itself."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        temperature: float | None = 0.0,
        max_tokens: int | None = 1024,
        timeout: float = 120.0,
        max_retries: int = 2,
        http_client: Any = None,
        extra_body: Mapping[str, Any] | None = None,
        seed: int | None = None,
    ) -> None:
        check_client_settings(
            model, timeout=timeout, max_retries=max_retries, max_tokens=max_tokens
        )
        self.model = model
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self.extra_body = dict(extra_body or {})
        self.seed = seed
        #: False once the server has rejected `stop`; later requests leave it out.
        self.sends_stop = True
        self._api_key = api_key
        import openai  # deferred: the SDK takes a moment to import

        self._client = openai.OpenAI(
            api_key=api_key or PLACEHOLDER_API_KEY,
            base_url=self.base_url,
            timeout=timeout,
            max_retries=max_retries,
            http_client=http_client,
        )

    def __repr__(self) -> str:
        return f"OpenAICompatModel(model={self.model!r}, base_url={self.base_url!r})"

    def complete(self, messages: Sequence[Message], *, stop: Sequence[str] = ()) -> Completion:
        """One completion of the text protocol; raises ModelError when none can be had."""
        response = self.chat(messages, stop=stop)
        choice = response.choices[0]
        if choice.message.content is None:
            raise ModelError(
                f"the model server at {self.base_url} returned a message with no text (content "
                f"null, finish_reason {choice.finish_reason!r}) for model {self.model!r}; a "
                "reasoning model may have spent every token thinking: raise max_tokens"
            )
        text = _text(choice.message.content)
        if text is None:
            raise ModelError(
                f"the model server at {self.base_url} returned content that is not text "
                f"({str(choice.message.content)[:80]!r}) for model {self.model!r}"
            )
        return Completion(text, choice.finish_reason or "stop", usage_of(response.usage))

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        stop: Sequence[str] = (),
    ) -> ChatCompletion:
        """The SDK's ChatCompletion, for the native tool-calling loop; at least one choice.

        Raises NativeToolsUnsupportedError when the server refuses `tools`."""
        request: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
        options = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }
        request.update({k: v for k, v in options.items() if v is not None})
        if self.extra_body:
            request["extra_body"] = self.extra_body
        if tools:
            request["tools"] = [dict(t) for t in tools]
        if stop and self.sends_stop:
            request["stop"] = list(stop)[:MAX_STOP_SEQUENCES]
        import openai

        try:
            response = self._create(request)
        except (openai.OpenAIError, ValueError) as exc:
            raise self._error(exc, request) from exc
        return self._checked(response)

    def close(self) -> None:
        """Close the SDK's connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAICompatModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _create(self, request: dict[str, Any]) -> Any:
        import openai

        try:
            return self._client.chat.completions.create(**request)
        except openai.BadRequestError as exc:
            if "stop" not in request or not _names(exc, "stop"):
                raise
        self.sends_stop = False
        del request["stop"]
        return self._client.chat.completions.create(**request)

    def _checked(self, response: Any) -> ChatCompletion:
        if not isinstance(getattr(response, "choices", None), list):
            raise ModelError(
                f"the model server at {self.base_url} sent a reply that is not a chat completion "
                f"({str(response)[:80]!r}); check that the base URL is the OpenAI-compatible "
                "endpoint, usually ending in /v1"
            )
        if not response.choices:
            raise ModelError(
                f"the model server at {self.base_url} returned no choices for model "
                f"{self.model!r}; the server may have filtered the request or failed without "
                "saying why: check its log"
            )
        if getattr(response.choices[0], "message", None) is None:
            raise ModelError(
                f"the model server at {self.base_url} returned a choice without a message "
                f"({str(response.choices[0])[:80]!r}) for model {self.model!r}; check that the "
                "server speaks the OpenAI chat-completions format"
            )
        return response

    def _error(self, exc: Exception, request: Mapping[str, Any]) -> ModelError:
        import openai

        message = server_message(exc, self._api_key)
        if isinstance(exc, openai.BadRequestError) and "tools" in request and _names(exc, "tool"):
            return NativeToolsUnsupportedError(
                f"model {self.model!r} at {self.base_url} does not support native tool calling "
                f"(HTTP 400: {message}); use the text protocol"
            )
        if isinstance(exc, openai.NotFoundError) or (
            isinstance(exc, openai.BadRequestError) and _UNKNOWN_MODEL.search(message)
        ):
            return self._unknown_model(exc.status_code, message)
        return sdk_fault(
            openai,
            exc,
            url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            api_key=self._api_key,
            key_variable="OPENAI_API_KEY",
            start_hint="e.g. `ollama serve` for Ollama; ",
        )

    def _unknown_model(self, status: int, message: str) -> ModelError:
        offered = self._list_models()
        if offered and self.model not in offered:
            shown = ", ".join(offered[:20]) + (", ..." if len(offered) > 20 else "")
            return ModelError(
                f"the model server at {self.base_url} has no model {self.model!r} (HTTP "
                f"{status}); it offers: {shown}. Pass one of those as the model (--model)"
            )
        return ModelError(
            f"the model server at {self.base_url} answered HTTP {status} for model "
            f"{self.model!r} ({message}); check the model name (Ollama: `ollama pull NAME`) "
            "and that the base URL ends with /v1"
        )

    def _list_models(self) -> list[str]:
        import openai

        try:
            page = self._client.with_options(max_retries=0).models.list()
            return sorted(m.id for m in page.data)
        except (openai.OpenAIError, ValueError, TypeError, AttributeError):
            return []  # the listing is a courtesy; the 404 is reported either way


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
    names) as a ModelError that says what to do. Never shows the API key."""
    message = server_message(exc, api_key)
    tries = f"{max_retries + 1} tries"
    if isinstance(exc, sdk.APITimeoutError):
        return ModelError(
            f"the model server at {url} did not answer within {timeout:g} s ({tries}); "
            "a slow local model needs a larger timeout, or the server is overloaded"
        )
    if isinstance(exc, sdk.APIConnectionError):
        return ModelError(
            f"cannot reach the model server at {url} — is it running? {start_hint}"
            f"check the base URL and port ({message})"
        )
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


def _text(content: Any) -> str | None:
    """Message content as text: a string, or a list of text parts (some servers send parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text") if isinstance(p, dict) else getattr(p, "text", None) for p in content
        ]
        if all(isinstance(part, str) for part in parts):
            return "".join(parts)
    return None


def usage_of(reported: Any) -> Usage:
    """The SDK's usage object as Usage; counts a server leaves out are 0."""

    def count(name: str) -> int:
        return int(getattr(reported, name, 0) or 0)

    return Usage(count("prompt_tokens"), count("completion_tokens"))


def server_message(exc: Exception, api_key: str | None) -> str:
    """The server's own error message (or the exception's), with the API key blanked out."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]  # Anthropic's envelope; the openai SDK unwraps its own
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        message = body["message"]
    elif isinstance(body, (Mapping, list)):
        message = json.dumps(body)[:300]
    else:
        message = str(exc)
    return message.replace(api_key, "***") if api_key else message


def _names(exc: openai.APIStatusError, param: str) -> bool:
    """Whether a 400 is about `param` (its `param` field, or the word in its message)."""
    body = exc.body if isinstance(exc.body, Mapping) else {}
    if body.get("param") == param:
        return True
    text = body.get("message") if isinstance(body.get("message"), str) else str(exc)
    return re.search(rf"\b{param}s?\b", text, re.IGNORECASE) is not None
