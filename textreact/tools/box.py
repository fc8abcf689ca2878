"""ToolBox: a tool name and an Action Input -> a ToolResult. Looks the tool up leniently,
validates the arguments, runs the call under the tool's timeout, and turns every failure into
a ToolResult marked as an error, so nothing a tool does can stop the loop."""

from __future__ import annotations

import difflib
import json
import re
import threading
import time
from collections.abc import Iterable
from typing import Any, Final

from textreact.errors import ConfigError, ToolArgumentError
from textreact.steps import ToolResult
from textreact.tools.tool import Tool

_SEPARATORS: Final = re.compile(r"[\s_.-]+")
#: Characters of a tool's exception message kept (a tool may raise with megabytes of text).
_MESSAGE_LIMIT: Final = 10_000
#: A name longer than this is no tool's name: no suggestion is searched for it.
_LONGEST_NAME: Final = 100


def _key(name: str) -> str:
    """`Uber.ride`, `uber_ride`, "`uber-ride`", `"uber ride"` and `uber_ride()` are one name."""
    name = name.strip().strip("\"'`").strip()
    return _SEPARATORS.sub("_", name.removesuffix("()")).casefold()


class ToolBox:
    """The tools of one agent, looked up by name and called safely.

    `call` never raises for a mistake of the model or a failure of the tool: it returns a
    ToolResult whose `error_kind` is "unknown_tool", "arguments", "timeout" or "exception".
    Only BaseExceptions that are not Exceptions (KeyboardInterrupt, SystemExit) propagate, so
    Ctrl-C still stops a run, even while it waits for a tool.

    Timeouts: a tool with a timeout runs in a daemon worker thread. When the timeout passes the
    run goes on with a timeout result and the thread is abandoned, not killed (Python cannot
    kill a thread): it keeps running until the function returns or the process exits, and its
    result is discarded. A tool with `timeout=None` runs in the caller's thread, unbounded.
    """

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if not isinstance(tool, Tool):
                raise ConfigError(
                    f"tools must be Tool objects (use @tool or Tool.from_schema), got {tool!r}"
                )
            other = self._tools.setdefault(_key(tool.name), tool)
            if other is not tool:
                raise ConfigError(
                    f"tool names {other.name!r} and {tool.name!r} differ only in case or "
                    "separators, so the model could not tell them apart: rename one"
                )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self._tools.values())

    @property
    def tools(self) -> tuple[Tool, ...]:
        return tuple(self._tools.values())

    def resolve(self, name: str) -> Tool | None:
        """The tool `name` means, ignoring case, surrounding quotes or backticks, a trailing
        `()` and `_`/`.`/`-`/space differences; None when no tool matches."""
        return self._tools.get(_key(name))

    def suggest(self, name: str) -> str | None:
        """The closest tool name to an unknown `name`, or None when nothing is close."""
        key = _key(name)
        if len(key) > _LONGEST_NAME:
            return None
        containing = [k for k in self._tools if len(key) >= 3 and (key in k or k in key)]
        if len(containing) == 1:
            return self._tools[containing[0]].name
        close = difflib.get_close_matches(key, list(self._tools), n=1, cutoff=0.5)
        return self._tools[close[0]].name if close else None

    def call(self, name: str, raw: str | dict[str, Any]) -> ToolResult:
        """Resolve, validate, run; never raises except for KeyboardInterrupt and the like."""
        started = time.perf_counter()
        tool = self.resolve(name)
        if tool is None:
            return ToolResult(
                name, raw, error=self.unknown_tool_message(name), error_kind="unknown_tool"
            )
        try:
            arguments, repairs = tool.parse_arguments_with_repairs(raw)
        except ToolArgumentError as error:
            seconds = time.perf_counter() - started
            return ToolResult(
                tool.name, raw, error=str(error), error_kind="arguments", seconds=seconds
            )
        except Exception as error:  # a broken convert or a non-str/dict input: still data
            seconds = time.perf_counter() - started
            return ToolResult(
                tool.name, raw, error=_describe(error),
                error_kind="arguments", seconds=seconds,
            )  # fmt: skip
        outcome, value = _run(tool, arguments)
        seconds = time.perf_counter() - started
        if outcome == "ok":
            return ToolResult(tool.name, arguments, value=value, repairs=repairs, seconds=seconds)
        if outcome == "timeout":
            error = (
                f"{tool.name} did not finish within {tool.timeout:g} seconds and was abandoned. "
                "Try different arguments, another tool, or answer without it."
            )
        else:
            error = f"{tool.name} failed: {_describe(value)}"
        return ToolResult(
            tool.name, arguments, error=error, error_kind=outcome, repairs=repairs, seconds=seconds
        )

    def call_key(self, name: str, raw: str | dict[str, Any]) -> tuple[str, str] | None:
        """The identity of a call after lookup and repair, so `Uber.ride {'n': '2'}` and
        `uber_ride {"n": 2}` are one call; None when the call would not run anyway. The loops
        use it to answer a repeated call from the earlier result instead of running it again."""
        tool = self.resolve(name)
        if tool is None:
            return None
        try:
            arguments = tool.parse_arguments(raw)
        except Exception:  # the call itself will report why; a key is only an optimisation
            return None
        return tool.name, json.dumps(arguments, sort_keys=True, default=str)

    def unknown_tool_message(self, name: str) -> str:
        shown = " ".join(str(name).split())[:60]
        guess = self.suggest(name)
        hint = f' Did you mean "{guess}"?' if guess else ""
        return f'Unknown tool "{shown}". Available tools: {", ".join(self.names)}.{hint}'


def _run(tool: Tool, arguments: dict[str, Any]) -> tuple[str, Any]:
    """("ok", value) | ("exception", the exception) | ("timeout", None)."""
    if tool.timeout is None:
        return _attempt(tool, arguments)
    box: list[tuple[str, Any]] = []

    def work() -> None:
        try:
            box.append(_attempt(tool, arguments))
        except BaseException as error:  # carried to the caller's thread and raised there
            box.append(("raise", error))

    worker = threading.Thread(target=work, name=f"textreact-tool-{tool.name}", daemon=True)
    worker.start()
    worker.join(tool.timeout)
    if not box:
        return "timeout", None
    outcome, value = box[0]
    if outcome == "raise":
        raise value
    return outcome, value


def _attempt(tool: Tool, arguments: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", tool.invoke(arguments)
    except Exception as error:
        return "exception", error


def _describe(error: Exception) -> str:
    """`Type: message`, the message cut to what an observation could ever show."""
    try:
        message = str(error)
    except Exception:  # an exception whose __str__ fails is still reported
        return type(error).__name__
    if len(message) > _MESSAGE_LIMIT:
        half = _MESSAGE_LIMIT // 2
        message = f"{message[:half]} … {message[-half:]}"
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
