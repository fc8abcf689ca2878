"""MCP tool names -> names every protocol and provider accepts (`^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`).

An MCP name may be 128 characters long, hold dots, slashes or other characters, and start with a
digit; two servers may both offer `search`. Each name is mapped on its own first (characters
outside the set become `_`, a name that does not start with a letter or `_` gets one, a long one
is cut and given a short hash of the whole so that two long names stay apart); where two mapped
names would be one tool to textreact (`ToolBox` ignores case and `_`/`.`/`-` differences), or a
name is taken or refused by `Tool` (`none`, `final_answer`), each of them is prefixed with its
server's name. The original name is kept beside the mapped one for the call."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Final

from textreact.errors import ConfigError
from textreact.tools import Tool
from textreact.tools.box import lookup_key

__all__ = ["MAX_NAME", "map_names", "safe_name"]

#: The longest name OpenAI, Anthropic and Gemini all accept.
MAX_NAME: Final = 64
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")
_HASHED: Final = 8


def safe_name(name: str) -> str:
    """One name made acceptable on its own, the same name always giving the same result."""
    safe = _UNSAFE.sub("_", name) or "_"
    if not (safe[0].isalpha() or safe[0] == "_"):
        safe = "_" + safe
    if len(safe) > MAX_NAME:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASHED]
        safe = f"{safe[: MAX_NAME - _HASHED - 1]}_{digest}"
    return safe


def map_names(tools: Sequence[tuple[str, str]], reserved: Collection[str] = ()) -> list[str]:
    """The mapped name of each (server, original name), in order: its safe name where that is
    unique, else `server_name` (made safe); `reserved` names are taken already (textreact's
    own tools beside the servers'). A clash that is still left (one server offering both `a.b`
    and `a_b`) is told apart by a number."""
    first = [safe_name(original) for _, original in tools]
    taken = {lookup_key(name) for name in reserved}
    counts = Counter(lookup_key(name) for name in first)
    mapped = [
        name
        if counts[lookup_key(name)] == 1 and lookup_key(name) not in taken and _accepted(name)
        else safe_name(f"{server}_{original}")
        for name, (server, original) in zip(first, tools, strict=True)
    ]
    seen = set(taken)
    unique = []
    for name in mapped:
        candidate, number = name, 1
        while lookup_key(candidate) in seen or not _accepted(candidate):
            number += 1
            suffix = f"_{number}"
            candidate = name[: MAX_NAME - len(suffix)] + suffix
        seen.add(lookup_key(candidate))
        unique.append(candidate)
    return unique


def _accepted(name: str) -> bool:
    """Whether `Tool` takes `name` (it refuses names a model writes to mean "no action" or the
    final answer): asked of `Tool` itself, so the two cannot disagree."""
    try:
        Tool(name, "-")
    except ConfigError as error:
        return error.field != "name"
    return True
