"""Action line and Action Input text -> tool name and arguments: the name unwrapped from its
markup, call syntax (`search("x")`, `Search[x]`, `search {…}`), and the input as a dict when it
is JSON-like (through `jsonish`), else as the string written."""

from __future__ import annotations

import ast
import keyword
import re
from functools import cache, lru_cache
from typing import Any, NamedTuple

from textreact import grammar, jsonish
from textreact.parsing.keywords import spelled_keyword
from textreact.parsing.messages import states_intention

#: What a tool call reads as: name, the arguments as written, as parsed, and the repairs.
Call = tuple[str, str, "dict[str, Any] | str", tuple[str, ...]]

#: Action values that mean "no action".
NO_ACTION = frozenset(
    {"none", "n/a", "na", "no action", "no tool", "nothing", "null", "无", "没有", "不需要"}
)
#: The same words followed by an explanation: `None (direct response required)`, `N/A - I
#: can answer`, `No tool needed`, `无（直接回答）`. A name that only starts with one of them
#: (`none_tool`, `nothing_found`, `nonexistent`) is a name.
_NO_ACTION_LEAD = (
    r"(?:(?:none|nothing|null|nil|n/a|no[ _-]?(?:action|tool|function)s?|无|没有|不需要)"
    r"(?=\s|[^\w/.\-]|\.(?!\w)|\Z)"
    r"|(?:na|no)(?=[ \t]*(?:[(（\[,;:!—–]|\.(?!\w)|\Z)|[ \t]+-))"
)
_WRAPPERS = (("**", "**"), ("__", "__"), ("*", "*"), ("`", "`"), ("[", "]"), ('"', '"'),
             ("'", "'"), ("<", ">"))  # fmt: skip
#: Every character a wrapper starts or ends with.
_MARKS = frozenset("".join(left + right for left, right in _WRAPPERS))
_FENCED = r"(?s)```[\w-]*[ \t]*\n?(.*?)\n?```"
_PLAIN_NAME = re.compile(r"\w(?:[\w .\-/]*\w)?")


def tool_name(written: str) -> str:
    """`[search]`, `` `search` ``, `**search**.` -> `search`; spaces inside a name are kept."""
    name = written.strip().partition("\n")[0].strip()
    return _unwrapped(name) if len(name) <= 200 else _unwrap(name)


def _unwrap(name: str) -> str:
    if _PLAIN_NAME.fullmatch(name):
        return name
    if not name or (name[0] not in _MARKS and name[-1] not in _MARKS and name[-1] not in ".,:;)"):
        return name  # nothing to unwrap: each pass below would leave it as it is
    for _ in range(3):
        before = name
        name = name.rstrip(".,:;").strip()
        for left, right in _WRAPPERS:
            if (
                len(name) > len(left) + len(right)
                and name.startswith(left)
                and name.endswith(right)
            ):
                name = name[len(left) : -len(right)].strip()
        if name.endswith("()"):
            name = name[:-2]
        # Markup opened or closed on one side only: the keyword line took the opening `**` of
        # `**Action: search**`, or the model never closed `Action: **search`.
        for mark in ("**", "__", "`"):
            if name.endswith(mark) and not name.startswith(mark):
                name = name[: -len(mark)].strip()
            elif name.startswith(mark) and not name.endswith(mark):
                name = name[len(mark) :].strip()
        if name == before:
            break
    return name


#: A run names the same few tools turn after turn.
_unwrapped = lru_cache(maxsize=512)(_unwrap)


def is_no_action(written: str) -> bool:
    """`Action: None` and its kin, with or without an explanation after the word."""
    return _names_no_action(written) if len(written) <= 200 else _no_action(written)


def _no_action(written: str) -> bool:
    name = tool_name(written).lower()
    return name in NO_ACTION or _no_action_lead().match(name) is not None


#: A run names the same few tools, and the fast path and the reader both ask about each.
_names_no_action = lru_cache(maxsize=512)(_no_action)


@cache
def _no_action_lead() -> re.Pattern[str]:
    return re.compile(_NO_ACTION_LEAD)


def names_final_answer(tool: str) -> bool:
    """`final_answer`, `Final Answer`, `最终答案`: the pseudo-tool some formats end a run with."""
    folded = tool.lower()
    return ("answer" in folded or "答" in folded) and (
        spelled_keyword(f"{tool}:") == grammar.FINAL_ANSWER
    )


#: `name=` at the start of an Action Input: keyword arguments written without the call around
#: them. Longer inputs are left as text rather than handed to `ast.parse`.
_KEYWORD_ARGUMENT = r"[A-Za-z_]\w*[ \t]*=(?!=)"
_KEYWORDS_LIMIT = 2_000


