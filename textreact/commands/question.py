"""The QUESTION argument of `run` and `prompt`: the text itself, `-` for standard input, `@FILE`
for a UTF-8 file; text that is not UTF-8 and an empty question are usage errors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO

from textreact.errors import ConfigError

__all__ = ["QUESTION_HELP", "read_question"]

QUESTION_HELP = (
    "the question; - reads it from standard input, @FILE from a UTF-8 file "
    "(@@... for a question that starts with @)"
)


def read_question(text: str, stdin: IO[str] | None = None) -> str:
    """The question as given: the argument itself, `-` for standard input, `@FILE` for a file
    (`@@...` for a question that starts with @). Text that is not UTF-8 (an argument's bytes
    arrive as surrogate escapes) and an empty question are ConfigErrors."""
    if text == "-":
        stream = stdin if stdin is not None else sys.stdin
        buffer = getattr(stream, "buffer", None)
        raw: bytes | str = buffer.read() if buffer is not None else stream.read()
        return _question_text(raw, "the question on standard input")
    if text.startswith("@@"):
        return _question_text(text[1:], "the question")
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise ConfigError(
                f"cannot read the question file {str(path)!r}: {exc.strerror or exc}; to ask a "
                "question that starts with @, write @@"
            ) from None
        return _question_text(raw, f"the question file {str(path)!r}")
    return _question_text(text, "the question")


def _question_text(raw: bytes | str, source: str) -> str:
    from textreact.compare.suite import decode_utf8

    if isinstance(raw, bytes):
        text = decode_utf8(raw, source)
    else:
        text = raw
        bad = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
        if bad is not None:
            raise ConfigError(
                f"{source} is not UTF-8 text (character {bad} is {text[bad]!r}, an undecodable "
                "byte); set a UTF-8 locale, or pass it in a UTF-8 file with @FILE"
            )
    text = text.strip()
    if not text:
        raise ConfigError(f"{source} is empty: ask something")
    return text
