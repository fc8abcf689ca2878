"""Tools + a step's words -> how well each tool fits them: BM25 (the `bm25s` library) over each
tool's name, description and parameters, for `tool_budget`. No model is asked: ranking 150
tools must cost far less than the step it serves.

Words are cut the same way for tools and queries, in English and Chinese alike: a tool name is
split where its words meet (`get_current_time`, `fs.read-file`; a camelCase `gitLog` counts as
itself and as its parts, so `GitHub` still matches `github`), Latin words are lower-cased and
stripped of a plural `s`, and a run of CJK characters (which has no spaces between words)
becomes its overlapping character pairs (`查询天气` -> 查询, 询天, 天气), so a two-character word
matches wherever it stands. Stop words are the library's own English and Chinese lists."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import regex

from textreact.errors import MissingExtraError

if TYPE_CHECKING:
    from textreact.tools import Tool

__all__ = [
    "INSTALL_HINT",
    "Relevance",
    "indexed",
    "ranked_texts",
    "relevance_of",
    "require_bm25s",
    "words",
]

#: What to install for `tool_budget` (`Agent(max_tools=...)`, `--max-tools`).
INSTALL_HINT: Final = "pip install 'textreact[budget]'"

_CJK: Final = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}"
#: A CJK run, or a run of other letters and digits (`_`, `.`, `-` and spaces end it).
_TOKEN: Final = regex.compile(rf"[{_CJK}]+|(?:(?![{_CJK}])[\p{{L}}\p{{N}}])+")
_CJK_RUN: Final = regex.compile(rf"[{_CJK}]")
#: Where two words of a camelCase name meet: `gitLog`, `HTTPServer`, `utf8Decode`.
_CAMEL: Final = regex.compile(r"(?<=[\p{Ll}\p{N}])(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})")


def require_bm25s() -> Any:
    """The `bm25s` module, or a MissingExtraError that says how to install it."""
    try:
        import bm25s
    except ImportError as error:
        raise MissingExtraError(
            f"a tool budget (max_tools, --max-tools) ranks tools with bm25s ({error}): "
            f"{INSTALL_HINT}"
        ) from None
    return bm25s


def words(text: str) -> list[str]:
    """The words BM25 counts in `text`, in order (repeats kept)."""
    english, chinese = _stopwords()
    found = []
    for token in _TOKEN.findall(text):
        if _CJK_RUN.match(token):
            pairs = (token[i : i + 2] for i in range(max(len(token) - 1, 1)))
            found.extend(p for p in pairs if p not in chinese)
            continue
        parts = _CAMEL.split(token)
        for part in (token, *parts) if len(parts) > 1 else parts:
            word = part.casefold()
            if len(word) > 1 and word not in english:
                found.append(_singular(word))
    return found


@functools.cache
def _stopwords() -> tuple[frozenset[str], frozenset[str]]:
    """bm25s's English (NLTK's) and Chinese stop words, read once."""
    from bm25s.stopwords import STOPWORDS_CHINESE, STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS), frozenset(STOPWORDS_CHINESE)


def _singular(word: str) -> str:
    """Harman's S-stemmer: `files` and `file`, `queries` and `query` count as one word."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def tool_text(tool: Tool) -> str:
    """What a tool is ranked on: its name (twice: two or three words that say what it does,
    beside a description that may run to paragraphs), description, and each parameter's
    name and description."""
    text = [tool.name, tool.name, tool.description]
    properties = tool.parameters.get("properties")
    for name, schema in (properties if isinstance(properties, dict) else {}).items():
        text.append(str(name))
        if isinstance(schema, dict) and isinstance(schema.get("description"), str):
            text.append(schema["description"])
    return "\n".join(text)


def ranked_texts(tools: Sequence[Tool]) -> tuple[tuple[str, str], ...]:
    """Each tool's name and the text it is ranked on: all an index of them depends on."""
    return tuple((t.name, tool_text(t)) for t in tools)


def relevance_of(tools: Sequence[Tool]) -> Relevance:
    """The index of `tools`, shared by every run over the same tool set (`indexed`): built,
    it costs nothing more, where building it took seconds for 2,000 tools with long
    descriptions, before each run's first request."""
    return indexed(ranked_texts(tools))


#: Tool sets whose index is kept (an agent's, an MCP server's, a compare run's few).
_INDEXES: Final = 4


@functools.lru_cache(maxsize=_INDEXES)
def indexed(documents: tuple[tuple[str, str], ...]) -> Relevance:
    """The index of `documents` (each a tool's name and text), built once while it is among
    the _INDEXES latest asked for: keyed on the text itself, so that a tool set that changed
    in any word it is ranked on is indexed anew. Its `cache_info()` counts the builds."""
    return Relevance(documents)


class Relevance:
    """A BM25 index of some tools (`documents`: each one's name and text): `scores(text)` is
    cheap per step. Read only once built, so one index serves runs on several threads."""

    def __init__(self, documents: Sequence[tuple[str, str]]) -> None:
        bm25s = require_bm25s()
        self.names = [name for name, _ in documents]
        self._index = bm25s.BM25()
        self._index.index([words(text) for _, text in documents], show_progress=False)

    def scores(self, text: str) -> dict[str, float]:
        """Each tool's BM25 score for the words of `text` (each word counted once, so a long
        observation that repeats a word does not drown the question)."""
        query = list(dict.fromkeys(words(text)))
        values = self._index.get_scores(query) if query else [0.0] * len(self.names)
        return {name: float(v) for name, v in zip(self.names, values, strict=True)}
