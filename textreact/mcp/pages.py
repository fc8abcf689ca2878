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
from typing import Final

from textreact import templates
from textreact.tools import NotFound, Tool

__all__ = ["PAGE", "READ_MORE", "Pages"]

#: Characters of one page.
PAGE: Final = 4000
#: Room for a page's note, beyond the page.
NOTE_ROOM: Final = 400
#: The name of the tool that reads on.
READ_MORE: Final = "read_more"
#: Long results kept for reading on, the oldest dropped first.
_KEPT: Final = 64
#: How far back from a page's end a line break is looked for.
_BREAK_WINDOW: Final = 0.25


class Pages:
    """The long results of one connection, kept for `read_more` (thread-safe: the sync driver
    calls tools from worker threads). A result's id holds a random part: under `textreact serve
    --mcp` every client's runs share the connection, and one client's model must not read
    another's result by counting ids."""

    def __init__(self, *, page: int = PAGE, lang: str = "en") -> None:
        self.page = page
        self.lang = lang
        self._kept: OrderedDict[str, list[str]] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def first(self, text: str) -> str:
        """`text` whole when it fits a page, else its first page with the note."""
        if len(text) <= self.page:
            return text
        pages = split(text, self.page)
        with self._lock:
            key = f"r{next(self._ids)}-{secrets.token_hex(3)}"
            self._kept[key] = pages
            while len(self._kept) > _KEPT:
                self._kept.popitem(last=False)
        return self._shown(key, pages, 1)

    def read(self, result: str, page: int) -> str:
        """Page `page` (from 1) of the kept result `result`, with its note; a NotFound that
        says what exists for anything else."""
        with self._lock:
            pages = self._kept.get(result.strip())
        if pages is None:
            return NotFound(templates.note("mcp_no_such_result", self.lang, result=result))
        if not 1 <= page <= len(pages):
            return NotFound(
                templates.note("mcp_no_such_page", self.lang, pages=str(len(pages)), result=result)
            )
        return self._shown(result.strip(), pages, page)

    def _shown(self, key: str, pages: list[str], page: int) -> str:
        left = sum(len(p) for p in pages[page:])
        if not left:
            note = templates.note("mcp_last_page", self.lang, page=str(page), pages=str(len(pages)))
        else:
            note = templates.note(
                "mcp_more", self.lang, page=str(page), pages=str(len(pages)), left=str(left),
                tool=READ_MORE, call=f'{{"result": "{key}", "page": {page + 1}}}',
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
    pages = []
    while len(text) > size:
        cut = text.rfind("\n", int(size * (1 - _BREAK_WINDOW)), size)
        cut = size if cut < 0 else cut + 1
        pages.append(text[:cut])
        text = text[cut:]
    return [*pages, text] if text else pages
