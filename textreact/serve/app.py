"""The ASGI app: `POST /v1/chat/completions`, `POST /v1/messages` (Anthropic's Messages API,
answered through the chat path: `textreact.serve.messages`), `POST /v1/responses` (OpenAI's
Responses API, the same way: `textreact.serve.responses`), `GET /v1/models`, `GET /health`.

Stateless: every request carries its whole conversation, so any number of processes
(`--workers N`) or replicas behind a load balancer serve the same clients. A request with
`tools` is one model turn of the text protocol (see `textreact.serve.turn`), unless the
model's own tool calls work and `--upstream-native` allows them. With MCP servers (`--mcp`),
a request without tools is answered by textreact's own loop with their tools
(`textreact.serve.agentic`); any other request is passed through unchanged, streamed or
not."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final, TypeVar

from textreact import jsonline
from textreact.errors import ConfigError, MissingExtraError
from textreact.models import Message
from textreact.redact import public_url
from textreact.serve import agentic, messages, responses, stream
from textreact.serve.body import read_body, read_json
from textreact.serve.config import INSTALL_HINT, ServeConfig
from textreact.serve.connections import ClientGone, while_connected
from textreact.serve.convert import earlier_calls, text_messages
from textreact.serve.errors import ServeError, bad_request
from textreact.serve.guard import Guard
from textreact.serve.mcp_tools import ServerTools
from textreact.serve.reply import Chunks, completion_body
from textreact.serve.request import ChatRequest, parse_request
from textreact.serve.stops import Stops, stops_for
from textreact.serve.turn import Judge, Problem
from textreact.serve.upstream import Stream, Upstream
from textreact.steps import Usage
from textreact.tools import Tool

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from textreact.constrain import ServerInfo

#: A request body larger than this is read and rendered in a worker thread, off the loop.
OFF_LOOP_BYTES: Final = 256 * 1024
T = TypeVar("T")


def create_app(
    config: ServeConfig, *, http_client: Any = None, mcp: ServerTools | None = None
) -> Starlette:
    """The proxy for `config.upstream`; `http_client` (an httpx2.AsyncClient) replaces the
    one it makes to talk to the upstream (`textreact.serve.transport`). `mcp`: MCP servers
    whose tools answer requests that bring none; opened at startup unless open already (the
    CLI opens them first, so that a server that cannot start is a one-line error), closed at
    shutdown."""
    try:
        from starlette.applications import Starlette
        from starlette.middleware import Middleware
        from starlette.routing import Route
    except ImportError as exc:
        raise MissingExtraError(f"textreact serve needs Starlette ({exc}): {INSTALL_HINT}") from exc
    proxy = _Proxy(config, mcp)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if mcp is not None:
            await asyncio.to_thread(mcp.open)
        proxy.upstream = Upstream(config, http_client=http_client)
        try:
            yield
        finally:
            await proxy.upstream.close()
            if mcp is not None:
                await asyncio.to_thread(mcp.close)

    routes = [
        Route("/v1/chat/completions", proxy.chat, methods=["POST"]),
        Route("/chat/completions", proxy.chat, methods=["POST"]),
        Route("/v1/messages", proxy.messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", proxy.count_tokens, methods=["POST"]),
        Route("/v1/responses", proxy.responses, methods=["POST"]),
        Route("/responses", proxy.responses, methods=["POST"]),
        Route("/v1/responses/{id:path}", proxy.not_kept, methods=["GET", "POST", "DELETE"]),
        Route("/v1/models", proxy.models, methods=["GET"]),
        Route("/models", proxy.models, methods=["GET"]),
        Route("/v1/models/{model:path}", proxy.model, methods=["GET"]),
        Route("/models/{model:path}", proxy.model, methods=["GET"]),
        Route("/health", proxy.health, methods=["GET"]),
    ]
    handlers = {404: _not_found, 405: _not_allowed, Exception: _failed}
    guard = Middleware(Guard, hosts=config.allowed_hosts, answer=_error)
    return Starlette(
        routes=routes, lifespan=lifespan, exception_handlers=handlers, middleware=[guard]
    )


class _Proxy:
    def __init__(self, config: ServeConfig, mcp: ServerTools | None = None) -> None:
        self.config = config
        self.mcp = mcp
        self.upstream: Upstream | None = None

    async def health(self, request: Request) -> Response:
        health: dict[str, Any] = {"status": "ok", "upstream": public_url(self.config.upstream)}
        if self.mcp is not None:  # as many as the last request (or the start) was offered
            health["mcp_tools"] = self.mcp.count
        return _json(health)

    async def models(self, request: Request) -> Response:
        try:
            return _json(await self._listed(_key(request)))
        except ServeError as error:
            return _error(error)

    async def model(self, request: Request) -> Response:
        """`GET /v1/models/{id}`: the model as the upstream lists it, or the `--model` served."""
        wanted = request.path_params["model"]
        try:
            listed = await self._listed(_key(request))
        except ServeError as error:
            return _error(error)
        data = listed.get("data") if isinstance(listed, dict) else None
        for model in data if isinstance(data, list) else ():
            if isinstance(model, dict) and model.get("id") == wanted:
                return _json(model)
        if wanted == self.config.model:
            return _json(_served(wanted))
        served = self.config.model or "one of GET /v1/models"
        return _error(
            ServeError(
                404,
                f"the model {wanted!r} does not exist here; ask for {served}",
                param="model",
                code="model_not_found",
            )
        )

    async def _listed(self, key: str | None) -> Any:
        """The upstream's model list; an upstream without the endpoint lists `--model`."""
        try:
            return await self._upstream.models(key)
        except ServeError as error:
            if error.status == 404 and self.config.model:
                return {"object": "list", "data": [_served(self.config.model)]}
            raise

    @property
    def _upstream(self) -> Upstream:
        if self.upstream is None:
            raise RuntimeError("the app was not started: run it with lifespan events on")
        return self.upstream

    async def chat(self, request: Request) -> Response:
        return await self._serve(request, self._answer, _error)

    async def messages(self, request: Request) -> Response:
        """`POST /v1/messages`: an Anthropic Messages request made a chat request, answered by
        the chat path, the answer made a message (`textreact.serve.messages`)."""
        return await self._serve(request, self._message, _anthropic_error)

    async def count_tokens(self, request: Request) -> Response:
        """`POST /v1/messages/count_tokens`: the tokens of the prompt that `POST /v1/messages`
        would send first, counted by the upstream (`Upstream.count`)."""
        return await self._serve(request, self._count, _anthropic_error)

    async def responses(self, request: Request) -> Response:
        """`POST /v1/responses`: an OpenAI Responses request made a chat request, answered by
        the chat path, the answer made a response (`textreact.serve.responses`)."""
        return await self._serve(request, self._response, _error)

    async def not_kept(self, request: Request) -> Response:
        """A stored response asked for by id: none is kept (`responses.not_kept`)."""
        return _error(responses.not_kept(f"{request.method} {request.url.path}"))

    async def _serve(
        self,
        request: Request,
        answer: Callable[[Request, bytes], Awaitable[Response]],
        error: Callable[[ServeError], Response],
    ) -> Response:
        """`answer`'s response to the request once its body is read, a fault as `error` says
        it in the client's API."""
        try:
            raw = await read_body(request, self.config.client_timeout)
            return await while_connected(request, answer(request, raw))
        except ServeError as fault:
            return error(fault)
        except ClientGone:
            from starlette.responses import Response

            return Response(status_code=499)  # no one reads it: the client has gone

    async def _answer(self, request: Request, raw: bytes) -> Response:
        """The response to one chat request, once its body is read."""
        heavy = len(raw) > OFF_LOOP_BYTES
        call = await _run(heavy, self._read, raw)
        return await self.respond(call, _key(request), heavy=heavy)

    async def _message(self, request: Request, raw: bytes) -> Response:
        heavy = len(raw) > OFF_LOOP_BYTES
        asked = await _run(heavy, messages.read, raw, self.config)
        answer = await self.respond(asked.call, _key(request), heavy=heavy)
        return await _translated(answer, asked.message, asked.events)

    async def _response(self, request: Request, raw: bytes) -> Response:
        heavy = len(raw) > OFF_LOOP_BYTES
        asked = await _run(heavy, responses.read, raw, self.config)
        try:
            answer = await self.respond(asked.call, _key(request), heavy=heavy)
        except ServeError as error:
            raise asked.renamed(error) from None
        if answer.status_code != 200:  # the upstream's refusal, passed through: OpenAI's shape
            return answer
        return await _translated(answer, asked.whole, asked.events)

    async def _count(self, request: Request, raw: bytes) -> Response:
        heavy = len(raw) > OFF_LOOP_BYTES
        asked = await _run(heavy, messages.read, raw, self.config, True)
        key = _key(request)
        if await self._way(asked.call, key) == "text":
            prompt = {"messages": (await _run(heavy, self._turn, asked.call, None)).messages}
        else:  # passed through (or to the loop under --mcp): as the client's request holds it
            prompt = {k: v for k, v in asked.call.body.items() if k in ("messages", "tools")}
        return _json({"input_tokens": await self._upstream.count(prompt, key)})

    async def _way(self, call: ChatRequest, key: str | None) -> str:
        """How a checked request is answered: "server" (textreact's loop with the MCP
        servers' tools), "passthrough" (the upstream as it is) or "text" (one text-protocol
        turn)."""
        text = call.tools or call.tool_history  # a history of calls needs the protocol too
        if not text and self.mcp is not None and agentic.answers(call):
            return "server"
        if not text or await self._upstream.native(call.model, key):
            return "passthrough"
        return "text"

    async def respond(self, call: ChatRequest, key: str | None, *, heavy: bool = False) -> Response:
        """The chat path's response to one checked request, the entry of every client API:
        another API's adapter makes its request a ChatRequest, and the response (a
        `chat.completion`, or its chunks' stream) its own (`_translated`). `heavy`: render in
        a worker thread (a large request)."""
        way = await self._way(call, key)
        if way == "server" and self.mcp is not None:
            return await self._server_run(call, key, self.mcp)
        if way == "passthrough":
            return await self._passthrough(call, key)
        upstream = self._upstream
        turn = await _run(heavy, self._turn, call, await upstream.server())
        if call.stream:
            return await self._stream(call, turn, key)
        return await self._complete(call, turn, key)

    async def _server_run(self, call: ChatRequest, key: str | None, mcp: ServerTools) -> Response:
        """The answer of textreact's own loop with the MCP servers' tools (`agentic`)."""
        from starlette.responses import StreamingResponse

        try:  # may list a server again
            tools = await asyncio.to_thread(mcp.offered)
        except ConfigError as error:  # it said its list changed, then could not list it
            raise ServeError(502, str(error), type="upstream_error") from None
        upstream = self._upstream
        body = {**call.options, "model": call.model}
        model = agentic.UpstreamModel(upstream, body, key, await upstream.server())
        run = agentic.ServerRun(call, self.config, model, tools)
        if not call.stream:
            return _json(await run.body())
        events = run.events(Chunks(run.named, include_usage=call.include_usage))
        first = await anext(events)  # a fault before the first step is an HTTP error
        return StreamingResponse(_after(first, events), media_type="text/event-stream")

    def _read(self, raw: bytes) -> ChatRequest:
        return parse_request(read_json(raw), model=self.config.model)

    async def _passthrough(self, call: ChatRequest, key: str | None) -> Response:
        from starlette.background import BackgroundTask
        from starlette.responses import StreamingResponse

        body = {**call.body, "model": call.model}
        raw = await self._upstream.passthrough(body, key)
        return StreamingResponse(
            raw.chunks,
            status_code=raw.status,
            media_type=raw.content_type,
            background=BackgroundTask(raw.aclose),
        )

    def _turn(self, call: ChatRequest, server: ServerInfo | None) -> _Turn:
        """What one text-protocol turn sends and how it reads the reply, for an upstream that
        takes a grammar (`server`) or not."""
        config = self.config
        if call.parallel_calls and not config.parallel_calls:  # the server's say comes first
            call = dataclasses.replace(call, parallel_calls=False)
        stops = stops_for(call.stop, config.lang)
        body = {**call.options, "model": call.model, "stop": list(stops.upstream)}
        fields = {}
        if server is not None:
            rules = _grammar(call.tools, call.tool_choice, config.lang, call.parallel_calls)
            fields = server.request_fields(rules)
        judge = Judge(
            call.tools,
            call.tool_choice,
            config.lang,
            earlier=earlier_calls(call),
            answer_format=call.answer_format,
            limit=config.observation_limit,
            uncached=config.uncached_tools,
            parallel_calls=call.parallel_calls,
        )
        messages = text_messages(
            call, lang=config.lang, limit=config.observation_limit, example=config.example
        )
        return _Turn(judge, messages, body, fields, stops)

    async def _complete(self, call: ChatRequest, turn: _Turn, key: str | None) -> Response:
        judge, messages, body, fields, stops = turn.parts()
        usage, model, reasks = Usage(), call.model, 0
        for attempt in range(2):
            completion, named = await self._upstream.complete(
                {**body, "messages": messages}, key, fields
            )
            completion = stops.apply(completion)
            usage += completion.usage
            model = named or model
            verdict = judge.read(completion)
            if not isinstance(verdict, Problem):
                break
            if attempt == 0:
                messages, reasks = judge.reask(messages, verdict), 1
            else:
                verdict = judge.give_up(verdict)
        extra = {"protocol": "text", "reasks": reasks, "constrained": bool(fields)}
        if getattr(verdict, "note", None):
            extra["note"] = verdict.note
        return _json(
            completion_body(
                verdict,
                model=model,
                usage=usage,
                show_thoughts=self.config.show_thoughts,
                extra=extra,
            )
        )

    async def _stream(self, call: ChatRequest, turn: _Turn, key: str | None) -> Response:
        from starlette.background import BackgroundTask
        from starlette.responses import StreamingResponse

        judge, messages, body, fields, stops = turn.parts()

        async def reopen(conversation: Sequence[Message]) -> Stream:
            return await self._upstream.stream(
                {**body, "messages": list(conversation)}, key, fields
            )

        first = await reopen(messages)
        events = stream.events(
            first,
            judge=judge,
            messages=messages,
            reopen=reopen,
            chunks=Chunks(call.model, include_usage=call.include_usage),
            show_thoughts=self.config.show_thoughts,
            stops=stops,
            early=self.config.stream_arguments and bool(fields),
        )
        return StreamingResponse(
            events, media_type="text/event-stream", background=BackgroundTask(first.aclose)
        )


