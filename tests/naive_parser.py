"""A deliberately naive ReAct parser, LangChain style: one regex and json.loads. The fuzz kit's
tests show which noise families it fails, so they prove the kit catches real parser bugs."""

from __future__ import annotations

import json
import re
from typing import Any

_ACTION = re.compile(r"Action\s*\d*\s*:(.*?)\nAction\s*\d*\s*Input\s*\d*\s*:[\s]*(.*)", re.DOTALL)
_FINAL = "Final Answer:"


def parse(text: str) -> dict[str, Any]:
    match = _ACTION.search(text)
    if match:
        raw = match.group(2).strip()
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        return {"kind": "action", "tool": match.group(1).strip(), "input": value}
    if _FINAL in text:
        return {"kind": "final", "answer": text.split(_FINAL)[-1].strip()}
    return {"kind": "error", "message": "no Action or Final Answer"}
