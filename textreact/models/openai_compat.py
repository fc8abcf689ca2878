"""Models: one completion from any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp's
server, DeepSeek) through the official `openai` SDK.

The SDK does the HTTP and the retries (exponential backoff, honouring `Retry-After`); this module
decides what to send and reads the faults only this API has (a field the server refuses, a model
it does not serve); every other fault becomes a ModelError that says what to do through
`models.sdk`, which the Anthropic client shares, and `models.faults`. It reads no
environment variables: the SDK would read OPENAI_API_KEY and OPENAI_BASE_URL when given None, so
both are always passed explicitly (the CLI reads the environment and passes them in). The SDK
still reads OPENAI_ORG_ID, OPENAI_PROJECT_ID and OPENAI_CUSTOM_HEADERS on its own."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from textreact.errors import ConfigError, ModelError, NativeToolsUnsupportedError
from textreact.models.faults import server_message, shown
from textreact.models.sdk import AsyncSdkClient, SdkClient, usage_of
from textreact.steps import Completion, Decision, ToolCall

if TYPE_CHECKING:
    import openai

    from textreact.models.chat import Message
    from textreact.models.decision import Choice

__all__ = ["AsyncOpenAICompatModel", "NativeToolsUnsupportedError", "OpenAICompatModel"]

#: Where requests go when no base URL is given.
OPENAI_BASE_URL = "https://api.openai.com/v1"
#: The OpenAI API rejects more than four stop sequences.
MAX_STOP_SEQUENCES = 4
#: What a client does with an offered grammar (see OpenAICompatModel).
CONSTRAIN_MODES = ("auto", "on", "off")
_UNTOLD = object()

_UNKNOWN_MODEL = re.compile(
    r"model.*(not exist|not found|unknown|no such)", re.IGNORECASE | re.DOTALL
)


class OpenAICompatModel(SdkClient):
    """A chat model behind an OpenAI-compatible `/v1/chat/completions` endpoint.

    `base_url=None` means the OpenAI API; `api_key=None` sends a placeholder key, which local
    servers accept and a server that needs a key answers with 401 (reported as a missing key).
    A server that rejects `stop` is asked again without it, and is not sent `stop` again by this
    instance: the parser cuts any observation the model writes itself.

    `constrain`: what to do with the grammar the text protocol offers (`grammar=`). "auto"
    asks the server once what it is (llama.cpp, vLLM, SGLang take a grammar) and sends the
    grammar only where it is taken; "on" sends it in llama.cpp's field when the server cannot
    tell; "off" never sends one. A server that refuses the grammar is asked again without it,
    and not sent one again; `constrain_note` then says why replies are unconstrained.

    `timeout` bounds each read of the SDK's own HTTP client; for a deadline on each whole
    request pass `http_client=textreact.models.deadline.deadline_client(timeout)`, as the CLI
    does."""

    tool_dialect = "openai"
    _SDK_CLIENT = "OpenAI"
    _DEFAULT_BASE_URL = OPENAI_BASE_URL
    _KEY_VARIABLE = "OPENAI_API_KEY"
    _START_HINT = "e.g. `ollama serve` for Ollama; "

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
        constrain: str = "auto",
    ) -> None:
        if constrain not in CONSTRAIN_MODES:
            raise ConfigError(f"constrain must be one of {CONSTRAIN_MODES}, got {constrain!r}")
        import openai  # deferred: the SDK takes a moment to import

        super().__init__(
            openai, model, base_url, api_key, max_tokens, timeout, max_retries, http_client
        )
        self.temperature = temperature
        self.extra_body = dict(extra_body or {})
        self.seed = seed
        #: False once the server has rejected `stop`; later requests leave it out.
        self.sends_stop = True
        #: False once the server has sent a reply without log-probabilities, or refused them:
        #: a request's `Decision` is then left to sampling, and `decision_note` says why.
        self.scores_decision = True
        self.decision_note: str | None = None
        self.constrain = constrain
        #: Why replies are not constrained although a grammar was offered; None while they are
        #: (or before the first grammar).
        self.constrain_note: str | None = None
        #: What the server takes, once told (`detect_server`); _UNTOLD before the first grammar.
        self._server: Any = _UNTOLD

    def complete(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | None = None,
        grammar: str | None = None,
        decision: Decision | None = None,
    ) -> Completion:
        """One reply (text, native tool calls with `tools=`, constrained by `grammar` where
        the server takes one; its call-or-answer branch chosen by `decision` from the
        log-probabilities where the server sends them); raises ModelError when none can be
        had, NativeToolsUnsupportedError when the server refuses `tools`."""
        import openai

        if grammar is not None and self._server is _UNTOLD:
            self._tell_server()
        request = self.request(messages, stop=stop, tools=tools, tool_choice=tool_choice)
        fields = self._constrain(request, grammar)
        self._ask_logprobs(request, decision)
        try:
            try:
                response = self._client.chat.completions.create(**request)
            except openai.BadRequestError as exc:
                fields = self._fixed(exc, request, fields)
                response = self._client.chat.completions.create(**request)
        except (openai.OpenAIError, ValueError) as exc:
            raise self._error(exc, request, self._list_models) from exc
        choice = self._decided(response, fields, decision)
        if isinstance(choice, Completion):
            return choice
        return choice.join(
            self.complete(choice.messages(messages), stop=stop, grammar=choice.grammar)
        )

    def _ask_logprobs(self, request: dict[str, Any], decision: Decision | None) -> None:
        """Ask for the log-probabilities a `decision` is scored from, unless refused before."""
        if decision is not None and self.scores_decision:
            from textreact.models.decision import request_fields

            request.update(request_fields())

    def _decided(
        self, response: Any, fields: tuple[str, ...], decision: Decision | None
    ) -> Completion | Choice:
        """The reply, or (with a `decision` whose chosen branch the model did not sample) the
        choice that continues it; the branch is chosen from the response's log-probabilities,
        and a server that sends none is not asked for them again (`decision_note` says so)."""
        from textreact.models.decision import decide, tokens_of

        reply = dataclasses.replace(self.completion(response), constrained=bool(fields))
        if decision is None:
            return reply
        tokens = tokens_of(response) if self.scores_decision else ()
        sent = getattr(response.choices[0], "logprobs", None) is not None
        if not sent and self.scores_decision:  # none at all (an empty reply has an empty list)
            self.scores_decision = False
            self.decision_note = (
                f"the server at {self.shown_url} sent no log-probabilities; the call-or-answer "
                "choice is sampled (decision_bias needs a server that returns logprobs, such "
                "as llama.cpp, vLLM or SGLang)"
            )
        choice = decide(dataclasses.replace(reply, logprobs=tokens), decision)
        return choice.completion if choice.prefill is None else choice

    def _tell_server(self) -> None:
        """Find out once what the server is and whether it takes a grammar."""
        self._server = None
        if self.constrain == "off":
            return
        from textreact.constrain import ServerInfo, detect_server

        self._server = detect_server(
            self.base_url, api_key=self._api_key, timeout=min(self.timeout, 10.0)
        )
        if self._server is None and self.constrain == "on":
            self._server = ServerInfo("llama.cpp", True, evidence="constrain='on'")
        if self._server is None or not self._server.grammar:
            self.constrain_note = (
                f"the server at {self.shown_url} does not say it takes a grammar; replies are "
                "not constrained (constrain='on' sends llama.cpp's grammar field anyway)"
            )

    def _constrain(self, request: dict[str, Any], grammar: str | None) -> tuple[str, ...]:
        """Add the grammar's fields to the request where the server takes them; their names."""
        server = self._server
        if grammar is None or server is _UNTOLD or server is None or not server.grammar:
            return ()
        if "tools" in request:  # llama.cpp refuses a grammar beside tools=
            return ()
        fields = server.request_fields(grammar)
        request["extra_body"] = {**request.get("extra_body", {}), **fields}
        return tuple(fields)

    def _drop_grammar(self, exc: Exception, request: dict[str, Any], fields: Sequence[str]) -> bool:
        """Whether a 400 was about the grammar: then this and later requests go without it."""
        if not fields or not _names(exc, "grammar"):
            return False
        body = request["extra_body"]
        request["extra_body"] = {k: v for k, v in body.items() if k not in fields}
        if not request["extra_body"]:
            del request["extra_body"]
        self._server = None
        refusal = server_message(exc, self._api_key)
        self.constrain_note = (
            f"the server at {self.shown_url} refused the grammar ({refusal}); replies are not "
            "constrained"
        )
        return True

    def request(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | None = None,
    ) -> dict[str, Any]:
        """The SDK's keyword arguments for one request (without the grammar)."""
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
            if tool_choice is not None and tool_choice != "auto":
                request["tool_choice"] = _openai_choice(tool_choice)
        if stop and self.sends_stop:
            request["stop"] = list(stop)[:MAX_STOP_SEQUENCES]
        return request

    def takes_grammar(self) -> bool:
        """Whether the server takes the text protocol's grammar, found out once as the first
        constrained request would (`protocol="auto"` chooses the worked example by it)."""
        if self._server is _UNTOLD:
            self._tell_server()
        return self._server is not None and bool(self._server.grammar)

    def chat_template(self) -> str | None:
        """The chat template the server applies for this model, where it says (llama.cpp's
        `GET /props`); None where it does not. `protocol="own"` reads the model's tool format
        from it."""
        from textreact.constrain.servers import chat_template

        return chat_template(self.base_url, api_key=self._api_key, timeout=min(self.timeout, 10))

    def _fixed(
        self, exc: Exception, request: dict[str, Any], fields: tuple[str, ...]
    ) -> tuple[str, ...]:
        """After a 400: the request fixed for one more try (the grammar or `stop` left out),
        and the grammar fields still in it; the error itself when neither was the cause."""
        if self._drop_grammar(exc, request, fields):
            return ()
        if self._drop_stop(exc, request) or self._drop_logprobs(exc, request):
            return fields
        raise exc

    def _drop_logprobs(self, exc: Exception, request: dict[str, Any]) -> bool:
        """Whether a 400 was about log-probabilities: then no request asks for them again."""
        if "logprobs" not in request or not (
            _names(exc, "logprobs") or _names(exc, "top_logprobs")
        ):
            return False
        del request["logprobs"], request["top_logprobs"]
        self.scores_decision = False
        self.decision_note = (
            f"the server at {self.shown_url} refused log-probabilities "
            f"({server_message(exc, self._api_key)}); the call-or-answer choice is sampled"
        )
        return True

    def _drop_stop(self, exc: Exception, request: dict[str, Any]) -> bool:
        """Whether a 400 was about `stop`: then it is left out of this and later requests."""
        if "stop" not in request or not _names(exc, "stop"):
            return False
        self.sends_stop = False
        del request["stop"]
        return True

    def completion(self, response: Any) -> Completion:
        """The SDK's reply as a Completion, its shape checked: whatever a server sends, the
        loop gets a Completion or a ModelError that says what was wrong."""
        choice = self._checked(response).choices[0]
        message = choice.message
        content = getattr(message, "content", None)
        calls = _tool_calls(getattr(message, "tool_calls", None))
        reason = choice.finish_reason
        if calls is None or (reason is not None and not isinstance(reason, str)):
            raise self._malformed(
                "a message whose tool calls or finish reason are malformed", choice
            )
        if content is None and not calls and reason == "length":
            raise ModelError(
                f"the model server at {self.shown_url} returned a message with no text (content "
                f"null, finish_reason 'length') for model {self.model!r}; a reasoning model may "
                "have spent every token thinking: raise max_tokens"
            )
        if content is None and not calls and reason != "content_filter":
            raise ModelError(
                f"the model server at {self.shown_url} returned a message with no text and no "
                f"tool call (content null, finish_reason {reason!r}) for model {self.model!r}: "
                "the model produced nothing at all; check the server's log and the model's chat "
                "template"
            )
        text = "" if content is None else _text(content)
        if text is None:
            raise self._malformed("content that is not text", content)
        usage = usage_of(getattr(response, "usage", None))
        return Completion(text, reason or "stop", usage, calls)

    def _malformed(self, what: str, value: Any) -> ModelError:
        return ModelError(
            f"the model server at {self.shown_url} sent {what} ({shown(value)}) for model "
            f"{self.model!r}; check that the server speaks the OpenAI chat-completions format"
        )

    def _checked(self, response: Any) -> Any:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            raise ModelError(
                f"the model server at {self.shown_url} sent a reply that is not a chat completion "
                f"({shown(response)}); check that the base URL is the OpenAI-compatible "
                "endpoint, usually ending in /v1"
            )
        if not choices:
            raise ModelError(
                f"the model server at {self.shown_url} returned no choices for model "
                f"{self.model!r}; the server may have filtered the request or failed without "
                "saying why: check its log"
            )
        message = getattr(choices[0], "message", None)
        if message is None or isinstance(message, (str, bytes, list, int, float)):
            raise self._malformed("a choice without a message object", choices[0])
        return response

    def _error(
        self, exc: Exception, request: Mapping[str, Any], offered: Callable[[], list[str]]
    ) -> ModelError:
        import openai

        message = server_message(exc, self._api_key)
        if isinstance(exc, openai.BadRequestError) and "tools" in request and _names(exc, "tool"):
            return NativeToolsUnsupportedError(
                f"native tool calling unsupported: model {self.model!r} at {self.shown_url} "
                f"refused tools= (HTTP 400: {message}); use the text protocol"
            )
        if isinstance(exc, openai.NotFoundError) or (
            isinstance(exc, openai.BadRequestError) and _UNKNOWN_MODEL.search(message)
        ):
            return self._unknown_model(exc.status_code, message, offered())
        return self._fault(openai, exc)

    def _unknown_model(self, status: int, message: str, offered: list[str]) -> ModelError:
        if offered and self.model not in offered:
            shown = ", ".join(offered[:20]) + (", ..." if len(offered) > 20 else "")
            return ModelError(
                f"the model server at {self.shown_url} has no model {self.model!r} (HTTP "
                f"{status}); it offers: {shown}. Pass one of those as the model (--model)"
            )
        return ModelError(
            f"the model server at {self.shown_url} answered HTTP {status} for model "
            f"{self.model!r} ({message}); check the model name (Ollama: `ollama pull NAME`) "
            "and that the base URL ends with /v1"
        )

    def _list_models(self) -> list[str]:
        import openai

        try:
            return _model_ids(self._client.with_options(max_retries=0).models.list())
        except (openai.OpenAIError, ValueError, TypeError, AttributeError):
            return []  # the listing is a courtesy; the 404 is reported either way


