"""The `textreact` command: a thin layer that reads flags and the environment, builds the library
objects, and prints. The only module that reads environment variables.

Exit codes: 0 an answer was found (or the command succeeded); 1 the run ended without an answer
(or a fuzz/compare check failed); 2 usage error; 3 the model or its server failed;
130 interrupted.

Everything printed goes through `_SafeText`: a character the terminal's encoding lacks (a lone
surrogate from a server, say) is written as a backslash escape, never a crash that loses the
answer; `--json` falls back to ASCII escapes, so it stays valid JSON."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn
from urllib.parse import urlsplit

from textreact import jsonline
from textreact.errors import ConfigError, ModelError, TextReactError
from textreact.observation import visible
from textreact.redact import public_url, split_userinfo

EXIT_OK, EXIT_NO_ANSWER, EXIT_USAGE, EXIT_MODEL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code instead of exiting, for in-process tests."""
    with (
        contextlib.redirect_stdout(_SafeText(sys.stdout)),
        contextlib.redirect_stderr(_SafeText(sys.stderr)),
    ):
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on usage errors and --help; return instead
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return args.handler(args, os.environ)
    except KeyboardInterrupt:
        print("textreact: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ModelError as exc:
        print(f"textreact: model error: {exc}", file=sys.stderr)
        return EXIT_MODEL
    except (ConfigError, TextReactError, OSError) as exc:
        print(f"textreact: {exc}", file=sys.stderr)
        return EXIT_USAGE


class _SafeText:
    """A text stream that never fails on a character its encoding cannot write: such characters
    are written as backslash escapes instead (what Python's `backslashreplace` does)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if not _encodable(text, self._stream):
            encoding = _encoding(self._stream)
            text = text.encode(encoding, "backslashreplace").decode(encoding)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _encoding(stream: Any) -> str:
    return getattr(stream, "encoding", None) or "utf-8"


def _encodable(text: str, stream: Any) -> bool:
    try:
        text.encode(_encoding(stream))
    except UnicodeEncodeError:
        return False
    return True


def _json_text(data: Any, stream: Any) -> str:
    """`data` as JSON that `stream` can write as it is: readable UTF-8 where the stream takes it,
    ASCII escapes otherwise (a lone surrogate, an ASCII-only terminal), so it stays valid JSON."""
    text = jsonline.encode(data, ensure_ascii=False, indent=2)
    return text if _encodable(text, stream) else jsonline.encode(data, ensure_ascii=True, indent=2)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors, like every other error of the command."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above zero (`nan` and `inf` are not)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a finite number of seconds above 0, got {text!r}"
        )
    return value


QUESTION_HELP = (
    "the question; - reads it from standard input, @FILE from a UTF-8 file "
    "(@@... for a question that starts with @)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="textreact",
        description="Tool use for any chat model through a plain-text ReAct protocol.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    from textreact.compare.cli import add_tool_options

    run = commands.add_parser("run", help="answer a question with tools")
    run.add_argument("question", help=QUESTION_HELP)
    add_model_arguments(run)
    run.add_argument("--max-steps", type=int, default=8, help="model calls at most (default 8)")
    run.add_argument("--lang", choices=("en", "zh"), default="en", help="prompt language")
    run.add_argument("--json", action="store_true", help="print one JSON object, no live steps")
    run.add_argument("--transcript", type=Path, help="write a JSONL transcript here")
    run.add_argument(
        "--protocol",
        choices=("auto", "text", "native", "own", "own-first"),
        default="auto",
        help="auto (default): own-first for a model whose chat template has a tool format that "
        "measured ahead, else text; text: the ReAct text protocol; native: the server's own "
        "tool calling; own: the model's own tool format (from its chat template) in plain text; "
        "own-first: that format for the first decision, then text",
    )
    run.add_argument(
        "--tool-choice",
        default="auto",
        metavar="CHOICE",
        help="auto (default), required (a tool call before the first answer), none, or a tool name",
    )
    add_tool_options(run)
    from textreact.mcp.command import add_mcp_arguments

    add_mcp_arguments(run.add_argument_group("MCP servers (extra: mcp)"))
    run.add_argument("-v", "--verbose", action="store_true", help="print every message sent")
    run.set_defaults(handler=cmd_run)

    parse = commands.add_parser("parse", help="parse a completion (stdin or FILE) to JSON")
    parse.add_argument("file", nargs="?", type=Path)
    parse.set_defaults(handler=cmd_parse)

    show = commands.add_parser("prompt", help="print the rendered prompt")
    show.add_argument("question", nargs="?", default="What is 12 * 7?", help=QUESTION_HELP)
    show.add_argument("--lang", choices=("en", "zh"), default="en")
    show.set_defaults(handler=cmd_prompt)

    pull = commands.add_parser("pull", help="fetch the embedded default model (about 100 MB)")
    pull.set_defaults(handler=cmd_pull)

    fuzz = commands.add_parser("fuzz", help="fuzz a ReAct parser with generated completions")
    fuzz.add_argument(
        "--parser",
        default="textreact.parser:parse",
        metavar="MODULE:FUNCTION",
        help="the parser under test (default: textreact's own)",
    )
    fuzz.add_argument("--examples", type=int, default=200, metavar="N", help="per family")
    fuzz.add_argument("--seed", type=int, default=0, metavar="S", help="reproduces a run")
    fuzz.add_argument(
        "--family",
        action="extend",
        nargs="+",
        metavar="NAME",
        help="only these families (docs/fuzzing.md lists them; an unknown name lists them too)",
    )
    fuzz.set_defaults(handler=cmd_fuzz)

    compare = commands.add_parser(
        "compare",
        help="text protocol (with and without grammar) vs native tool calls, on one model or "
        "several",
        conflict_handler="resolve",  # compare's own --gguf repeats
    )
    add_model_arguments(compare)
    from textreact.compare import add_compare_arguments

    add_compare_arguments(compare)
    add_mcp_arguments(compare.add_argument_group("MCP servers (extra: mcp)"), interactive=False)
    compare.set_defaults(handler=cmd_compare, gguf=None)  # GGUF files come as model specs

    mcp = commands.add_parser("mcp", help="MCP servers: list the tools the model will see")
    mcp_commands = mcp.add_subparsers(dest="mcp_command", required=True, metavar="COMMAND")
    listing = mcp_commands.add_parser(
        "list", help="each tool as the model will see it, and its class: read-only, writes, or "
        "may destroy",
    )  # fmt: skip
    add_mcp_arguments(listing, listing=True)
    listing.add_argument("--json", action="store_true", help="one JSON list")
    listing.set_defaults(handler=cmd_mcp_list)
    from textreact.serve.cli import add_parser as add_serve_parser

    add_serve_parser(commands)
    return parser


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "model", "with no base URL (flag or OPENAI_BASE_URL), the embedded local model runs"
    )
    group.add_argument("--base-url", help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")
    group.add_argument("--model", help="model name (env TEXTREACT_MODEL)")
    group.add_argument("--api-key", help="API key (env OPENAI_API_KEY)")
    group.add_argument("--gguf", type=Path, help="run this GGUF file in the embedded server")
    group.add_argument("--max-tokens", type=int, default=512, help="per reply (default 512)")
    group.add_argument(
        "--timeout",
        type=seconds,
        default=120.0,
        help="seconds one request may take, first byte to last (default 120)",
    )
    group.add_argument(
        "--constrain",
        choices=("auto", "on", "off"),
        default="auto",
        help="constrain replies by the tools' grammar: auto (where the server takes one; the "
        "default), on (send it even when the server cannot tell), off",
    )


def _base_url(args: argparse.Namespace, env: Mapping[str, str]) -> str | None:
    """The server the flags or the environment name; None: the embedded model."""
    return args.base_url or env.get("OPENAI_BASE_URL")


@contextlib.contextmanager
def open_model(args: argparse.Namespace, env: Mapping[str, str]) -> Iterator[Any]:
    """The model the flags and environment ask for; the embedded server lives as long as this."""
    from textreact.models.openai_compat import OpenAICompatModel

    base_url = _base_url(args, env)
    options = {"max_tokens": args.max_tokens, "timeout": args.timeout, "constrain": args.constrain}
    if base_url and args.gguf:
        raise ConfigError(
            "--gguf runs the embedded server, --base-url (or OPENAI_BASE_URL) names another "
            "server: give one of them"
        )
    if base_url:
        source = "--base-url" if args.base_url else "OPENAI_BASE_URL"
        url, credentials = split_userinfo(checked_base_url(base_url, source))
        name = args.model or env.get("TEXTREACT_MODEL")
        if not name:
            raise ConfigError(
                "a model name is needed with --base-url: pass --model NAME or set "
                "TEXTREACT_MODEL (e.g. --model qwen2.5:3b for Ollama)"
            )
        api_key = args.api_key or env.get("OPENAI_API_KEY")
        client = _http_client(url, credentials, args.timeout, env)
        with OpenAICompatModel(name, url, api_key, http_client=client, **options) as model:
            yield model
        return
    from textreact.models import local

    gguf = args.gguf
    if gguf is None:  # the default model, fetched on first use
        cache = local.default_cache_dir(env)
        gguf = local.gguf_path(cache)
        if not gguf.is_file():
            _progress(f"textreact: first run: fetching the default model into {cache}")
            gguf = local.pull(cache, progress=_progress)
    with local.local_model(gguf, **options) as model:
        yield model


def checked_base_url(url: str, source: str = "--base-url") -> str:
    """`url` when it can be an OpenAI-compatible endpoint; otherwise a ConfigError, raised before
    any request, that shows the URL with its credentials blanked."""
    shown = repr(public_url(url))
    example = "e.g. http://localhost:11434/v1"
    if any(c.isspace() or not c.isprintable() for c in url):
        raise ConfigError(
            f"{source} {shown} holds spaces, control characters or bytes that are not UTF-8; "
            f"give the endpoint's URL alone, {example}"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # a port out of range or not a number, a broken [IPv6] host
        raise ConfigError(f"{source} {shown} is not a valid URL ({exc}); {example}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ConfigError(f"{source} {shown} must start with http:// or https://, {example}")
    if not parts.hostname:
        raise ConfigError(f"{source} {shown} names no host; {example}")
    if port == 0:
        raise ConfigError(f"{source} {shown}: port 0 cannot be connected to; {example}")
    return url


def _http_client(
    url: str, credentials: tuple[str, str] | None, timeout: float, env: Mapping[str, str]
) -> Any:
    """The SDK's HTTP client: `timeout` as a deadline for each whole request; credentials that
    were written into the URL sent as basic auth (as httpx sends them), so the URL kept and shown
    holds none; the proxy the environment names (httpx reads none once given a transport)."""
    from textreact.models.deadline import deadline_client, httpx

    auth = httpx.BasicAuth(*credentials) if credentials else None
    return deadline_client(timeout, auth=auth, proxy=_proxy_for(url, env))


def _proxy_for(url: str, env: Mapping[str, str]) -> str | None:
    """The proxy that `HTTP(S)_PROXY` / `ALL_PROXY` name for `url`, unless `NO_PROXY` covers it."""
    from urllib.request import proxy_bypass_environment

    def variable(name: str) -> str | None:
        return env.get(name) or env.get(name.upper()) or None

    parts = urlsplit(url)
    no_proxy = variable("no_proxy")
    if no_proxy and proxy_bypass_environment(parts.hostname or "", {"no": no_proxy}):
        return None
    return variable(f"{parts.scheme.lower()}_proxy") or variable("all_proxy")


def read_question(text: str, stdin: IO[str] | None = None) -> str:
    """The question as given: the argument itself, `-` for standard input, `@FILE` for a file
    (`@@...` for a question that starts with @). Text that is not UTF-8 (an argument's bytes
    arrive as surrogate escapes) and an empty question are ConfigErrors."""
    if text == "-":
        stream = stdin if stdin is not None else sys.stdin
        buffer = getattr(stream, "buffer", None)
        raw: bytes | str = buffer.read() if buffer is not None else stream.read()
        return _question_text(raw, "the question on standard input")
    if text.startswith("@@"):
        return _question_text(text[1:], "the question")
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise ConfigError(
                f"cannot read the question file {str(path)!r}: {exc.strerror or exc}; to ask a "
                "question that starts with @, write @@"
            ) from None
        return _question_text(raw, f"the question file {str(path)!r}")
    return _question_text(text, "the question")


def _question_text(raw: bytes | str, source: str) -> str:
    from textreact.compare.suite import decode_utf8

    if isinstance(raw, bytes):
        text = decode_utf8(raw, source)
    else:
        text = raw
        bad = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
        if bad is not None:
            raise ConfigError(
                f"{source} is not UTF-8 text (character {bad} is {text[bad]!r}, an undecodable "
                "byte); set a UTF-8 locale, or pass it in a UTF-8 file with @FILE"
            )
    text = text.strip()
    if not text:
        raise ConfigError(f"{source} is empty: ask something")
    return text


def _default_policies(args: argparse.Namespace, env: Mapping[str, str]) -> str:
    """The policies a run gets unless `--policies` names some: the embedded default model's
    own ("small": it was measured with them, docs/evaluation.md), none for any other model,
    whose behaviour they were not written for."""
    embedded = not (_base_url(args, env) or args.gguf)
    return "small" if embedded else "none"


def cmd_run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from textreact.agent import Agent
    from textreact.compare.cli import check_budget, check_writable
    from textreact.loading import load_tools
    from textreact.mcp.command import open_mcp
    from textreact.policies import by_name
    from textreact.transcript import step_record

    question = read_question(args.question)
    tools = None if args.tools is None else load_tools(args.tools)
    policies = by_name(args.policies or _default_policies(args, env))  # before the model starts
    check_budget(args.max_tools)
    if args.decision_bias is not None and args.protocol not in ("text", "auto"):
        raise ConfigError("--decision-bias scores the text protocol's branch: use --protocol text")
    if args.transcript is not None:
        check_writable(args.transcript, "--transcript")
    colour = sys.stderr.isatty() and "NO_COLOR" not in env
    live = None if args.json else LiveView(sys.stderr, verbose=args.verbose, colour=colour)
    own = [t.name for t in tools or ()]
    with open_mcp(args, env, own) as mcp, open_model(args, env) as model:
        if mcp is not None:  # the MCP tools beside the user's own (not the built-in ones)
            tools = (*(tools or ()), *mcp)
        agent = Agent(
            model, tools, protocol=args.protocol, max_steps=args.max_steps, lang=args.lang,
            on_event=live, tool_choice=args.tool_choice, policies=policies,
            max_tools=args.max_tools, examples=args.examples, decision_bias=args.decision_bias,
        )  # fmt: skip
        result = agent.run(question, transcript=args.transcript)
        notes = [getattr(model, name, None) for name in ("constrain_note", "decision_note")]
    for note in notes:
        if note and args.verbose:
            print(f"textreact: {note}", file=sys.stderr)
    if args.json:
        data = result.to_dict()
        data["steps"] = [step_record(step) for step in data["steps"]]
        print(_json_text(data, sys.stdout))
    elif result.answer is not None:
        print(result.answer)
    if result.stop_reason == "interrupted":
        return EXIT_INTERRUPTED
    if result.error is not None and not args.json:
        print(f"textreact: model error: {result.error}", file=sys.stderr)
    if result.stop_reason == "model_error":
        return EXIT_MODEL
    return EXIT_OK if result.answer is not None else EXIT_NO_ANSWER


class LiveView:
    """Shows each turn as it happens: colour on a terminal, plain text when piped."""

    def __init__(self, out: IO[str], *, verbose: bool = False, colour: bool = False) -> None:
        self.out = out
        self.verbose = verbose
        self.colour = colour

    def style(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour else text

    def __call__(self, event: Any) -> None:
        if event.kind == "request" and self.verbose:
            for message in event.messages:
                self.write(self.style(f"── {message['role']} ──", "2"))
                content = message.get("content")
                shown = content if isinstance(content, str) else _json_text(message, self.out)
                self.write(visible(shown))
        elif event.kind == "turn":
            self.show_turn(event.turn)
        elif event.kind == "finish":
            result = event.result
            usage = result.usage
            self.write(
                self.style(
                    f"stop: {result.stop_reason} · {len(result.steps)} steps · "
                    f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens"
                    f" · {result.seconds:.2f} s",
                    "2",
                )
            )

    def show_turn(self, turn: Any) -> None:
        """One step as it happens. What the model and the tools wrote is shown `visible`: an
        escape sequence in a tool's output must not reach the terminal."""
        number = f"[{turn.index}]"
        lines = []
        if turn.preface:  # the engine's request, e.g. for a best-effort or closed-book answer
            lines.append(f"{self.style('Asked:', '2')} {visible(turn.preface)}")
        for note in turn.policy_notes:  # a step offered some of the tools (tool_budget)
            if note.left_out:
                offered = visible(", ".join(note.offered))
                lines.append(self.style(f"Offered: {offered} ({note.left_out} left out)", "2"))
        if turn.thought:
            lines.append(f"{self.style('Thought:', '36')} {visible(turn.thought)}")
        if turn.tool is not None:
            call = json.dumps(turn.input, ensure_ascii=False)
            lines.append(f"{self.style('Action:', '33')} {visible(turn.tool)} {call}")
        elif turn.step.kind == "final":
            lines.append(f"{self.style('Final Answer:', '32')} {visible(turn.step.answer)}")
        elif turn.step.kind == "error":
            lines.append(f"{self.style('Format error:', '31')} {visible(turn.step.message)}")
        if turn.observation is not None:
            label = self.style("Observation:", "31" if turn.is_error else "35")
            tool_s = turn.result.seconds if turn.result is not None else 0.0
            timing = self.style(f"({turn.model_seconds:.2f} s model, {tool_s:.3f} s tool)", "2")
            lines.append(f"{label} {visible(turn.observation)} {timing}")
        pad = " " * (len(number) + 1)
        text = textwrap.indent("\n".join(lines), pad)
        self.write(self.style(number, "1") + text[len(number) :])

    def write(self, text: str) -> None:
        print(text, file=self.out, flush=True)


def cmd_parse(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from textreact.parser import parse
    from textreact.steps import step_to_dict

    # Bytes in, decoded leniently: a completion with broken UTF-8 is still parsed, never a
    # traceback, and what is printed can always be encoded.
    raw = sys.stdin.buffer.read() if args.file is None else args.file.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    print(_json_text(step_to_dict(parse(text)), sys.stdout))
    return EXIT_OK


def cmd_prompt(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from textreact import prompt
    from textreact.tools import builtin_tools

    question = read_question(args.question)
    for message in prompt.opening_messages(question, builtin_tools(), lang=args.lang):
        print(f"### {message['role']}\n{message['content']}\n")
    return EXIT_OK


def cmd_pull(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from textreact.models import local

    path = local.pull(local.default_cache_dir(env), progress=_progress)
    print(path)
    return EXIT_OK


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_fuzz(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    try:
        from textreact.testing import run_fuzz
    except ImportError as exc:
        raise ConfigError(
            f"textreact fuzz needs Hypothesis ({exc}); "
            "install it with: pip install 'textreact[fuzz]'"
        ) from exc
    # A console script does not put the working directory on sys.path; `--parser mymod:parse`
    # should find mymod.py where the user stands.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    report = run_fuzz(args.parser, examples=args.examples, seed=args.seed, families=args.family)
    print(report.render())
    return EXIT_OK if report.ok else EXIT_NO_ANSWER


def cmd_compare(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from textreact.compare import compare_command, compare_models, prepare_compare
    from textreact.mcp.command import open_mcp

    plan = prepare_compare(args)  # usage errors before the model starts or any request
    with open_mcp(args, env, [t.name for t in plan.tools or ()]) as mcp:
        if mcp is not None:  # the MCP tools beside the user's own (not the built-in ones)
            plan = dataclasses.replace(plan, tools=(*(plan.tools or ()), *mcp))
        if not plan.specs:
            with open_model(args, env) as model:
                return compare_command(args, model, plan=plan)
        openers = [(spec.name, _spec_opener(args, spec, env)) for spec in plan.specs]
        return compare_models(args, openers, plan=plan)


def cmd_mcp_list(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from textreact.mcp.command import cmd_mcp_list as listing

    return listing(args, sys.stdout, env)


def _spec_opener(args: argparse.Namespace, spec: Any, env: Mapping[str, str]) -> Any:
    """How to open one compared model: the model flags with the spec's endpoint (its key from
    `key_env`) or GGUF file in place. The key and the URL are checked now, before any model
    starts; OPENAI_BASE_URL is ignored, since the spec names the model."""
    api_key = args.api_key
    if spec.key_env:
        api_key = env.get(spec.key_env)
        if not api_key:
            raise ConfigError(
                f"model {spec.name}: key_env={spec.key_env} names an environment variable that "
                "is not set (or is empty); export it, or leave key_env= out"
            )
    if spec.base_url is not None:
        checked_base_url(spec.base_url, f"--model-spec {spec.name}")
    flags = argparse.Namespace(**vars(args))
    flags.base_url, flags.gguf, flags.api_key = spec.base_url, spec.gguf, api_key
    flags.model = spec.served_model if spec.base_url is not None else None
    rest = {k: v for k, v in env.items() if k != "OPENAI_BASE_URL"}
    return lambda: open_model(flags, rest)


if __name__ == "__main__":
    sys.exit(main())
