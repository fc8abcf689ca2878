"""What a command prints: text that never fails on a character the stream's encoding lacks (a
lone surrogate from a server, say, is written as a backslash escape, never a crash that loses
the answer), and JSON that stays valid JSON on any stream (ASCII escapes where the stream cannot
take UTF-8)."""

from __future__ import annotations

import sys
from typing import Any

from textreact import jsonline

__all__ = ["SafeText", "json_text", "progress"]


class SafeText:
    """A text stream that never fails on a character its encoding cannot write: such characters
    are written as backslash escapes instead (what Python's `backslashreplace` does)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if not _encodable(text, self._stream):
            encoding = _encoding(self._stream)
            text = text.encode(encoding, "backslashreplace").decode(encoding)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _encoding(stream: Any) -> str:
    return getattr(stream, "encoding", None) or "utf-8"


def _encodable(text: str, stream: Any) -> bool:
    try:
        text.encode(_encoding(stream))
    except UnicodeEncodeError:
        return False
    return True


def json_text(data: Any, stream: Any) -> str:
    """`data` as JSON that `stream` can write as it is: readable UTF-8 where the stream takes it,
    ASCII escapes otherwise (a lone surrogate, an ASCII-only terminal), so it stays valid JSON."""
    text = jsonline.encode(data, ensure_ascii=False, indent=2)
    return text if _encodable(text, stream) else jsonline.encode(data, ensure_ascii=True, indent=2)


def progress(message: str) -> None:
    """A line of progress (a download, the embedded model starting) on stderr, at once."""
    print(message, file=sys.stderr, flush=True)
