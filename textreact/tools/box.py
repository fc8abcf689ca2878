"""ToolBox: a tool name and an Action Input -> a ToolResult. Looks the tool up leniently,
validates the arguments once (`prepare`), runs the call and formats its value under the tool's
timeout (`execute`, `aexecute`), and turns every failure into a ToolResult marked as an error,
so nothing a tool does can stop the loop."""

from __future__ import annotations

import asyncio
import difflib
import json
import re
import threading
import time
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from textreact import templates
from textreact.errors import CallRefusedError, ConfigError, ToolArgumentError, WrongToolError
from textreact.steps import ToolResult
from textreact.tools.tool import Tool

_SEPARATORS: Final = re.compile(r"[\s_.-]+")
#: Characters of a tool's exception message kept (a tool may raise with megabytes of text).
_MESSAGE_LIMIT: Final = 10_000
#: A name longer than this is no tool's name: no suggestion is searched for it.
_LONGEST_NAME: Final = 100
#: Needs of a WrongToolError kept, at most, and the characters kept of each.
_NEEDS: Final = 5
_NEED_LENGTH: Final = 100
#: The least time left for formatting an async tool's value once the tool itself returned.
_LEAST_FORMAT_SECONDS: Final = 0.05


def lookup_key(name: str) -> str:
    """The key a tool is looked up by: `Uber.ride`, `uber_ride`, "`uber-ride`", `"uber ride"`
    and `uber_ride()` are one name (so two tools whose keys are equal cannot be told apart)."""
    name = name.strip().strip("\"'`").strip()
    return _SEPARATORS.sub("_", name.removesuffix("()")).casefold()


class ToolBox:
    """The tools of one agent, looked up by name and called safely.

    `prepare` and `execute` never raise for a mistake of the model or a failure of the tool:
    they return a ToolResult whose `error_kind` is "unknown_tool", "arguments", "timeout",
    "wrong_tool" (the tool raised WrongToolError), "vetoed" (it asked whether to run and was
    told no: CallRefusedError) or "exception". Only BaseExceptions that
    are not Exceptions (KeyboardInterrupt, SystemExit) propagate, so Ctrl-C still stops a
    run, even while it waits for a tool.

    Timeouts: a tool with a timeout runs in a daemon worker thread, and so does the formatting
    of its value (a result whose `__str__` hangs is the tool's fault). When the timeout passes
    the run goes on with a timeout result and the thread is abandoned, not killed (Python cannot
    kill a thread): it keeps running until the function returns or the process exits, and its
    result is discarded. A tool with `timeout=None` runs in the caller's thread, unbounded.
    Under the async driver an `async def` tool is a task on the running loop, cancelled and
    abandoned at its timeout in the same way: a value it returns late, having swallowed the
    cancellation, is never used. A tool's value is awaited for as long as it is awaitable, and
    a CancelledError the tool raises itself is its failure, not the run's: both drivers alike.
    """

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if not isinstance(tool, Tool):
                raise ConfigError(
                    f"tools must be Tool objects (use @tool or Tool.from_schema), got {tool!r}"
                )
            other = self._tools.setdefault(lookup_key(tool.name), tool)
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
        return self._tools.get(lookup_key(name))

    def suggest(self, name: str) -> str | None:
        """The closest tool name to an unknown `name`, or None when nothing is close."""
        key = lookup_key(name)
        if len(key) > _LONGEST_NAME:
            return None
        containing = [k for k in self._tools if len(key) >= 3 and (key in k or k in key)]
        if len(containing) == 1:
            return self._tools[containing[0]].name
        close = difflib.get_close_matches(key, list(self._tools), n=1, cutoff=0.5)
        return self._tools[close[0]].name if close else None

    def prepare(
        self, name: str, raw: str | dict[str, Any], lang: str = "en"
    ) -> Prepared | ToolResult:
        """Resolve and validate a call once: the call ready to run, or the ToolResult that
        says why it cannot run, in `lang` (an argument error included). The loop takes the
        repeat key and the arguments it runs from the Prepared, so no call is validated twice."""
        started = time.perf_counter()
        tool = self.resolve(name)
        if tool is None:
            error = self.unknown_tool_message(name, lang)
            return ToolResult(name, raw, error=error, error_kind="unknown_tool")
        try:
            arguments, repairs = tool.parse_arguments_with_repairs(raw, lang)
        except ToolArgumentError as error:
            message = str(error)
        except Exception as error:  # a broken convert or a non-str/dict input: still data
            message = _describe(error)
        else:
            return Prepared(tool, arguments, repairs, started, lang)
        seconds = time.perf_counter() - started
        return ToolResult(tool.name, raw, error=message, error_kind="arguments", seconds=seconds)

    def execute(self, call: Prepared, *, present: Callable[[Any], str] = str) -> ToolResult:
        """Run a prepared call and turn its value into text with `present`, both under the
        tool's timeout."""
        work = lambda: _run_and_show(call.tool, call.arguments, present)  # noqa: E731
        return call.finish(*_bounded(work, call.tool.timeout))

    async def aexecute(self, call: Prepared, *, present: Callable[[Any], str] = str) -> ToolResult:
        """`execute` for the async driver: a coroutine tool is awaited on the running loop (it
        may hold loop-bound resources), anything else runs in a worker thread; the timeout
        bounds the call and the formatting together."""
        tool = call.tool
        if not tool.is_async:
            return await asyncio.to_thread(self.execute, call, present=present)
        task = asyncio.ensure_future(_in_task(lambda: tool.invoke(call.arguments)))
        try:
            await asyncio.wait({task}, timeout=tool.timeout)
        except asyncio.CancelledError:  # the run itself is cancelled: so is its tool
            task.cancel()
            raise
        if not task.done():  # abandoned, as a worker thread is: a late value is never used
            task.cancel()
            task.add_done_callback(_retrieved)
            return call.finish("timeout", None)
        if task.cancelled():  # the tool raised CancelledError itself: its failure, not the run's
            return call.finish("exception", asyncio.CancelledError())
        error = task.exception()
        if isinstance(error, _Escaped):  # Ctrl-C in the tool: raised where the run can end on it
            raise error.error
        if error is not None:
            if not isinstance(error, Exception):
                raise error
            return call.finish("exception", error)
        value = task.result()
        left = None
        if tool.timeout is not None:
            spent = time.perf_counter() - call.started
            left = max(tool.timeout - spent, _LEAST_FORMAT_SECONDS)
        return call.finish(*await asyncio.to_thread(_bounded, lambda: _show(value, present), left))

    def call(self, name: str, raw: str | dict[str, Any]) -> ToolResult:
        """Resolve, validate, run: `prepare` then `execute`, for callers outside the loop."""
        prepared = self.prepare(name, raw)
        return prepared if isinstance(prepared, ToolResult) else self.execute(prepared)

    def unknown_tool_message(self, name: str, lang: str = "en") -> str:
        shown = " ".join(str(name).split())[:60]
        guess = self.suggest(name)
        hint = templates.note("did_you_mean", lang, tool=guess) if guess else ""
        text = templates.note(
            "unknown_tool", lang, tool=shown, tools=", ".join(self.names), hint=hint
        )
        return text.strip()