def _unquote(raw: str) -> tuple[str, tuple[str, ...]]:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'`\"" and raw[0] not in raw[1:-1]:
        return raw[1:-1], ("quotes",)
    return raw, ()


def read_input(raw: str) -> tuple[dict[str, Any] | str, tuple[str, ...]]:
    """An Action Input: a dict when it is a JSON-like object, a JSON string unquoted, else the
    text as written (a tool that knows its schema decides what a plain string means)."""
    if not raw:
        return {}, ("empty_input",)
    # Without a bracket or a leading quote, JSON could only read a number or a word, which
    # stay text anyway: skip it (and the exceptions a failed decode costs).
    if "{" in raw or "[" in raw or raw[0] in "\"'":
        try:
            value, repairs = jsonish.loads(raw)
        except jsonish.AmbiguousJsonError:
            raise  # the caller reports it: reading it either way would be a silent pick
        except jsonish.JsonishError:
            pass
        else:
            return (value, repairs) if isinstance(value, (dict, str)) else (raw, ())
    fence = re.fullmatch(_FENCED, raw) if raw.startswith("```") else None
    if fence:
        return _unquote(fence.group(1).strip())[0], ("code_fence",)
    if len(raw) <= _KEYWORDS_LIMIT and re.match(_KEYWORD_ARGUMENT, raw):
        arguments = _call_arguments(raw)  # `query="x", n=3`, as inside a call
        if isinstance(arguments, dict):
            return arguments, ("keyword_arguments",)
    return _plain(raw)


def _plain(raw: str) -> tuple[str, tuple[str, ...]]:
    """A plain-string input as written, unquoted; without the model's words about the call
    after it (`trailing_text`), as for JSON: the lines after a quoted first line, or a last
    line, a paragraph of its own, that says what the model will do next ("I will wait for
    the result.")."""
    first, newline, _ = raw.partition("\n")
    if not newline:
        return _unquote(raw)
    unquoted, quotes = _unquote(first.rstrip())
    if quotes:
        return unquoted, (*quotes, "trailing_text")
    head, _, last = raw.rpartition("\n")
    if head.rstrip(" \t").endswith("\n") and states_intention(last.strip()):
        return _unquote(head.strip())[0], ("trailing_text",)
    return _unquote(raw)


class Written(NamedTuple):
    """Call syntax as written: the name, the bracket that opens the arguments, and what the
    brackets hold (the braces included, for `name {…}`)."""

    name: str
    opener: str
    inside: str


_CLOSERS = {"(": ")", "[": "]", "{": "}"}
#: What ends a tool name in call syntax: its first bracket, or the end of its line.
_NAME_END = re.compile(r"[(\[{\n]")


def split_call(written: str) -> Written | None:
    """`name(…)`, `name[…]` or `name {…}` as the whole of `written`, a `.` or `;` allowed at
    the end: the name is what stands before the first bracket, on the first line; the
    arguments run to the last closing bracket of the same kind, which only blanks and that
    `.` or `;` may follow. One search and a look at the end, so linear in any text (a regex
    that let the name and the arguments compete was quadratic on an unclosed call)."""
    first = _NAME_END.search(written)
    if first is None or first[0] == "\n" or first.start() == 0 or written[0].isspace():
        return None
    opener, at = first[0], first.start()
    closer, end = _CLOSERS[opener], len(written)
    if written[end - 1] != closer:
        end -= written[end - 1] in ".;"
        end = len(written[:end].rstrip(" \t"))
    if end - 1 <= at or written[end - 1] != closer:
        return None
    inside = written[at:end] if opener == "{" else written[at + 1 : end - 1]
    return Written(written[:at].rstrip(" \t"), opener, inside)


def called_name(written: str) -> str:
    """The Action value without its call-syntax arguments (`search(x)` -> `search`), when it
    is a call with parentheses; else as written."""
    parts = split_call(written) if "(" in written else None
    return written if parts is None else parts.name


def call(written: str) -> Call | None:
    """Call syntax on the Action line: `search("x")`, `search(query="x")`, `Search[x]`,
    `search {"q": "x"}`; or the arguments on the lines below the tool name."""
    parts = split_call(written) if len(written) <= jsonish.MAX_DEPTH * 300 else None
    if parts is None:
        name, _, below = written.partition("\n")
        if not below.strip() or not name.strip():
            return None
        value, repairs = read_input(below.strip())
        if not isinstance(value, dict):
            return None
        return tool_name(name), below.strip(), value, ("missing_label", *repairs)
    name, raw = tool_name(parts.name), parts.inside.strip()
    if parts.opener == "[":
        return name, raw, _unquote(raw)[0], ("call_syntax",)
    if parts.opener == "{" or raw.startswith("{"):
        value, repairs = read_input(raw)
        return name, raw, value, ("call_syntax", *repairs)
    return name, raw, _call_arguments(raw), ("call_syntax",)


