"""The baseline textreact must beat: the ReAct loop of a typical tutorial, kept as one would
write it from a blog post, so the model matrix can show what the engine adds on the same model.

The prompt is LangChain's hub ReAct prompt (`hwchase17/react`), the tools listed as
`name: description` with their JSON Schema; a greedy regex reads `Action:` / `Action Input:` or
`Final Answer:`; the tool is called with `json.loads` of the input; the observation goes back
in the next user message. No repair, no hints, no grammar. Deliberately not textreact's code:
sharing any of it would measure textreact against itself."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

PROMPT = """Answer the following questions as best you can. You have access to the following tools:

{tools}

Use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action: the action to take, should be one of [{names}]
Action Input: the input to the action
Observation: the result of the action
... (this Thought/Action/Action Input/Observation can repeat N times)
Thought: I now know the final answer
Final Answer: the final answer to the original input question

Begin!"""
ACTION = re.compile(r"Action\s*:\s*(.*?)\s*\n\s*Action\s*Input\s*:\s*(.*)", re.DOTALL)
FINAL = re.compile(r"Final Answer\s*:\s*(.*)", re.DOTALL)


@dataclass
class NaiveRun:
    """What one naive run did: its answer (None: none), its calls and its cost."""

    answer: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


def run(model: Any, tools: list[Any], question: str, *, max_steps: int = 5) -> NaiveRun:
    """The tutorial loop over textreact `Tool`s, through a client's plain `complete`."""
    by_name = {t.name: t for t in tools}
    lines = [f"{t.name}: {t.description} Arguments: {json.dumps(t.parameters)}" for t in tools]
    system = PROMPT.format(tools="\n".join(lines), names=", ".join(by_name))
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Question: {question}"},
    ]
    out = NaiveRun()
    started = time.perf_counter()
    for _ in range(max_steps):
        completion = model.complete(messages, stop=["\nObservation:"])
        out.prompt_tokens += completion.usage.prompt_tokens
        out.completion_tokens += completion.usage.completion_tokens
        text = completion.text or ""
        if final := FINAL.search(text):
            out.answer = final.group(1).strip()
            break
        if not (action := ACTION.search(text)):
            out.answer = text.strip()  # the tutorial takes a reply with no action as the answer
            break
        name, raw = action.group(1).strip(), action.group(2).strip()
        try:
            arguments = json.loads(raw)
            out.calls.append({"tool": name, "arguments": arguments})
            observation = str(by_name[name](**arguments))
        except Exception as exc:  # the tutorial shows the error and goes on
            out.calls.append({"tool": name, "arguments": raw})
            observation = f"Error: {exc}"
        messages.append({"role": "assistant", "content": text})
        messages.append({"role": "user", "content": f"Observation: {observation}"})
    out.seconds = time.perf_counter() - started
    return out
