"""The upstream model server, through `textreact.serve.transport` (a connection pool, and the
openai SDK's retries and backoff): plain text requests for the text protocol, whole or
streamed; requests passed through unchanged; what the upstream takes, found out once (a
grammar: once per upstream; working native calls: one probe per model) and remembered for the
life of the process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from textreact import templates
from textreact.models.sdk import usage_of
from textreact.redact import blank_text, public_url, userinfo_secrets
from textreact.serve import sse
from textreact.serve.errors import ServeError, malformed_upstream, secret_keys
from textreact.serve.transport import Transport
from textreact.steps import Completion, Usage

if TYPE_CHECKING:
    import httpx2 as httpx

    from textreact.constrain import ServerInfo
    from textreact.serve.config import ServeConfig

_PROBE_TOOL = "get_weather"
_PROBE_TOKENS = 200


def _read_failures() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeouts, other failures) that reading a response's body raises when the upstream
    stalls or breaks off after its headers (httpx2: the openai SDK's HTTP library)."""
    import httpx2

    return (httpx2.TimeoutException,), (httpx2.HTTPError, OSError)


def broken_off(
    exc: BaseException, url: str, timeout: float, secrets: Sequence[str | None] = ()
) -> ServeError:
    """The error for an upstream body that stopped coming (a stall past the timeout: 504) or
    broke off (a reset, a truncated body: 502) after the headers, `secrets` blanked in it: the
    one such error, whether the body was streamed, whole or passed through."""
    timeouts, _ = _read_failures()
    where = public_url(url)
    if isinstance(exc, timeouts):
        error = ServeError(
            504,
            f"the upstream at {where} stopped sending its reply: nothing came for {timeout:g} s "
            "(raise --timeout for a slow model)",
            type="timeout",
        )
    else:
        error = ServeError(
            502,
            f"the upstream at {where} broke off its reply: {type(exc).__name__}: "
            f"{str(exc) or 'the connection closed'}",
            type="upstream_error",
        )
    error.message = blank_text(error.message, secret_keys(secrets))
    return error


@dataclass(frozen=True)
class Delta:
    """One event of a streamed reply: new text, the finish reason, the usage (at the end), the
    model's name."""

    text: str = ""
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    #: The model the upstream names in the event, if it names one.
    model: str | None = None


@dataclass(frozen=True)
class Raw:
    """An upstream response passed through as it came: status, content type, body bytes,
    and what closes it (also when the client leaves before the body is sent)."""

    status: int
    content_type: str
    chunks: AsyncIterator[bytes]
    aclose: Callable[[], Awaitable[None]]


async def _once(content: bytes) -> AsyncIterator[bytes]:
    yield content


async def _nothing() -> None:
    return None


class Stream:
    """A streamed upstream reply as Deltas; `aclose` releases its connection whether or not
    it was read (the client may leave before the first event)."""

    def __init__(
        self,
        response: httpx.Response,
        url: str,
        secrets: Sequence[str | None] = (),
        *,
        timeout: float,
    ) -> None:
        self.response = response
        self.url = url
        self.secrets = list(secrets)
        self.timeout = timeout

    async def aclose(self) -> None:
        await self.response.aclose()

    async def __aiter__(self) -> AsyncIterator[Delta]:
        timeouts, failures = _read_failures()
        try:
            if "json" in self.response.headers.get("content-type", ""):
                # an upstream that ignored `stream: true` and answered whole
                completion, model = _completion(json.loads(await self.response.aread()), self.url)
                yield Delta(completion.text, completion.finish_reason, completion.usage, model)
                return
            async for line in sse.lines(self.response.aiter_bytes()):
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                yield _delta(json.loads(data), self.url)
        except ServeError as error:
            error.message = blank_text(error.message, self.secrets)
            raise
        except (*timeouts, *failures) as exc:
            raise broken_off(exc, self.url, self.timeout, self.secrets) from exc
        except ValueError as exc:
            raise malformed_upstream(self.url, f"a stream event that is not JSON ({exc})") from exc
        finally:
            await self.response.aclose()


