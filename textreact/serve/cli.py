"""`textreact serve`: flags and environment -> a ServeConfig (and the MCP servers of `--mcp`)
-> uvicorn. The only part of the server that is given the environment (the upstream's key may
come from there); like every command, it reads it through `textreact.commands.environment`."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textreact.commands.environment import environment, exported
from textreact.commands.flags import seconds
from textreact.errors import ConfigError, MissingExtraError
from textreact.redact import blank_text, public_url
from textreact.serve.config import (
    CONSTRAIN_MODES,
    DEFAULT_TIMEOUT,
    INSTALL_HINT,
    NATIVE_MODES,
    ServeConfig,
)

if TYPE_CHECKING:
    from textreact.serve.mcp_tools import ServerTools

#: The variable that names the file that hands `--workers N` their configuration.
CONFIG_VARIABLE = "TEXTREACT_SERVE_CONFIG"
DEFAULT_PORT = 8765


def add_parser(subcommands: Any) -> argparse.ArgumentParser:
    """Register `serve` on the CLI's subcommands."""
    serve = subcommands.add_parser(
        "serve", help="an OpenAI-compatible proxy that gives any model tool calls"
    )
    serve.add_argument(
        "--upstream", help="the model server's base URL, e.g. http://127.0.0.1:8080/v1 "
        "(env TEXTREACT_UPSTREAM); without one, the embedded local model is served"
    )  # fmt: skip
    serve.add_argument("--gguf", type=Path, help="serve this GGUF file in the embedded server")
    serve.add_argument("--model", help="send this model name upstream, whatever clients ask")
    serve.add_argument(
        "--upstream-api-key", help="the upstream's key (env TEXTREACT_UPSTREAM_API_KEY); "
        "without one, each client's own key is forwarded"
    )  # fmt: skip
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="default 8765")
    serve.add_argument(
        "--allow-host", action="append", default=[], metavar="NAME",
        help="also answer requests that name this host (Host or a page's Origin); repeat for "
        "each; '*': any Host. Loopback names and --host are always allowed",
    )  # fmt: skip
    serve.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    serve.add_argument(
        "--upstream-native", choices=NATIVE_MODES, default="off",
        help="auto: pass tools through to a model whose own calls work (one probe per model)",
    )  # fmt: skip
    serve.add_argument(
        "--constrain", choices=CONSTRAIN_MODES, default="auto",
        help="constrain replies with the tools' grammar where the upstream takes one",
    )  # fmt: skip
    serve.add_argument(
        "--show-thoughts", action="store_true",
        help="put the model's Thought in content too (always in reasoning_content)",
    )  # fmt: skip
    serve.add_argument(
        "--stream-arguments", action="store_true",
        help="stream a constrained reply's tool-call arguments as the model writes them; a "
        "call that then fails its check ends the stream with an error that withdraws it",
    )  # fmt: skip
    serve.add_argument(
        "--parallel-calls", action="store_true",
        help="let one reply make several tool calls where the client allows it "
        "(parallel_tool_calls); off: one call a reply, the prompt small models do best with",
    )  # fmt: skip
    serve.add_argument("--lang", choices=("en", "zh"), default="en", help="prompt language")
    serve.add_argument(
        "--no-example", dest="example", action="store_false",
        help="send the client's conversation without the bundled worked example",
    )  # fmt: skip
    serve.add_argument(
        "--timeout", type=seconds, default=DEFAULT_TIMEOUT,
        help="seconds per upstream read (default 180: with 2 retries, inside a client's 600)",
    )  # fmt: skip
    serve.add_argument(
        "--client-timeout", type=seconds, default=ServeConfig.client_timeout, metavar="S",
        help="seconds a client has to send a request's head, and again its body (default 15)",
    )  # fmt: skip
    serve.add_argument(
        "--max-connections", type=int, default=ServeConfig.max_connections, metavar="N",
        help="connections and requests served at once; past it, a 503 (default 1024)",
    )  # fmt: skip
    serve.add_argument(
        "--observation-limit", type=int, metavar="N",
        help="show the model at most N characters of each tool result (default: all)",
    )  # fmt: skip
    serve.add_argument(
        "--uncached-tool", action="append", default=[], metavar="NAME",
        help="a client tool whose result may change between calls (a job's status): a call "
        "that repeats an earlier one goes straight to the client, not answered from the "
        "earlier result first; repeat for each; '*': every tool",
    )  # fmt: skip
    from textreact.mcp.command import add_mcp_arguments

    tools = serve.add_argument_group(
        "MCP tools on the server side (extra: mcp)",
        "requests that bring no tools are answered by textreact's own loop with these tools; "
        "the steps come back as reasoning_content",
    )
    add_mcp_arguments(tools, interactive=False, unasked="refuse")
    serve.set_defaults(handler=run)
    return serve


def upstream_of(args: argparse.Namespace, env: Mapping[str, str]) -> str | None:
    """The upstream the flags or environment name; None: the embedded model."""
    return args.upstream or env.get("TEXTREACT_UPSTREAM") or None