@dataclass(frozen=True)
class Prepared:
    """A call resolved to its tool and validated once: what runs, and what identifies it."""

    tool: Tool
    #: The arguments after repair and validation (JSON values).
    arguments: dict[str, Any]
    repairs: tuple[str, ...] = ()
    started: float = 0.0
    lang: str = "en"

    @property
    def key(self) -> tuple[str, str]:
        """The call's identity, so `Uber.ride {'n': '2'}` and `uber_ride {"n": 2}` are one
        call: the loop answers a repeat from the earlier result instead of running it."""
        return self.tool.name, json.dumps(self.arguments, sort_keys=True, default=str)

    def finish(self, outcome: str, value: Any, text: str | None = None) -> ToolResult:
        """The ToolResult for how the run went: ("ok", value, text), ("timeout", None) or
        ("exception", the error)."""
        tool, seconds = self.tool, time.perf_counter() - self.started
        if outcome == "ok":
            return ToolResult(
                tool.name, self.arguments, value=value, repairs=self.repairs,
                seconds=seconds, text=text,
            )  # fmt: skip
        if outcome == "timeout":
            seconds_allowed = f"{tool.timeout:g}" if tool.timeout is not None else "?"
            error = templates.note(
                "tool_timeout", self.lang, tool=tool.name, seconds=seconds_allowed
            )
        elif isinstance(value, CallRefusedError):  # asked and told no: not run, as a veto
            return ToolResult(
                tool.name, self.arguments, error=str(value), error_kind="vetoed",
                repairs=self.repairs, seconds=seconds,
            )  # fmt: skip
        else:
            error = templates.note("tool_failed", self.lang, tool=tool.name, error=_describe(value))
        wrong = isinstance(value, WrongToolError)
        return ToolResult(
            tool.name, self.arguments, error=error, error_kind="wrong_tool" if wrong else outcome,
            repairs=self.repairs, seconds=seconds, needs=_needs(value) if wrong else (),
        )  # fmt: skip