class AsyncOpenAICompatModel(AsyncSdkClient, OpenAICompatModel):
    """`OpenAICompatModel` on the SDK's `AsyncOpenAI`, for `Agent.arun` / `Agent.aiter`: the
    same arguments, requests, checks and errors; `complete` is a coroutine. `http_client`,
    when given, must be an `httpx.AsyncClient`."""

    _SDK_CLIENT = "AsyncOpenAI"

    async def complete(  # type: ignore[override]
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | None = None,
        grammar: str | None = None,
        decision: Decision | None = None,
    ) -> Completion:
        """One reply, as `OpenAICompatModel.complete`, without blocking the event loop."""
        import openai

        if grammar is not None and self._server is _UNTOLD:
            await asyncio.to_thread(self._tell_server)
        request = self.request(messages, stop=stop, tools=tools, tool_choice=tool_choice)
        fields = self._constrain(request, grammar)
        self._ask_logprobs(request, decision)
        try:
            try:
                response = await self._client.chat.completions.create(**request)
            except openai.BadRequestError as exc:
                fields = self._fixed(exc, request, fields)
                response = await self._client.chat.completions.create(**request)
        except (openai.OpenAIError, ValueError) as exc:
            offered = await self._alist_models()
            raise self._error(exc, request, lambda: offered) from exc
        choice = self._decided(response, fields, decision)
        if isinstance(choice, Completion):
            return choice
        continued = await self.complete(
            choice.messages(messages), stop=stop, grammar=choice.grammar
        )
        return choice.join(continued)

    async def _alist_models(self) -> list[str]:
        import openai

        try:
            return _model_ids(await self._client.with_options(max_retries=0).models.list())
        except (openai.OpenAIError, ValueError, TypeError, AttributeError):
            return []