class Upstream:
    """One upstream for the life of the app; every request may carry its own key."""

    def __init__(self, config: ServeConfig, *, http_client: httpx.AsyncClient | None = None):
        self.config = config
        self.url = config.upstream.rstrip("/")
        self.transport = Transport(
            self.url,
            key=config.upstream_api_key,
            timeout=config.timeout,
            max_retries=config.max_retries,
            client=http_client,
        )
        self._userinfo = userinfo_secrets(self.url)
        self._server: ServerInfo | None = None
        self._told = False
        self._telling = asyncio.Lock()
        self._native: dict[str, bool] = {}
        self._probing: dict[str, asyncio.Lock] = {}

    async def close(self) -> None:
        await self.transport.aclose()

    def _secrets(self, key: str | None) -> list[str]:
        """What is blanked in what the client is shown: the keys (`secret_keys`: long enough
        to be secrets) and the credentials of the upstream's URL, as sent."""
        return secret_keys([self.config.upstream_api_key, key, *self._userinfo])

    async def _post(self, body: Mapping[str, Any], key: str | None, *, whole: bool = False) -> Any:
        """The upstream's response to one chat request: its body not yet read, or with
        `whole` the body's bytes (read inside the retries and the timeout). Raises ServeError
        for every failure, after the retries. The server's key goes with it, else the
        client's."""
        secrets = self._secrets(key)
        response = await self.transport.request(
            "POST", "/chat/completions", key, secrets, body, whole=whole
        )
        return response.content if whole else response

    async def _send(
        self,
        body: dict[str, Any],
        key: str | None,
        grammar: Mapping[str, Any],
        *,
        whole: bool = False,
    ) -> Any:
        """`_post` with the grammar's fields; an upstream that refuses them is asked again
        without, and is sent no grammar again."""
        try:
            return await self._post({**body, **grammar}, key, whole=whole)
        except ServeError as error:
            if not grammar or error.status != 400 or "grammar" not in error.message.lower():
                raise
            self._server = None
            return await self._post(body, key, whole=whole)

    async def complete(
        self, body: dict[str, Any], key: str | None, grammar: Mapping[str, Any] = {}
    ) -> tuple[Completion, str | None]:
        """One whole text reply, and the model name the upstream gave."""
        content = await self._send({**body, "stream": False}, key, grammar, whole=True)
        try:
            data = json.loads(content)
        except ValueError:
            raise malformed_upstream(self.url, "a reply that is not JSON") from None
        return _completion(data, self.url)

    async def stream(
        self, body: dict[str, Any], key: str | None, grammar: Mapping[str, Any] = {}
    ) -> Stream:
        """A streamed text reply: the request is made before this returns (so a refusal is
        an HTTP error, not an event), then its events are read as the iterator is."""
        streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
        response = await self._send(streamed, key, grammar)
        return Stream(response, self.url, self._secrets(key), timeout=self.config.timeout)

    async def passthrough(self, body: dict[str, Any], key: str | None) -> Raw:
        """The request sent as the client wrote it, the response returned as it came (a
        whole body read at once; a stream as it comes, closed by `Raw.aclose` at the end; a
        stream that breaks off ends with an error event, as a text-protocol stream does)."""
        response = await self._post(body, key)
        kind = response.headers.get("content-type", "application/json")
        timeouts, failures = _read_failures()
        if not kind.startswith("text/event-stream"):
            try:
                content = await response.aread()
            except (*timeouts, *failures) as exc:
                raise broken_off(exc, self.url, self.config.timeout, self._secrets(key)) from exc
            finally:
                await response.aclose()
            return Raw(response.status_code, kind, _once(content), _nothing)

        async def chunks() -> AsyncIterator[bytes]:
            held = b""  # the start of an event not yet ended: never sent half
            try:
                async for chunk in response.aiter_bytes():
                    held += chunk
                    end = sse.events_end(held)
                    if end:
                        yield held[:end]
                        held = held[end:]
                if held:
                    yield held
            except (*timeouts, *failures) as exc:
                error = broken_off(exc, self.url, self.config.timeout, self._secrets(key))
                yield sse.event(error.body()) + sse.DONE
            finally:
                await response.aclose()

        return Raw(response.status_code, kind, chunks(), response.aclose)

    async def models(self, key: str | None) -> dict[str, Any]:
        """The upstream's `GET /models`, as it answered."""
        response = await self.transport.request("GET", "/models", key, self._secrets(key))
        try:
            return json.loads(response.content)
        except ValueError:
            raise malformed_upstream(self.url, "a model list that is not JSON") from None

    async def count(self, body: Mapping[str, Any], key: str | None) -> int:
        """How many tokens the upstream reads for `body` (its `messages`, and `tools` when they
        go natively), counted as llama.cpp's server counts a chat request's prompt: its chat
        template applied (`POST /apply-template`), the prompt tokenized with the special
        tokens (`POST /tokenize`), both at the server's root. An upstream without them is a
        404 that says so; nothing is generated."""
        secrets = self._secrets(key)
        try:
            templated = await self.transport.request(
                "POST", "/apply-template", key, secrets, body, root=True
            )
            prompt = json.loads(templated.content)["prompt"]
            tokenize = {"content": prompt, "add_special": True, "parse_special": True}
            tokenized = await self.transport.request(
                "POST", "/tokenize", key, secrets, tokenize, root=True
            )
            tokens = json.loads(tokenized.content)["tokens"]
        except ServeError as error:
            if error.status != 404:
                raise
            raise ServeError(
                404,
                f"the upstream at {public_url(self.url)} cannot count tokens: it has no POST "
                "/apply-template and /tokenize (llama.cpp's server has both); count them on "
                "the client's side, or serve a llama.cpp upstream",
                code="count_unavailable",
            ) from None
        except (ValueError, KeyError, TypeError):
            tokens = None
        if not isinstance(tokens, list):
            raise ServeError(
                502,
                f"the upstream at {public_url(self.url)} answered /apply-template or /tokenize "
                'with something other than llama.cpp\'s {"prompt": ...} and {"tokens": [...]}',
                type="upstream_error",
            )
        return len(tokens)

    async def server(self) -> ServerInfo | None:
        """What the upstream takes, told once: None when it takes no grammar (or constrained
        decoding is off)."""
        if self._told:
            return self._server
        async with self._telling:
            if not self._told:
                self._server = await asyncio.to_thread(self._tell)
                self._told = True
        return self._server

    def _tell(self) -> ServerInfo | None:
        from textreact.constrain import ServerInfo, detect_server

        mode = self.config.constrain
        if mode == "off":
            return None
        found = detect_server(self.url, api_key=self.config.upstream_api_key, timeout=5.0)
        if found is None and mode == "on":
            return ServerInfo("llama.cpp", True, evidence="--constrain on")
        return found if found is not None and found.grammar else None

    async def native(self, model: str, key: str | None) -> bool:
        """Whether `model`'s own tool calls work: `--upstream-native on` says so, `off` says
        not; `auto` asks the model once, with one tool and a question that needs it."""
        mode = self.config.native
        if mode != "auto":
            return mode == "on"
        if model in self._native:
            return self._native[model]
        lock = self._probing.setdefault(model, asyncio.Lock())
        async with lock:
            if model not in self._native:
                self._native[model] = await self._probe(model, key)
        return self._native[model]

    async def _probe(self, model: str, key: str | None) -> bool:
        lang = self.config.lang
        tool = {
            "type": "function",
            "function": {
                "name": _PROBE_TOOL,
                "description": templates.render("serve/probe_tool.md", lang, {}),
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        }
        question = templates.render("serve/probe.md", lang, {})
        body = {
            "model": model,
            "messages": [{"role": "user", "content": question}],
            "tools": [tool],
            "max_tokens": _PROBE_TOKENS,
            "temperature": 0,
        }
        try:
            content = await self._post(body, key, whole=True)
        except ServeError as error:
            if error.status in (400, 404, 422, 501):  # tools refused: no native calls
                return False
            raise
        try:
            data = json.loads(content)
        except ValueError:
            return False
        return _probe_called(data)


def _completion(data: Any, url: str) -> tuple[Completion, str | None]:
    """A chat.completion body as a Completion, and the model name it gives."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise malformed_upstream(url, "a reply without choices")
    message = choices[0].get("message") or {}
    text = message.get("content") if isinstance(message, dict) else None
    usage = usage_of(data.get("usage") if isinstance(data.get("usage"), dict) else {}) or Usage()
    reason = choices[0].get("finish_reason") or "stop"
    model = data.get("model") if isinstance(data.get("model"), str) else None
    return Completion(text if isinstance(text, str) else "", str(reason), usage), model


def _probe_called(data: Any) -> bool:
    """Whether a probe reply holds a real call of the probe tool with a city."""
    try:
        call = data["choices"][0]["message"]["tool_calls"][0]["function"]
        arguments = call["arguments"]
        arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
    except (KeyError, IndexError, TypeError, ValueError):
        return False
    city = arguments.get("city") if isinstance(arguments, dict) else None
    return call.get("name") == _PROBE_TOOL and isinstance(city, str) and bool(city.strip())


def _delta(data: Any, url: str) -> Delta:
    """One SSE data object of a chat stream as a Delta; an error event is a ServeError."""
    if not isinstance(data, dict):
        raise malformed_upstream(url, "a stream event that is not an object")
    if isinstance(data.get("error"), dict):
        message = str(data["error"].get("message", "the upstream failed mid-stream"))
        raise ServeError(502, f"the upstream failed mid-stream: {message}", type="upstream_error")
    usage = usage_of(data["usage"]) if isinstance(data.get("usage"), dict) else None
    choices = data.get("choices") or []
    choice = choices[0] if isinstance(choices, list) and choices else {}
    delta = choice.get("delta") if isinstance(choice, dict) else None
    text = delta.get("content") if isinstance(delta, dict) else None
    reason = choice.get("finish_reason") if isinstance(choice, dict) else None
    model = data.get("model")
    return Delta(
        text if isinstance(text, str) else "",
        reason if isinstance(reason, str) else None,
        usage or Usage(),
        model if isinstance(model, str) and model else None,
    )