def _bounded(work: Callable[[], tuple[Any, ...]], timeout: float | None) -> tuple[Any, ...]:
    """`work()` within `timeout` seconds in a daemon thread, or ("timeout", None); inline when
    there is no timeout. BaseExceptions (Ctrl-C) are carried to the caller's thread."""
    if timeout is None:
        return work()
    return _in_thread(work, timeout, ("timeout", None))


def _in_thread(work: Callable[[], Any], timeout: float | None, late: Any = None) -> Any:
    """`work()` in a daemon thread, waited for `timeout` seconds (None: to the end); `late`
    when it has not finished by then. BaseExceptions are carried to the caller's thread."""
    box: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            box.append((True, work()))
        except BaseException as error:  # carried to the caller's thread and raised there
            box.append((False, error))

    worker = threading.Thread(target=run, name="textreact-tool", daemon=True)
    worker.start()
    worker.join(timeout)
    if not box:
        return late
    done, outcome = box[0]
    if not done:
        raise outcome
    return outcome


def _run_and_show(
    tool: Tool, arguments: dict[str, Any], present: Callable[[Any], str]
) -> tuple[Any, ...]:
    """("ok", value, text) | ("exception", error): the call and its formatting, as one unit."""
    try:
        value = settled(lambda: tool.invoke(arguments))
    except (Exception, asyncio.CancelledError) as error:  # a tool's CancelledError is its own
        return "exception", error
    return _show(value, present)


def _awaitable(value: Any) -> bool:
    """Whether a value is something to await, judged by its type alone: a returned object's
    own `__getattribute__` or `__class__` is never consulted."""
    kind = type(value)
    return issubclass(kind, types.CoroutineType) or callable(getattr(kind, "__await__", None))


async def asettled(call: Callable[[], Any]) -> Any:
    """What `call()` gives, awaited for as long as it is awaitable (an `async def` that returns
    a coroutine gives that coroutine's value): the async driver's reading of a tool's value
    and of `before_call`'s answer, so that neither is ever shown as `<coroutine object>`."""
    value = call()
    while _awaitable(value):
        value = await value
    return value


class _Escaped(Exception):
    """A KeyboardInterrupt or SystemExit raised in a tool's task, carried out of it as the
    task's exception: asyncio raises either out of the event loop itself when a task raises
    it, past every caller, where the run could not end as `interrupted`."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


async def _in_task(call: Callable[[], Any]) -> Any:
    """`asettled(call)` for a task of its own (`ToolBox.aexecute`), its KeyboardInterrupt or
    SystemExit carried as an `_Escaped`."""
    try:
        return await asettled(call)
    except (KeyboardInterrupt, SystemExit) as error:
        raise _Escaped(error) from None


def settled(call: Callable[[], Any]) -> Any:
    """`asettled` for the sync driver: an awaitable is run to the end on an event loop of its
    own, in a worker thread (the caller may itself be inside a running loop)."""
    value = call()
    return (
        _in_thread(lambda: asyncio.run(asettled(lambda: value)), None)
        if _awaitable(value)
        else value
    )


def _retrieved(task: asyncio.Future[Any]) -> None:
    """An abandoned task's end, read so that asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


def _show(value: Any, present: Callable[[Any], str]) -> tuple[Any, ...]:
    try:
        return "ok", value, present(value)
    except Exception as error:
        return "exception", error


def _needs(error: WrongToolError) -> tuple[str, ...]:
    """The first few needs a tool named, as short exact strs; anything but a tuple or list of
    strings is no needs (a tool's exception must not break the loop)."""
    try:
        needs = vars(error).get("needs", ())  # a property of a subclass is never run
    except TypeError:  # no __dict__
        return ()
    if type(needs) not in (tuple, list):
        return ()
    named = (str.__str__(n)[:_NEED_LENGTH] for n in needs[:_NEEDS] if issubclass(type(n), str))
    return tuple(n for n in named if n.strip())


def _describe(error: BaseException) -> str:
    """`Type: message`, the message cut to what an observation could ever show."""
    try:
        message = str.__str__(str(error))  # a str subclass's own methods are never called
    except Exception:  # an exception whose __str__ fails is still reported
        return type(error).__name__
    if len(message) > _MESSAGE_LIMIT:
        half = _MESSAGE_LIMIT // 2
        message = f"{message[:half]} … {message[-half:]}"
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