def _openai_choice(choice: str) -> str | dict[str, Any]:
    """A tool choice in OpenAI's wire form: the three words as they are, a tool's name as
    `{"type": "function", "function": {"name": ...}}`."""
    if choice in ("auto", "required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _model_ids(page: Any) -> list[str]:
    return sorted(m.id for m in page.data)


def _tool_calls(calls: Any) -> tuple[ToolCall, ...] | None:
    """The message's tool calls as records (a call without an id gets one, as some servers
    omit it; arguments sent as an object are kept as its JSON); None when malformed."""
    if calls is None:
        return ()
    if not isinstance(calls, list):
        return None
    out = []
    for i, call in enumerate(calls):
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        arguments = getattr(function, "arguments", None)
        if isinstance(arguments, (dict, list)):
            arguments = json.dumps(arguments, ensure_ascii=False)
        if not isinstance(name, str) or not isinstance(arguments, (str, type(None))):
            return None
        call_id = getattr(call, "id", None)
        out.append(
            ToolCall(
                call_id if isinstance(call_id, str) and call_id else f"call_{i}",
                name,
                arguments or "",
            )
        )
    return tuple(out)


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


def _names(exc: openai.APIStatusError, param: str) -> bool:
    """Whether a 400 is about `param` (its `param` field, or the word in its message)."""
    body = exc.body if isinstance(exc.body, Mapping) else {}
    if body.get("param") == param:
        return True
    text = body.get("message") if isinstance(body.get("message"), str) else str(exc)
    return re.search(rf"\b{param}s?\b", text, re.IGNORECASE) is not None
