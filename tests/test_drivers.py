"""The sync driver (`run`) and the async one (`arun`) behave as one: each case here runs under
both. What may need awaiting (an `async def before_call`, a coroutine a tool returns) is
awaited by either; a CancelledError a tool raises is that tool's failure; a tool past its
timeout is abandoned and its late value is never used."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from textreact import Agent, Result, ScriptedModel, Tool, tool

CALL = 'Thought: look it up.\nAction: probe\nAction Input: {"x": "a"}'
DONE = "Thought: done.\nFinal Answer: ok"
drivers = pytest.mark.parametrize("driver", ["run", "arun"])


def drive(driver: str, probe: Tool, **settings: Any) -> Result:
    """One call of `probe`, then an answer, under `driver`."""
    agent = Agent(
        ScriptedModel([CALL, DONE]), [dataclasses.replace(probe, name="probe")], **settings
    )
    return agent.run("q") if driver == "run" else asyncio.run(agent.arun("q"))


async def _inner() -> str:
    await asyncio.sleep(0)
    return "inner value"


@tool(timeout=5)
def plain(x: str) -> str:
    """Use this to probe."""
    return "plain value"


@tool(timeout=5)
def gives_a_coroutine(x: str) -> str:
    """Use this to probe."""
    return _inner()  # type: ignore[return-value]


@tool(timeout=5)
async def async_gives_a_coroutine(x: str) -> str:
    """Use this to probe."""
    return _inner()  # type: ignore[return-value]


@tool(timeout=None)
async def async_unbounded(x: str) -> str:
    """Use this to probe."""
    return await _inner()


@drivers
@pytest.mark.parametrize("probe", [gives_a_coroutine, async_gives_a_coroutine, async_unbounded])
def test_a_value_to_await_is_awaited_never_shown_as_a_coroutine(driver: str, probe: Tool):
    result = drive(driver, probe)
    (turn, _) = result.steps
    assert not turn.is_error
    assert turn.observation is not None and "inner value" in turn.observation
    assert "coroutine" not in turn.observation


async def _refuse(name: str, arguments: dict) -> str | None:
    await asyncio.sleep(0)
    return f"Refused: {name} is switched off."


async def _allow(name: str, arguments: dict) -> str | None:
    await asyncio.sleep(0)
    return None


class _Guard:
    """A callable object whose __call__ is async."""

    async def __call__(self, name: str, arguments: dict) -> str | None:
        return "Refused by the guard." if arguments.get("x") == "a" else None


@drivers
@pytest.mark.parametrize(
    ("hook", "said"),
    [(_refuse, "Refused: probe is switched off."), (_Guard(), "Refused by the guard.")],
)
def test_an_async_before_call_is_awaited_and_can_veto(driver: str, hook: Any, said: str):
    result = drive(driver, plain, before_call=hook)
    (turn, _) = result.steps
    assert turn.note == "vetoed"
    assert turn.observation is not None and turn.observation.endswith(said)
    assert "coroutine" not in turn.observation


@drivers
def test_an_async_before_call_that_allows_lets_the_call_run(driver: str) -> None:
    result = drive(driver, plain, before_call=_allow)
    (turn, _) = result.steps
    assert turn.note is None and not turn.is_error
    assert "plain value" in (turn.observation or "")


@drivers
def test_a_sync_before_call_is_called_under_both(driver: str) -> None:
    seen: list[str] = []
    result = drive(driver, plain, before_call=lambda name, arguments: seen.append(name))
    assert seen == ["probe"] and result.answer == "ok"


@tool(timeout=5)
async def cancels_itself(x: str) -> str:
    """Use this to probe."""
    raise asyncio.CancelledError


@tool(timeout=5)
def cancels_itself_sync(x: str) -> str:
    """Use this to probe."""
    raise asyncio.CancelledError


@tool(timeout=5)
def returns_a_cancelled_coroutine(x: str) -> str:
    """Use this to probe."""

    async def cancelled() -> str:
        raise asyncio.CancelledError

    return cancelled()  # type: ignore[return-value]


@drivers
@pytest.mark.parametrize(
    "probe", [cancels_itself, cancels_itself_sync, returns_a_cancelled_coroutine]
)
def test_a_tool_that_raises_cancelled_error_fails_as_a_tool(driver: str, probe: Tool) -> None:
    result = drive(driver, probe)
    assert result.stop_reason == "final_answer" and result.answer == "ok"
    (turn, _) = result.steps
    assert turn.is_error and turn.result is not None
    assert turn.result.error_kind == "exception"
    assert "CancelledError" in (turn.observation or "")


#: What a tool that swallowed its cancellation returned late, if anything used it.
LATE = "the late value"


@tool(timeout=0.05)
async def swallows_cancellation(x: str) -> str:
    """Use this to probe."""
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        await asyncio.sleep(0.05)
        return LATE
    return "never"


@tool(timeout=0.05)
def sleeps_past_its_timeout(x: str) -> str:
    """Use this to probe."""
    import time

    time.sleep(0.3)
    return LATE


@drivers
@pytest.mark.parametrize("probe", [swallows_cancellation, sleeps_past_its_timeout])
def test_a_tool_past_its_timeout_is_a_timeout_and_its_late_value_unused(driver: str, probe):
    result = drive(driver, probe)
    (turn, _) = result.steps
    assert turn.is_error and turn.result is not None and turn.result.error_kind == "timeout"
    assert LATE not in (turn.observation or "")
    assert result.answer == "ok"


def test_cancelling_arun_itself_still_cancels_it() -> None:
    """A CancelledError from outside (the caller's) is not a tool's failure."""

    @tool(timeout=30)
    async def slow(x: str) -> str:
        """Use this to probe."""
        await asyncio.sleep(30)
        return "never"

    agent = Agent(ScriptedModel([CALL, DONE]), [dataclasses.replace(slow, name="probe")])

    async def main() -> None:
        running = asyncio.ensure_future(agent.arun("q"))
        await asyncio.sleep(0.05)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(main())


def test_the_sync_driver_awaits_hooks_and_tools_inside_a_running_loop_too() -> None:
    """`run` called from async code (a notebook): what it awaits runs on a loop of its own."""

    async def main() -> Result:
        return drive("run", async_unbounded, before_call=_allow)

    result = asyncio.run(main())
    (turn, _) = result.steps
    assert not turn.is_error and "inner value" in (turn.observation or "")
