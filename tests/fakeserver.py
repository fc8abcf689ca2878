"""A loopback HTTP server with scripted replies, for driving the real model clients in tests.

Not a mock of any SDK: the official client sends real HTTP to 127.0.0.1 and parses real bytes,
so retries, timeouts and error mapping run exactly as they would against a real server. The
server knows no protocol: each POST takes the next scripted `Reply`, whatever the path, and the
helpers below build OpenAI chat-completion and Anthropic message bodies. Every request is
recorded so a test can assert what the client sent."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeServer",
    "Reply",
    "Request",
    "anthropic_message",
    "chat_completion",
    "error_body",
]


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP response: a dict or list body is sent as JSON, str/bytes as given."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    #: Seconds to wait before answering (cut short when the server closes).
    delay: float = 0.0
    #: Seconds between single bytes of the response (a slow-drip server): the status line and
    #: headers too, unless `drip_headers` is False.
    drip: float = 0.0
    drip_headers: bool = True
    #: Reset the connection after this many bytes of the response (0: before any byte), as a
    #: server that crashes mid-reply does.
    cut: int | None = None
    #: Close the connection in an orderly way (no reset) after this many bytes of the body,
    #: short of its Content-Length: a body that ends early, every byte before it received.
    end_body: int | None = None


@dataclass(frozen=True)
class Request:
    """One request the server received; `body` is the parsed JSON, or the raw text if not JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def chat_completion(
    text: str | None,
    *,
    finish_reason: str | None = "stop",
    prompt_tokens: int | None = 11,
    completion_tokens: int | None = 7,
    model: str = "fake-model",
) -> dict[str, Any]:
    """An OpenAI chat.completion body; None for a token count leaves `usage` out."""
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
    }
    if prompt_tokens is not None and completion_tokens is not None:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return body


def anthropic_message(
    text: str,
    *,
    stop_reason: str = "end_turn",
    input_tokens: int = 13,
    output_tokens: int = 5,
    model: str = "fake-claude",
) -> dict[str, Any]:
    """An Anthropic Messages API response body with one text block."""
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def error_body(message: str, *, type: str = "invalid_request_error", param: str | None = None):
    """The error envelope OpenAI-compatible servers send with a 4xx/5xx status."""
    return {"error": {"message": message, "type": type, "param": param, "code": None}}


class _Server(ThreadingHTTPServer):
    #: Room for many clients connecting at once (the default backlog of 5 resets the rest).
    request_queue_size = 128


class FakeServer:
    """A threaded HTTP server on 127.0.0.1 at a free port; use it as a context manager.

    `models` answers `GET /v1/models` (None makes that a 404, like a server without the
    endpoint). A POST with no scripted reply left gets a 500 that tells the client not to
    retry, and is counted in `.unscripted`, so a test that asked for too little fails loudly."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        models: Sequence[str] | None = ("fake-model",),
        props: dict[str, Any] | None = None,
        max_stops: int | None = None,
    ) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.models = models
        #: The body of `GET /props` (llama.cpp's server describes itself there); None: 404.
        self.props = props
        #: Refuse a POST with more stop sequences than this with a 400, as OpenAI refuses more
        #: than 4 (no scripted reply is taken); None takes any number.
        self.max_stops = max_stops
        self.requests: list[Request] = []
        #: For each byte-by-byte reply that ended before its last byte because the client went
        #: away (or the server closed), how many bytes were never sent.
        self.unsent: list[int] = []
        self.unscripted = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The server's root, e.g. http://127.0.0.1:PORT."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, with /v1."""
        return self.url + "/v1"

    @property
    def posts(self) -> list[Request]:
        """The POST requests, i.e. those that consumed scripted replies."""
        return [r for r in self.requests if r.method == "POST"]

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def _record(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            if request.method == "GET" and request.path.rstrip("/").endswith("/models"):
                if self.models is None:
                    return Reply(404, error_body("no such endpoint", type="not_found"))
                data = [
                    {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                    for m in self.models
                ]
                return Reply(200, {"object": "list", "data": data})
            if request.method == "GET" and request.path.rstrip("/") == "/props":
                if self.props is None:
                    return Reply(404, error_body("no such endpoint", type="not_found"))
                return Reply(200, dict(self.props))
            stop = request.body.get("stop") if isinstance(request.body, dict) else None
            if self.max_stops is not None and isinstance(stop, list) and len(stop) > self.max_stops:
                message = (
                    f"'stop': array too long. Expected an array with maximum length "
                    f"{self.max_stops}, but got an array with length {len(stop)} instead."
                )
                return Reply(400, error_body(message, param="stop"))
            if request.method == "POST" and self.replies:
                return self.replies.popleft()
            self.unscripted += 1
            return Reply(
                500,
                error_body(f"fake server: no scripted reply for {request.method} {request.path}"),
                {"x-should-retry": "false"},
            )


def _handler_for(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            try:
                body: Any = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = raw
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = server._record(Request(self.command, self.path, headers, body))
            if reply.delay and server._closing.wait(reply.delay):
                return
            if isinstance(reply.body, (dict, list)):
                payload, ctype = json.dumps(reply.body).encode(), "application/json"
            else:
                text = reply.body if reply.body is not None else b""
                payload = text.encode() if isinstance(text, str) else text
                ctype = reply.headers.get("content-type", "application/json")
            if reply.drip or reply.cut is not None or reply.end_body is not None:
                self._send_raw(reply, payload, ctype)
                return
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    if name.lower() != "content-type":
                        self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first (a timeout test): nothing to answer

        def _send_raw(self, reply: Reply, payload: bytes, ctype: str) -> None:
            """The response written byte by byte, so it can drip or stop anywhere."""
            extra = {k: v for k, v in reply.headers.items() if k.lower() != "content-type"}
            lines = [f"HTTP/1.1 {reply.status} {HTTPStatus(reply.status).phrase}"]
            lines += [f"Content-Type: {ctype}", f"Content-Length: {len(payload)}"]
            lines += [f"{k}: {v}" for k, v in extra.items()] + ["Connection: close", "", ""]
            head = "\r\n".join(lines).encode()
            data = head + payload
            end = len(data) if reply.cut is None else min(reply.cut, len(data))
            if reply.end_body is not None:
                end = min(end, len(head) + reply.end_body)
            start = 0 if reply.drip_headers else len(head)
            index = first = min(start, end)
            try:
                self.wfile.write(data[:first])
                for index in range(first, end):
                    if reply.drip and server._closing.wait(reply.drip):
                        server.unsent.append(end - index)
                        return
                    self.wfile.write(data[index : index + 1])
            except (BrokenPipeError, ConnectionResetError):
                server.unsent.append(end - index)
                return
            if reply.cut is not None:  # a reset (RST), not an orderly end of the stream
                linger = struct.pack("ii", 1, 0)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                self.connection.close()

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean; the requests are recorded instead

    return Handler
