"""Long MCP results in pages: the first page is the call's result, ending with a note that says
how to read on; `read_more` (one tool beside the servers') gives the next pages.

A page is large enough for what real tools return in one piece (a screen of log, a small
file, a git log of a dozen commits) and arrives whole: an MCP tool's `result_limit` is the page
plus its note, so the loop's own cut (the agent's `observation_limit`, 500 characters by
default, head and tail) never falls inside it. A page ends at a line break where one is near."""

from __future__ import annotations

import itertools
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from textreact import templates
from textreact.errors import ConfigError
from textreact.tools import NotFound, Tool

__all__ = ["KEPT_CHARS", "PAGE", "READ_MORE", "Pages"]

#: Characters of one page.
PAGE: Final = 4000
#: Room for a page's note, beyond the page.
NOTE_ROOM: Final = 400
#: The name of the tool that reads on.
READ_MORE: Final = "read_more"
#: Long results kept for reading on, the oldest dropped first.
_KEPT: Final = 64
#: Characters of the long results kept, all together (the size is the server's choice: 70
#: results of 8 MB kept whole held 724 MB); past it the oldest are dropped first, and a result
#: longer than this by itself is kept in part.
KEPT_CHARS: Final = 32_000_000
#: The ids of dropped results remembered, so that asking for one says it was dropped.
_DROPPED_IDS: Final = 1024
#: How far back from a page's end a line break is looked for.
_BREAK_WINDOW: Final = 0.25


@dataclass(frozen=True)
class _Kept:
    """A long result as kept: its first pages (every page, unless it was longer than the cap),
    their characters, and the characters after them that were not kept."""

    pages: list[str]
    chars: int
    lost: int


class Pages:
    """The long results of one connection, kept for `read_more` (thread-safe: the sync driver
    calls tools from worker threads). A result's id holds a random part: under `textreact serve
    --mcp` every client's runs share the connection, and one client's model must not read
    another's result by counting ids. At most `kept_chars` characters of pages are kept in
    all: the oldest results are dropped first, and a longer result is kept in part."""

    def __init__(self, *, page: int = PAGE, kept_chars: int = KEPT_CHARS, lang: str = "en") -> None:
        if page < 1 or kept_chars < page:
            raise ConfigError(
                f"a page must hold at least 1 character and the results kept at least a page; "
                f"got page={page}, kept_chars={kept_chars}"
            )
        self.page = page
        self.kept_chars = kept_chars
        self.lang = lang
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._chars = 0
        self._dropped: OrderedDict[str, None] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def first(self, text: str) -> str:
        """`text` whole when it fits a page, else its first page with the note."""
        if len(text) <= self.page:
            return text
        kept = self._keep(text)
        with self._lock:
            key = f"r{next(self._ids)}-{secrets.token_hex(3)}"
            self._kept[key] = kept
            self._chars += kept.chars
            while len(self._kept) > _KEPT or self._chars > self.kept_chars:
                old, dropped = self._kept.popitem(last=False)
                self._chars -= dropped.chars
                self._dropped[old] = None
                if len(self._dropped) > _DROPPED_IDS:
                    self._dropped.popitem(last=False)
        return self._shown(key, kept, 1)

    def _keep(self, text: str) -> _Kept:
        """`text`'s pages, as many as the cap holds (the first always)."""
        pages, chars = [], 0
        for start, end in _cuts(text, self.page):
            if chars + end - start > self.kept_chars:
                break
            pages.append(text[start:end])
            chars += end - start
        return _Kept(pages, chars, len(text) - chars)

    def read(self, result: str, page: int) -> str:
        """Page `page` (from 1) of the kept result `result`, with its note; a NotFound that
        says what exists for anything else, and that a dropped result was dropped."""
        key = result.strip()
        with self._lock:
            kept = self._kept.get(key)
            dropped = key in self._dropped
        if kept is None:
            name = "mcp_dropped_result" if dropped else "mcp_no_such_result"
            return NotFound(templates.note(name, self.lang, result=result))
        if not 1 <= page <= len(kept.pages):
            return NotFound(
                templates.note(
                    "mcp_no_such_page", self.lang, pages=str(len(kept.pages)), result=result
                )
            )
        return self._shown(key, kept, page)

    def _shown(self, key: str, kept: _Kept, page: int) -> str:
        pages = kept.pages
        left = sum(len(p) for p in pages[page:])
        count = {"page": str(page), "pages": str(len(pages))}
        if not left and kept.lost:
            note = templates.note("mcp_not_kept", self.lang, **count, lost=str(kept.lost))
        elif not left:
            note = templates.note("mcp_last_page", self.lang, **count)
        else:
            note = templates.note(
                "mcp_more_in_part" if kept.lost else "mcp_more", self.lang, **count,
                left=str(left + kept.lost), lost=str(kept.lost), tool=READ_MORE,
                call=f'{{"result": "{key}", "page": {page + 1}}}',
            )  # fmt: skip
        return f"{pages[page - 1]}\n[{note}]"

    def tool(self) -> Tool:
        """The `read_more` tool over these pages."""
        return Tool(
            READ_MORE,
            templates.note("mcp_read_more", self.lang),
            {
                "type": "object",
                "properties": {
                    "result": {"type": "string", "description": "the result's id, e.g. r1-0a1b2c"},
                    "page": {"type": "integer", "minimum": 1, "description": "the page to read"},
                },
                "required": ["result", "page"],
                "additionalProperties": False,
            },
            self.read,
            timeout=None,
            example={"result": "r1-0a1b2c", "page": 2},
            cache=False,
            result_limit=self.page + NOTE_ROOM,
        )


def split(text: str, size: int) -> list[str]:
    """`text` in pages of at most `size` characters, each ending at a line break when one is in
    its last quarter."""
    return [text[start:end] for start, end in _cuts(text, size)]


def _cuts(text: str, size: int) -> Iterator[tuple[int, int]]:
    """Where each page of `text` starts and ends, found by index in one pass: slicing the rest
    of the text off after each page copied it again (quadratic: 20 MB took 4 s)."""
    start, end = 0, len(text)
    least = int(size * (1 - _BREAK_WINDOW))
    while end - start > size:
        cut = text.rfind("\n", start + least, start + size)
        cut = start + size if cut < 0 else cut + 1
        yield start, cut
        start = cut
    if start < end:
        yield start, end