#: What `ast` could read as a string or a dict: a quote, a bracket, a prefixed string.
_LITERAL_START = r"""[rRuU]?["'(]|\{"""


def _call_arguments(raw: str) -> dict[str, Any] | str:
    """`query="x", n=3` -> a dict; one literal string -> that string; anything else (an
    expression like `15*37`, a value JSON has no type for: bytes, a set, a tuple, a complex
    number, `...`, `1e999`, `1e-400`) -> the text as written. Parsed, never evaluated. Text that can
    only be an expression, and a plain quoted string, skip `ast`."""
    if not raw:
        return {}
    if not re.match(_LITERAL_START, raw) and not re.match(_KEYWORD_ARGUMENT, raw):
        return raw
    quote = raw[0]
    if quote in "'\"" and raw[-1] == quote and len(raw) > 1 and not _escapes(raw[1:-1], quote):
        return raw[1:-1]
    simple = _simple_keywords(raw)
    if simple is not None:
        return simple
    try:
        source = f"f({raw})"
        parsed = ast.parse(source, mode="eval").body
        if not isinstance(parsed, ast.Call) or _underflowing(source, parsed):
            return raw
        if parsed.keywords and not parsed.args and all(k.arg for k in parsed.keywords):
            names = [str(k.arg) for k in parsed.keywords]
            if len(set(names)) < len(names):
                raise _duplicate_name(names)
            arguments = {k.arg: ast.literal_eval(k.value) for k in parsed.keywords}
            return arguments if jsonish.is_json(arguments) else raw
        if len(parsed.args) == 1 and not parsed.keywords:
            value = ast.literal_eval(parsed.args[0])
            return value if isinstance(value, (str, dict)) and jsonish.is_json(value) else raw
    except jsonish.AmbiguousJsonError:
        raise
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        pass
    return raw


#: One `name=value` with a value that means itself as written: a string without escapes or
#: line breaks, a decimal number, True, False or None.
_SIMPLE_KEYWORD = (
    r"""[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*"""
    r"""("[^"\\\n]*"|'[^'\\\n]*'|-?(?:0|[1-9]\d*)(?:\.\d+)?(?![\w.])|True|False|None)"""
    r"""[ \t]*(?:,|\Z)"""
)
_WORDS = {"True": True, "False": False, "None": None}
#: Numbers this long are left to `ast`: `float()` of a longer one may overflow to infinity,
#: and `int()` of one past 4,300 digits raises.
_SIMPLE_NUMBER = 300


@cache
def _simple_keyword() -> re.Pattern[str]:
    return re.compile(_SIMPLE_KEYWORD)


def _underflowing(source: str, tree: ast.AST) -> bool:
    """Whether a number in `tree` is written with digits a float reads as 0.0 (`1e-400`): JSON
    refuses it (`jsonish.underflows`), and so does this, rather than pass on a zero that was
    not written."""
    return any(
        isinstance(node, ast.Constant)
        and type(node.value) is float
        and jsonish.underflows(ast.get_source_segment(source, node) or "", node.value)
        for node in ast.walk(tree)
    )


def _simple_keywords(raw: str) -> dict[str, Any] | None:
    """`query="x", n=3` read without `ast`, when every value is simple and every name a plain
    identifier written once; None sends anything else to `ast`, which decides the same way."""
    arguments: dict[str, Any] = {}
    at = 0
    while at < len(raw):
        match = _simple_keyword().match(raw, at)
        if match is None or keyword.iskeyword(match[1]):
            return None
        if match[1] in arguments:
            raise _duplicate_name([*arguments, match[1]])
        value = match[2]
        if value[0] in "'\"":
            arguments[match[1]] = value[1:-1]
        elif value in _WORDS:
            arguments[match[1]] = _WORDS[value]
        elif len(value) > _SIMPLE_NUMBER:
            return None  # `ast` reads it, or refuses it: an overflowing float, a huge int
        else:
            arguments[match[1]] = float(value) if "." in value else int(value)
        at = match.end()
    return arguments if arguments and not raw.rstrip().endswith(",") else None


def _duplicate_name(names: list[str]) -> jsonish.AmbiguousJsonError:
    """`q="a", q="b"`: Python keeps the last, so which the model meant is a guess."""
    seen: set[str] = set()
    twice = next(name for name in names if name in seen or seen.add(name))
    return jsonish.AmbiguousJsonError("duplicate_key", key=twice, problem="duplicate_argument")


def _escapes(body: str, quote: str) -> bool:
    """Whether a quoted body needs Python to read it (escapes, its quote, line breaks)."""
    return "\\" in body or quote in body or "\n" in body or "\r" in body