def config_from(
    args: argparse.Namespace, env: Mapping[str, str], upstream: str | None = None
) -> ServeConfig:
    """The configuration the flags and environment ask for; ConfigError when it is wrong."""
    return ServeConfig(
        upstream=upstream or upstream_of(args, env) or "",
        model=args.model,
        upstream_api_key=args.upstream_api_key or env.get("TEXTREACT_UPSTREAM_API_KEY"),
        native=args.upstream_native,
        constrain=args.constrain,
        show_thoughts=args.show_thoughts,
        stream_arguments=args.stream_arguments,
        parallel_calls=args.parallel_calls,
        lang=args.lang,
        example=args.example,
        timeout=args.timeout,
        observation_limit=args.observation_limit,
        allowed_hosts=_allowed_hosts(args),
        uncached_tools=tuple(dict.fromkeys(args.uncached_tool)),
        client_timeout=args.client_timeout,
        max_connections=args.max_connections,
    )


def _allowed_hosts(args: argparse.Namespace) -> tuple[str, ...]:
    """The hosts `--allow-host` names, and `--host` when it names one address (a wildcard
    such as 0.0.0.0 names no host a client would write)."""
    hosts = list(args.allow_host)
    if args.host not in ("0.0.0.0", "::", ""):
        hosts.append(args.host.strip("[]"))
    return tuple(dict.fromkeys(hosts))


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Serve until interrupted; returns the exit code."""
    if args.workers < 1 or not 0 <= args.port <= 65535:
        raise ConfigError(
            f"--workers must be >= 1 and --port 0-65535, got {args.workers} and {args.port}"
        )
    if args.workers > 1 and (args.mcp or args.mcp_server):
        raise ConfigError(
            "--mcp needs one worker: each worker would start its own MCP servers, and their "
            "state (a browser, a session) would be split between them; run one --workers 1 "
            "process per set of servers"
        )
    if upstream_of(args, env) is not None:
        if args.gguf is not None:
            raise ConfigError("--gguf runs the embedded model; --upstream names another: give one")
        return _serve(config_from(args, env), args, env)
    if args.workers > 1:
        raise ConfigError(
            "--workers N needs --upstream: each worker would start its own embedded model"
        )
    from textreact.models import local

    gguf = args.gguf or local.gguf_path(local.default_cache_dir(env))
    with local.local_server(gguf) as url:
        return _serve(config_from(args, env, url), args, env)


def _serve(config: ServeConfig, args: argparse.Namespace, env: Mapping[str, str]) -> int:
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtraError(f"textreact serve needs uvicorn ({exc}): {INSTALL_HINT}") from exc
    from textreact.serve.connections import uvicorn_options

    mcp = server_tools(args, env)
    if mcp is not None:  # opened here, so that a server that cannot start is a one-line error
        mcp.open()
    where = f"http://{args.host}:{args.port}/v1"
    offered = f", {mcp.count} MCP tools for requests without tools" if mcp is not None else ""
    print(
        f"textreact serve: {where} -> {public_url(config.upstream)} "
        f"({args.workers} worker{'s' if args.workers > 1 else ''}{offered})",
        file=sys.stderr,
    )
    if args.workers == 1:
        from textreact.serve.app import create_app

        try:
            uvicorn.run(
                create_app(config, mcp=mcp),
                host=args.host,
                port=args.port,
                log_level="warning",
                **uvicorn_options(config),
            )
        finally:  # the app closes them at shutdown; here, when it never started (a taken port)
            if mcp is not None:
                mcp.close()
        return 0
    with handed_over(config) as variables, exported(variables):  # the workers inherit it
        uvicorn.run(
            "textreact.serve.cli:app_from_environment",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level="warning",
            **uvicorn_options(config),
        )
    return 0


def server_tools(args: argparse.Namespace, env: Mapping[str, str]) -> ServerTools | None:
    """The MCP servers the `--mcp*` flags name (the same reading as `textreact run`'s, a
    config's `${VAR}` from `env`), not yet open; None without them."""
    from textreact.mcp.command import mcp_servers
    from textreact.serve.mcp_tools import ServerTools

    servers = mcp_servers(args, env)
    if not servers:
        return None
    named = ([f"--mcp {args.mcp}"] if args.mcp else []) + [
        f"--mcp-server {blank_text(text)!r}" for text in args.mcp_server
    ]
    return ServerTools(
        servers, source=" and ".join(named), allow=args.mcp_allow, timeout=args.mcp_timeout,
        writes=args.mcp_writes, lang=args.lang,
    )  # fmt: skip


@contextlib.contextmanager
def handed_over(config: ServeConfig) -> Iterator[dict[str, str]]:
    """The environment that hands `config` to worker processes: the path of a file only this
    user may read, removed when the block ends. The configuration itself (the upstream's key)
    stays out of the environment, which every worker, and every process a worker starts,
    inherits and may show."""
    descriptor, path = tempfile.mkstemp(prefix="textreact-serve-", suffix=".json")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(dataclasses.asdict(config), file)
        yield {CONFIG_VARIABLE: path}
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def app_from_environment() -> Any:
    """The app of one worker process, configured by the process that started the workers
    (`handed_over`)."""
    from textreact.serve.app import create_app

    fields = json.loads(Path(environment()[CONFIG_VARIABLE]).read_text(encoding="utf-8"))
    fields["allowed_hosts"] = tuple(fields.get("allowed_hosts", ()))
    fields["uncached_tools"] = tuple(fields.get("uncached_tools", ()))
    return create_app(ServeConfig(**fields))
