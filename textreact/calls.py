"""An action -> its result and observation, once: runs each new tool call through the ToolBox
and answers a repeated identical call from the first result instead of running it again.
Shared by the text loop and the native loop, so both treat calls exactly alike."""

from __future__ import annotations

import dataclasses
from typing import Any

from textreact import observation
from textreact.steps import Turn
from textreact.tools import ToolBox


class Calls:
    """The successful calls of one run, by identity (`ToolBox.call_key`)."""

    def __init__(self, toolbox: ToolBox, *, limit: int, lang: str = "en") -> None:
        self.toolbox = toolbox
        self.limit = limit
        self.lang = lang
        self._done: dict[tuple[str, str], Turn] = {}

    def run(self, turn: Turn, name: str, raw: str | dict[str, Any], *, again: bool) -> Turn:
        """`turn` with the call's result and observation. `again`: the turn before was a
        repeat too, so the model is in a loop and is asked to answer instead."""
        key = self.toolbox.call_key(name, raw)
        earlier = self._done.get(key) if key is not None else None
        if earlier is not None:
            text = observation.repeated_call(
                earlier.tool or name,
                earlier.index,
                earlier.observation or "",
                self.lang,
                again=again,
            )
            return dataclasses.replace(
                turn, result=earlier.result, observation=text, note="repeated_call"
            )
        result = self.toolbox.call(name, raw)
        text = observation.observe(result, limit=self.limit, lang=self.lang)
        turn = dataclasses.replace(turn, result=result, observation=text)
        if key is not None and not result.is_error:
            self._done[key] = turn
        return turn
