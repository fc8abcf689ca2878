"""Values -> JSON text that stays one line under every line splitter, and bytes that always
encode: for JSONL files and server-sent events, whose readers split lines.

`json.dumps(..., ensure_ascii=False)` escapes every C0 control character but writes NEL
(U+0085) and the line and paragraph separators (U+2028, U+2029) raw, and `str.splitlines`
(and readers built on it, such as httpx's `iter_lines`) cuts a line at each of them. Written as
JSON escapes, they read back as the same string. A lone surrogate (legal in a server's JSON,
never in UTF-8) is written as its JSON escape by `encoded`, which reads back the same too."""

from __future__ import annotations

import json
from typing import Any, Final

#: The characters `str.splitlines` breaks at that `json.dumps` leaves raw, and their escapes.
_BREAKS: Final = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))

__all__ = ["dumps", "encoded"]


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **options)` with no character any line splitter
    breaks at (`options` must not ask for indentation, which writes line breaks itself)."""
    text = json.dumps(value, ensure_ascii=False, **options)
    if text.isascii():
        return text
    for char, escape in _BREAKS:
        if char in text:
            text = text.replace(char, escape)
    return text


def encoded(value: Any, **options: Any) -> bytes:
    """`dumps` as UTF-8, a lone surrogate written as its JSON escape (it can stand only inside
    a JSON string, where the escape means the same)."""
    return dumps(value, **options).encode("utf-8", "backslashreplace")
