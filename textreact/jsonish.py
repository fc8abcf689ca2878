"""Action Input text -> JSON value: strict JSON first, then a short chain of named repairs for
what models actually write (fences, prose around the object, trailing commas, Python literals,
unquoted keys, comments, curly quotes, a cut-off tail). The parser and `Tool.parse_arguments`
both use it, and each repair is reported by name so a transcript shows what was fixed. An
error is a problem code and its slots; its words are the `json_*` sections of prompts/notes.md
(English for `str`, `say(lang)` for a message to the model in its language).

Nothing here evaluates code: Python-style strings are read one token at a time with
`ast.literal_eval`, after the whole text has been size-bounded and depth-checked."""

from __future__ import annotations

import ast
import json
import math
import re
from typing import NamedTuple

from textreact import templates

#: Deeper nesting than this is refused: arguments are never this deep, and the stdlib decoders
#: recurse. The repair path refuses it before decoding; the strict path checks what it decoded.
MAX_DEPTH = 64


class JsonishError(ValueError):
    """The text is not JSON-like, or it could be repaired in more than one way. `problem` names
    the section `## json_<problem>` of prompts/notes.md that says why, `slots` fill it."""

    def __init__(self, problem: str, **slots: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.slots = slots

    def __str__(self) -> str:
        return self.say("en")

    def say(self, lang: str) -> str:
        """Why the text is not JSON, in `lang`, for the model."""
        return templates.note(f"json_{self.problem}", lang, **self.slots)


class AmbiguousJsonError(JsonishError):
    """The text holds a value, but reading it means choosing between what the model wrote: an
    object that sets a key twice (`json.loads` would silently keep the last), or, for `loads`,
    a second object right after the first. Never a silent pick: the caller reports it."""

    def __init__(
        self, reason: str, *, key: str | None = None, end: int = 0, problem: str | None = None
    ) -> None:
        super().__init__(problem or reason, key=repr(key))
        #: "duplicate_key" or "two_objects".
        self.reason = reason
        #: The key set twice, for "duplicate_key".
        self.key = key
        #: Where the (first) value ends in the text, as `Decoded.end` would say.
        self.end = end


class Decoded(NamedTuple):
    """A decoded value, the repairs that made it decodable, and where it ended in the text."""

    value: object
    repairs: tuple[str, ...]
    #: Index in the text just past the value (past the closing fence when it was fenced).
    end: int


#: Decoded values are made on every parse; tuple.__new__ skips NamedTuple's Python-level
#: constructor (the same object).
_decoded = tuple.__new__

#: What opens a code fence: the backticks, a language tag, the rest of the line. Where the fence
#: closes is found after the value is read, so a ``` inside a JSON string never closes it.
_FENCE_OPEN = re.compile(r"```[ \t]*[\w+.-]*[ \t]*\r?\n?")
_FENCE_CLOSE = re.compile(r"[ \t\r\n]*```")
_OPENERS = re.compile(r"[{\[]")
#: What may stand between two objects written one after the other: blanks, a separator, the
#: fences of two code blocks.
_NEXT_OBJECT = re.compile(r"[\s,;]*(?:```[\w+.-]*\s*)?(?=\{)")
#: One token of JSON-like text. Strings are closed or run to the end (a truncated text); a word
#: followed by a colon is an unquoted key; a comma before a closer (comments between) is a
#: trailing comma; `//` or `#` outside a string starts a comment, which runs to the end of its
#: line (so that a comment is read one way only, and a long run of them stays linear); a
#: string between curly quotes (“…”, as a word processor or a model writing prose types them)
#: is a string.
_TOKEN = re.compile(
    r"""
      (?P<dq>"[^"\\]*(?:\\.[^"\\]*)*\\?(?:"|\Z))
    | (?P<sq>'[^'\\]*(?:\\.[^'\\]*)*\\?(?:'|\Z))
    | (?P<curly>“[^“”\n]*”)
    | (?P<comment>(?://|\#)[^\n]*)
    | (?P<key>[A-Za-z_$][\w$-]*(?=[ \t\r\n]*:))
    | (?P<word>[A-Za-z_$][\w$.+-]*)
    | (?P<comma>,(?=(?:[ \t\r\n]|(?://|\#)[^\n]*(?=\n|\Z))*[}\]]))
    | (?P<open>[{\[])
    | (?P<close>[}\]])
    | (?P<other>[^"'“/\#A-Za-z_${}\[\],]+|[\s\S])
    """,
    re.DOTALL | re.VERBOSE,
)
_PYTHON_WORDS = {"True": "true", "False": "false", "None": "null"}
_CLOSERS = {"{": "}", "[": "]"}
_CONTROL = re.compile(r"[\x00-\x1f]")


def _reject_constant(name: str) -> object:
    raise JsonishError("not_a_number", constant=name)


def underflows(text: str, value: float) -> bool:
    """Whether a number written with a digit other than 0 before its exponent reads as zero
    (`1e-400`): a float cannot hold it, and zero is not what was written."""
    return value == 0 and any(c in "123456789" for c in text.lower().partition("e")[0])


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise JsonishError("overflow", text=text)
    if underflows(text, value):
        raise JsonishError("underflow", text=text)
    return value


class _DuplicateKey(Exception):
    """Raised by the decoder's object hook; never leaves this module."""


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    value = dict(pairs)
    if len(value) < len(pairs):
        seen: set[str] = set()
        raise _DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return value


#: Built once: json.loads with hooks builds a new decoder on every call.
_DECODERS = {
    strict: json.JSONDecoder(
        strict=strict,
        parse_constant=_reject_constant,
        parse_float=_finite_float,
        object_pairs_hook=_unique_keys,
    )
    for strict in (True, False)
}


#: The decoders' C scanners: one call reads one value at an index, with no Python frames.
_SCANNERS = {strict: decoder.scan_once for strict, decoder in _DECODERS.items()}


def _strict(text: str, *, allow_control: bool = False) -> object:
    return _DECODERS[not allow_control].decode(text)


#: The characters a JSON value (or a refused constant such as NaN) can start with.
_VALUE_START = frozenset('{["-0123456789tfnNI')


def _scan(text: str, at: int) -> tuple[object, int]:
    """The strict JSON value that starts at `text[at]` and where it ends; ValueError if none."""
    try:
        return _SCANNERS[True](text, at)
    except StopIteration:
        raise ValueError("no JSON value here") from None


def _duplicate(key: str, end: int) -> AmbiguousJsonError:
    return AmbiguousJsonError("duplicate_key", key=key, end=end)


def loads(text: str, *, max_chars: int = 20_000) -> tuple[object, tuple[str, ...]]:
    """Parse JSON-like text leniently; return (value, names of repairs applied).

    Raises JsonishError (a ValueError) when the text is not JSON-like, is longer than
    `max_chars`, or could be repaired in more than one way; AmbiguousJsonError (a
    JsonishError) when it sets a key twice or holds a second object right after the first;
    never anything else for a `str`."""
    decoded = decode(text, max_chars=max_chars)
    if isinstance(decoded.value, dict) and decoded.end < len(text):
        _refuse_a_second_object(text, decoded.end)
    return decoded.value, decoded.repairs


def _refuse_a_second_object(text: str, end: int) -> None:
    """Two objects one after the other (`{"q": "a"} {"q": "b"}`): which one runs is a guess."""
    between = _NEXT_OBJECT.match(text, end)
    if between is None:
        return
    try:
        second = decode(text[between.end() :])
    except AmbiguousJsonError:
        second = Decoded({}, (), 0)
    except JsonishError:
        return
    if isinstance(second.value, dict):
        raise AmbiguousJsonError("two_objects", end=end)


def strict_object(text: str) -> dict[str, object] | None:
    """`text` as a JSON object when it is one exactly as written (no repair, no key twice,
    no deeper than MAX_DEPTH), else None: the fast path's test, which never repairs twice."""
    try:
        value, end = _scan(text, 0)
    except (ValueError, RecursionError, _DuplicateKey):
        return None
    if end != len(text) or not isinstance(value, dict):
        return None
    try:
        _check_depth(value, text)
    except JsonishError:
        return None
    return value


def decode(text: str, *, max_chars: int = 20_000) -> Decoded:
    """`loads`, also telling where the value ended, so a caller can cut what follows it."""
    if len(text) > max_chars:
        raise JsonishError("too_long", length=str(len(text)), limit=str(max_chars))
    lead = len(text) - len(text.lstrip())
    if lead == len(text):
        raise JsonishError("empty")
    try:  # a value can only start with one of these; anything else fails without the cost
        scanned = _scan(text, lead) if text[lead] in _VALUE_START else None
    except _DuplicateKey as exc:
        raise _duplicate(exc.args[0], len(text.rstrip())) from None
    except (ValueError, RecursionError):
        scanned = None
    if scanned is not None:
        value, end = scanned
        if end == len(text) or not text[end:].strip():
            _check_depth(value, text)
            return _decoded(Decoded, (value, (), end))
    try:
        return _repair(text, lead, scanned)
    except (RecursionError, MemoryError) as exc:
        raise JsonishError("unparsable", kind=type(exc).__name__) from None


#: The scalar types a JSON value may hold (a float must also be finite).
_JSON_SCALARS = (str, int, float, bool, type(None))
#: Integers of more than 4,300 digits are no JSON numbers: `int()` refuses to read one from
#: text (so the strict decoder does), and `str()` to write one.
_INT_BOUND = 10**4300


def is_json(value: object) -> bool:
    """Whether `value` is made of JSON's types only, as `json.loads` would give it: dicts with
    string keys, lists, strings, integers of at most 4,300 digits, finite floats, booleans
    and None, no deeper than MAX_DEPTH. A Python literal (call syntax in an Action) can be a
    tuple, a set, bytes, a complex number, `...` or `1e999`, which no tool schema means."""
    level = [value]
    for _ in range(MAX_DEPTH + 1):
        below: list[object] = []
        for item in level:
            kind = type(item)
            if kind is dict:
                if not all(type(key) is str for key in item):
                    return False
                below.extend(item.values())
            elif kind is list:
                below.extend(item)
            elif not _json_scalar(kind, item):
                return False
        if not below:
            return True
        level = below
    return False


def _json_scalar(kind: type, item: object) -> bool:
    if kind is float:
        return math.isfinite(item)
    if kind is int:
        return -_INT_BOUND < item < _INT_BOUND
    return kind in _JSON_SCALARS


def _check_depth(value: object, text: str) -> None:
    """MAX_DEPTH on a value the strict decoder read (it goes as deep as the recursion limit);
    the walk only runs when the text has enough brackets to be that deep."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    level: list[object] = [value]
    for _ in range(MAX_DEPTH):
        level = [
            child
            for item in level
            if isinstance(item, (list, dict))
            for child in (item.values() if isinstance(item, dict) else item)
        ]
    if any(isinstance(item, (list, dict)) for item in level):
        raise JsonishError("too_deep", depth=str(MAX_DEPTH))


def _repair(text: str, lead: int, scanned: tuple[object, int] | None) -> Decoded:
    """The first value in `text`, rewritten token by token. A fence counts when the value
    stands inside it (an odd number of fences before the value); its closing fence is looked
    for after the value, so fences written inside the value's strings stay in the strings.
    `scanned` is what strict JSON read at `text[lead]`, the first non-blank (None: nothing)."""
    repairs: list[str] = []
    opener = _OPENERS.search(text)
    if opener is None:
        raise JsonishError("no_value")
    start = opener.start()
    fence, body_start = -1, 0
    if "```" in text and text.count("```", 0, start) % 2 == 1:
        fence = text.rfind("```", 0, start)
        body_start = min(_FENCE_OPEN.match(text, fence).end(), start)
        repairs.append("code_fence")
    if start == lead and scanned is not None:  # strict JSON, then more text
        value, end = scanned
        _check_depth(value, text)
    elif start == lead:  # strict JSON failed here already
        value, end = _rewritten(text, start, body_start, repairs)
    else:
        try:  # JSON in a fence or in prose is most often strict JSON itself
            value, end = _scan(text, start)
            _check_depth(value, text)
        except _DuplicateKey as exc:
            raise _duplicate(exc.args[0], len(text)) from None
        except (ValueError, RecursionError):
            value, end = _rewritten(text, start, body_start, repairs)
    after = end
    if fence >= 0:
        closing = _FENCE_CLOSE.match(text, end)
        after = closing.end() if closing else end
        leading = text[:fence] + text[body_start:start]
    else:
        leading = text[:start]
    trailing = text[after:]
    if leading.strip():
        if not isinstance(value, dict) or "truncated" in repairs:
            raise JsonishError("prose")
        repairs.append("leading_text")
    if trailing.strip():
        repairs.append("trailing_text")
    if "truncated" in repairs and not value:
        raise JsonishError("cut_off_early")
    return _decoded(Decoded, (value, tuple(repairs), after))


def _rewritten(text: str, start: int, body_start: int, repairs: list[str]) -> tuple[object, int]:
    """The value at `text[start]`, rewritten into strict JSON and decoded, and its end."""
    rewritten, end, fixes = _rewrite(text, start, len(text))
    repairs.extend(fixes)
    try:
        return _strict(rewritten, allow_control=True), end
    except _DuplicateKey as exc:
        raise _duplicate(exc.args[0], end) from None
    except JsonishError:
        raise
    except ValueError as exc:
        if text[body_start:start].strip():
            raise JsonishError("prose") from None
        if isinstance(exc, json.JSONDecodeError):
            where = {"line": str(exc.lineno), "column": str(exc.colno)}
            raise JsonishError("invalid", detail=str(exc), **where) from None
        raise JsonishError("invalid_value", detail=str(exc)) from None


def _rewrite(text: str, start: int, stop: int) -> tuple[str, int, list[str]]:
    """Rewrite the value starting at `start` into strict JSON; return it, its end, the repairs.
    The loop runs once per token; the tokens that need nothing are appended as they are."""
    out: list[str] = []
    append = out.append
    repairs: list[str] = []
    stack: list[str] = []
    last = ""
    pos = start
    for token in _TOKEN.finditer(text, start, stop):  # `other` takes any character
        kind, piece = token.lastgroup, token.group()
        pos = token.end()
        if kind == "other":
            append(piece)
            if not piece.isspace():
                last = kind
            continue
        if kind == "dq":
            if _CONTROL.search(piece):
                _note(repairs, "control_characters")
            if len(piece) < 2 or piece[-1] != '"' or piece[-2] == "\\":
                piece = _close_string(piece, '"', repairs)
            if "\\" in piece and not _json_string(piece):
                piece = _python_string(piece, '"', repairs, "python_literal")
        elif kind == "sq":
            if len(piece) < 2 or piece[-1] != "'" or piece[-2] == "\\":
                piece = _close_string(piece, "'", repairs)
            piece = _python_string(piece, "'", repairs, "single_quotes")
        elif kind == "curly":
            piece = json.dumps(piece[1:-1], ensure_ascii=False)
            _note(repairs, "curly_quotes")
        elif kind == "comment":
            piece = ""
            _note(repairs, "comments")
            continue
        elif kind == "key":
            piece = f'"{piece}"'  # a key is letters, digits, `_`, `$` and `-`: nothing to escape
            _note(repairs, "unquoted_keys")
        elif kind == "word":
            if piece in _PYTHON_WORDS:
                piece = _PYTHON_WORDS[piece]
                _note(repairs, "python_literal")
        elif kind == "comma":
            piece = ""
            _note(repairs, "trailing_comma")
        elif kind == "open":
            stack.append(piece)
            if len(stack) > MAX_DEPTH:
                raise JsonishError("too_deep", depth=str(MAX_DEPTH))
        elif not stack or _CLOSERS[stack.pop()] != piece:  # a closer
            raise JsonishError("unbalanced", piece=repr(piece), at=str(token.start()))
        elif not stack:
            append(piece)
            return "".join(out), pos, repairs
        append(piece)
        last = kind
    return _close_truncated(out, stack, last, repairs), pos, repairs


def _close_truncated(out: list[str], stack: list[str], last: str, repairs: list[str]) -> str:
    """Close a value cut off by a token limit, when only one completion is possible."""
    body = "".join(out).rstrip()
    if body.endswith(","):
        body = body[:-1]
    elif last not in ("dq", "sq", "close", "open", "word") or body.endswith(":"):
        raise JsonishError("cut_off")
    _note(repairs, "truncated")
    return body + "".join(_CLOSERS[opener] for opener in reversed(stack))


def _json_string(piece: str) -> bool:
    try:
        json.loads(piece, strict=False)
    except ValueError:
        return False
    return True


def _python_string(piece: str, quote: str, repairs: list[str], repair: str) -> str:
    """A Python string literal (its escapes: \\x01, \\', \\N{…}) as a JSON string. One
    without escapes or line breaks means its characters as written, so it is requoted without
    the cost of `ast.literal_eval`."""
    body = piece[1:-1]
    if quote == "'" and "\\" not in body and "\n" not in body and "\r" not in body:
        _note(repairs, repair)
        return '"' + body.replace('"', '\\"') + '"'
    try:
        value = ast.literal_eval(piece)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise JsonishError("unreadable_string", piece=repr(piece[:40])) from None
    if not isinstance(value, str):
        raise JsonishError("unreadable_string", piece=repr(piece[:40]))
    _note(repairs, repair)
    return json.dumps(value, ensure_ascii=False)


def _close_string(piece: str, quote: str, repairs: list[str]) -> str:
    """A string token as is when it is closed; closed when a token limit cut it off."""
    closed = len(piece) > 1 and piece.endswith(quote)
    body = piece[:-1] if closed else piece
    if _odd_backslashes(body):  # the last quote is escaped, or a lone backslash ends the text
        body, closed = body[:-1], False
    if closed:
        return piece
    _note(repairs, "truncated")
    return body + quote


def _odd_backslashes(text: str) -> bool:
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def _note(repairs: list[str], name: str) -> None:
    if name not in repairs:
        repairs.append(name)
