"""The live view of `textreact run`: each turn shown on stderr as it happens, in colour on a
terminal and as plain text when piped. What the model and the tools wrote is shown `visible`:
an escape sequence in a tool's output must not reach the terminal."""

from __future__ import annotations

import json
import textwrap
from typing import IO, Any

from textreact.commands.terminal import json_text
from textreact.untrusted import visible

__all__ = ["LiveView"]


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
                shown = content if isinstance(content, str) else json_text(message, self.out)
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
