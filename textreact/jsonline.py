"""Values -> JSON text that stays one line under every line splitter, and bytes that always
encode: for JSONL files and server-sent events, whose readers split lines.

`json.dumps(..., ensure_ascii=False)` escapes every C0 control character but writes NEL
(U+0085) and the line and paragraph separators (U+2028, U+2029) raw, and `str.splitlines`
(and readers built on it, such as httpx's `iter_lines`) cuts a line at each of them. Written as
JSON escapes, they read back as the same string. A lone surrogate (legal in a server's JSON,
never in UTF-8) is written as its JSON escape by `encoded`, which reads back the same too.

JSON text read with `as_written` keeps each number with a fraction or an exponent as a
`Number`, written back as its text: a float cannot hold every number JSON can write (`1e-400`
reads as 0.0, `1e400` as infinity, which `json.dumps` writes as `Infinity`, no JSON at all),
so a record of what a model wrote keeps what it wrote."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any, Final

#: The characters `str.splitlines` breaks at that `json.dumps` leaves raw, and their escapes.
_BREAKS: Final = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))

__all__ = ["Number", "as_written", "dumps", "encode", "encoded"]


@dataclass(frozen=True)
class Number:
    """A JSON number as it was written (`1e-400`, `1.10`), for `encode` to write back."""

    text: str


def as_written(text: str) -> Any:
    """JSON text -> its value, each number with a fraction or an exponent a `Number`; raises
    ValueError for text that is not JSON as RFC 8259 writes it (`NaN` and `Infinity` are not)
    or that sets a member twice (which of the two was meant is a guess), RecursionError for
    text nested past what `json` reads."""
    return json.loads(
        text, parse_float=Number, parse_constant=_not_json, object_pairs_hook=_members_once
    )


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _members_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) < len(pairs):
        raise ValueError("a member is set twice")
    return members


def encode(value: Any, **options: Any) -> str:
    """`json.dumps(value, **options)`, each `Number` in `value` written as its text (JSON
    text the encoder cannot write itself: it is written as a string that no other string in
    the value can be, then put in that string's place)."""
    fallback = options.pop("default", None)
    numbers: list[str] = []
    mark = ""

    def written(item: Any) -> Any:
        nonlocal mark
        if isinstance(item, Number):
            mark = mark or f"textreact-number-{secrets.token_hex(8)}-"
            numbers.append(item.text)
            return f"{mark}{len(numbers) - 1}"
        if fallback is None:
            raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")
        return fallback(item)

    text = json.dumps(value, default=written, **options)
    for index, number in enumerate(numbers):
        text = text.replace(f'"{mark}{index}"', number, 1)
    return text


def dumps(value: Any, **options: Any) -> str:
    """`encode(value, ensure_ascii=False, **options)` with no character any line splitter
    breaks at (`options` must not ask for indentation, which writes line breaks itself)."""
    text = encode(value, ensure_ascii=False, **options)
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
