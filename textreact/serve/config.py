"""ServeConfig: what one `textreact serve` process is set to; the CLI builds it from flags and
the environment, the app only reads it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from textreact import grammar
from textreact.errors import ConfigError

#: What to install for `textreact serve` (Starlette and uvicorn).
INSTALL_HINT = "pip install 'textreact[serve]'"
#: `--upstream-native`: never use the model's own tool calls, probe them, or always use them.
NATIVE_MODES = ("off", "auto", "on")
#: `--constrain`: detect whether the upstream takes a grammar, always send one, never.
CONSTRAIN_MODES = ("auto", "on", "off")
#: Seconds per upstream read unless told otherwise: (1 + 2 retries) x 180 s stays inside the
#: 600 s the OpenAI SDK gives a request by default.
DEFAULT_TIMEOUT = 180.0


@dataclass(frozen=True)
class ServeConfig:
    """One proxy in front of one upstream."""

    #: The upstream's OpenAI-compatible base URL, usually ending in /v1.
    upstream: str
    #: The model asked of the upstream for every request; None sends the client's `model`.
    model: str | None = None
    #: The upstream's key; None forwards the key each client sends (if any).
    upstream_api_key: str | None = None
    #: "off": requests with tools always go through the text protocol; "auto": a model whose
    #: own tool calls work (one probe per model) gets them passed through; "on": always.
    native: str = "off"
    #: Constrained decoding of text-protocol replies (see textreact.constrain).
    constrain: str = "auto"
    #: Put the model's Thought in `content` too (it is always in `reasoning_content`).
    show_thoughts: bool = False
    #: The language of the prompt and of every note.
    lang: str = "en"
    #: Send the bundled worked example after the system prompt, as `Agent` does by default
    #: (`textreact.prompt` says why); False sends the client's conversation alone.
    example: bool = True
    #: Seconds one upstream read may take (a slow local model needs more). With the
    #: retries, one upstream request then ends within 3 x 180 = 540 s, before the 600 s an
    #: OpenAI SDK client waits by default.
    timeout: float = DEFAULT_TIMEOUT
    #: The retries of a failed upstream request (the openai SDK's policy: `serve.transport`).
    max_retries: int = 2
    #: Characters of each tool result shown to the model (head and tail); None: all.
    observation_limit: int | None = None
    #: Host names served besides the loopback ones (`localhost`, `127.0.0.1`, `::1`), as a
    #: request's Host or a page's Origin names them; "*" serves any Host (not any Origin).
    #: See `textreact.serve.guard`.
    allowed_hosts: tuple[str, ...] = ()
    #: Seconds a client has to send a request's head (from connecting, or from its previous
    #: response), and as long again for its body; see `textreact.serve.connections`.
    client_timeout: float = 15.0
    #: The names of client tools whose result may change between calls (a job's status, the
    #: time), "*" for every tool: a call that repeats an earlier one of such a tool goes
    #: straight to the client, as the loop runs each call of a `@tool(cache=False)`; any
    #: other is answered once with the earlier result (see `textreact.serve.turn`).
    uncached_tools: tuple[str, ...] = ()
    #: The most connections and requests served at once; past it, a 503.
    max_connections: int = 1024
    #: Send a constrained reply's tool calls as the model writes them (the name, then the
    #: arguments piece by piece), where a call is otherwise sent once it has been checked;
    #: a streamed call that does not validate is withdrawn (`textreact.serve.early`).
    stream_arguments: bool = False
    #: Let one reply of the text protocol make several calls where the client allows it
    #: (`parallel_tool_calls`, OpenAI's default; Anthropic's unless `disable_parallel_tool_use`).
    #: Off, every reply makes one call, with the one-call prompt and grammar: the format line
    #: that allows several cost small models a third of their single calls (docs/evaluation.md).
    parallel_calls: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.upstream, str) or not self.upstream.startswith(
            ("http://", "https://")
        ):
            raise ConfigError(
                f"upstream must be an http(s) base URL such as http://127.0.0.1:8080/v1, got "
                f"{self.upstream!r}"
            )
        if self.native not in NATIVE_MODES:
            raise ConfigError(f"native must be one of {NATIVE_MODES}, got {self.native!r}")
        if self.constrain not in CONSTRAIN_MODES:
            raise ConfigError(f"constrain must be one of {CONSTRAIN_MODES}, got {self.constrain!r}")
        if self.lang not in grammar.LANGUAGES:
            raise ConfigError(f"lang must be one of {grammar.LANGUAGES}, got {self.lang!r}")
        _check_seconds("timeout", self.timeout)
        _check_seconds("client_timeout", self.client_timeout)
        if (
            isinstance(self.max_retries, bool)
            or not isinstance(self.max_retries, int)
            or (self.max_retries < 0)
        ):
            raise ConfigError(f"max_retries must be an integer >= 0, got {self.max_retries!r}")
        key = self.upstream_api_key
        if key is not None and not (isinstance(key, str) and key.isascii() and key.isprintable()):
            raise ConfigError(
                "upstream_api_key must be printable ASCII (an HTTP header carries it); check "
                "that it was copied whole, without a line break or a typographic character"
            )
        cap = self.max_connections
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ConfigError(f"max_connections must be an integer >= 1, got {cap!r}")
        hosts = self.allowed_hosts
        if not isinstance(hosts, tuple) or not all(isinstance(h, str) and h for h in hosts):
            raise ConfigError(f"allowed_hosts must be a tuple of host names, got {hosts!r}")
        names = self.uncached_tools
        if not isinstance(names, tuple) or not all(isinstance(n, str) and n for n in names):
            raise ConfigError(f"uncached_tools must be a tuple of tool names, got {names!r}")
        limit = self.observation_limit
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise ConfigError(f"observation_limit must be an integer >= 1 or None, got {limit!r}")


def _check_seconds(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a finite number of seconds > 0, got {value!r}")