@dataclass(frozen=True)
class _Turn:
    """One text-protocol turn made ready: the judge of its replies, the conversation, the
    upstream body (without its messages), the grammar's fields, the stops."""

    judge: Judge
    messages: list[Message]
    body: dict[str, Any]
    fields: dict[str, Any]
    stops: Stops

    def parts(self) -> tuple[Judge, list[Message], dict[str, Any], dict[str, Any], Stops]:
        return self.judge, self.messages, self.body, self.fields, self.stops


@lru_cache(maxsize=64)
def _grammar(tools: tuple[Tool, ...], tool_choice: str, lang: str, parallel: bool) -> str:
    """The grammar of one step with these tools, made once per tool set (a framework sends the
    same tools every turn, and a large schema's grammar takes a while)."""
    from textreact.constrain import tools_grammar
    from textreact.parsing.calls import MAX_CALLS

    several = MAX_CALLS if parallel else 1  # the calls one reply may make (parallel_tool_calls)
    return tools_grammar(tools, tool_choice=tool_choice, lang=lang, max_calls=several)


async def _run(heavy: bool, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)`, in a worker thread when the request is `heavy`, so that the event loop
    (every other client, `/health`) is not held while a large request is read or rendered."""
    if heavy:
        return await asyncio.to_thread(work, *args)
    return work(*args)


async def _after(first: bytes, rest: AsyncGenerator[bytes, None]) -> AsyncIterator[bytes]:
    """`first`, then the rest of the stream it came from; closed when the client leaves, so
    the run's upstream request in flight is closed too."""
    try:
        yield first
        async for piece in rest:
            yield piece
    finally:
        await rest.aclose()


def _key(request: Request) -> str | None:
    """The key the client sent, if any: `Authorization: Bearer KEY` (OpenAI's clients), else
    `x-api-key` (Anthropic's); one that no HTTP header can carry on (outside printable ASCII:
    Starlette reads header bytes as Latin-1) is a 400, not a crash upstream."""
    value = request.headers.get("authorization", "")
    scheme, _, key = value.partition(" ")
    key, header = (key.strip() if scheme.lower() == "bearer" else ""), "Authorization"
    if not key:
        key, header = request.headers.get("x-api-key", "").strip(), "x-api-key"
    if not key:
        return None
    if not (key.isascii() and key.isprintable()):
        raise bad_request(
            f"the {header} header's key holds characters outside printable ASCII, which "
            "cannot be sent on to the upstream: send the key as its provider wrote it",
            header,
        )
    return key


async def _translated(
    answer: Response,
    whole: Callable[[Any], dict[str, Any]],
    events: Callable[[AsyncIterator[bytes]], AsyncIterator[bytes]],
) -> Response:
    """The chat path's `answer` in another API: a `chat.completion` made that API's body by
    `whole`, a stream of chat chunks made its events by `events` (what closed the chat
    stream closes this one)."""
    from starlette.responses import StreamingResponse

    if not isinstance(answer, StreamingResponse):
        return _json(whole(json.loads(answer.body)))
    if (answer.media_type or "").startswith("text/event-stream"):
        return StreamingResponse(
            events(answer.body_iterator),  # type: ignore[arg-type]
            media_type="text/event-stream",
            background=answer.background,
        )
    body = b"".join([bytes(piece) async for piece in answer.body_iterator])  # passed through
    if answer.background is not None:
        await answer.background()
    try:
        completion = json.loads(body)
    except ValueError:
        raise ServeError(
            502, "the upstream's reply, passed through, is not JSON", type="upstream_error"
        ) from None
    return _json(whole(completion))


def _json(
    content: Any, *, status_code: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """A JSON response that carries whatever the upstream sent (a lone surrogate as its
    escape) and that a reader splitting lines reads whole (`textreact.jsonline`)."""
    from starlette.responses import Response

    body = jsonline.encoded(content, separators=(",", ":"))
    return Response(body, status_code, headers, media_type="application/json")


def _error(error: ServeError) -> Response:
    return _json(error.body(), status_code=error.status, headers=error.headers)


def _anthropic_error(error: ServeError) -> Response:
    return _json(messages.error_body(error), status_code=error.status, headers=error.headers)


def _served(model: str) -> dict[str, Any]:
    return {"id": model, "object": "model", "created": 0, "owned_by": "textreact"}


#: What the server answers, for the 404 of any other path.
_ROUTES = (
    "POST /v1/chat/completions, POST /v1/messages, POST /v1/messages/count_tokens, "
    "POST /v1/responses, GET /v1/models, GET /v1/models/{id} and GET /health"
)


async def _not_found(request: Request, exc: Exception) -> Response:
    where = f"{request.method} {request.url.path}"
    return _error(ServeError(404, f"Invalid URL ({where}): this server answers {_ROUTES}"))


async def _not_allowed(request: Request, exc: Exception) -> Response:
    allowed = (getattr(exc, "headers", None) or {}).get("Allow", "")
    error = ServeError(
        405,
        f"{request.method} is not allowed on {request.url.path}; use {allowed or 'another method'}",
        headers={"Allow": allowed} if allowed else None,
    )
    return _error(error)


async def _failed(request: Request, exc: Exception) -> Response:
    """A fault of the server itself (a bug, never the client's request): still OpenAI's
    shape, so a client shows a message rather than failing to parse the body."""
    return _error(
        ServeError(
            500,
            f"textreact serve failed on this request ({type(exc).__name__}); this is a bug in "
            "the server, please report it with the request that caused it",
            type="server_error",
        )
    )
