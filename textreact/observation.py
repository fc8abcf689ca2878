"""Tool result -> observation text: formatted concisely, cut to a limit, with a recovery hint
when the result cannot help the model as it is.

Tool output is untrusted. Protocol keywords in it are quoted, so a result that says
`Final Answer: ...` reads as data to the model and can never end the run by itself; chat-template
control tokens in it (`<|im_end|>`, `[INST]`, `</s>`...) are broken, so it cannot close its turn
and open another; it is cut to its limit before either, so the cut cannot bring an unquoted
keyword to a line start. Formatting is bounded in size and never raises, whatever the tool
returned, and never calls a method that a subclass of a builtin type overrides; only `str()` of
a foreign object can take long, which is why callers run it inside the tool's time bound."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from textreact import grammar, prompt, templates
from textreact.parsing import messages
from textreact.parsing.blobs import tool_key_starts
from textreact.parsing.keywords import keyword_starts
from textreact.parsing.messages import forms_hint
from textreact.steps import Action, FinalAnswer, FormatError, Step, ToolResult

if TYPE_CHECKING:
    from textreact.tools import Tool

#: Default number of characters of a tool's result shown to the model.
DEFAULT_LIMIT = 500
#: Errors carry specific instructions; they get this much room whatever the limit.
ERROR_LIMIT = 1000
_QUOTE = "│"
#: Error kinds whose observation ends with a fixed recovery hint from prompts/notes.md (a
#: timeout's message already says what to do; a failed tool's hint names the other tools).
_HINTED_ERRORS = frozenset({"arguments", "unknown_tool"})
#: Other tools a failed tool's hint names, at most (a long list would bury the error).
_NAMED_TOOLS = 5
#: Integers longer than this (about 3,000 digits) are shown in scientific form: str() of a
#: much longer one is slow, and past 4,300 digits it raises.
_MAX_INT_BITS = 10_000
#: Containers nested deeper than this are shown as `…`.
_MAX_NESTING = 8
_THINK_TAG = re.compile(r"</?think>", re.IGNORECASE)
#: Chat-template control tokens as text: llama.cpp (and other servers that tokenise a rendered
#: template with special tokens on) would read them in a tool result as real turn markers.
#: `<|...|>` and DeepSeek's `<｜...｜>` in general; Llama 2 / Mistral `[INST]`, `<<SYS>>` and
#: Mistral's bracketed tokens; `<s>`, Gemma's `<start_of_turn>`, Qwen's `<tool_call>`, and the
#: StarCoder/SmolLM code tokens by name. `<think>` is left to quote_keywords.
_CONTROL_TOKEN = re.compile(
    r"<[|｜][^<>|｜\n]{0,64}[|｜]>"
    r"|\[/?(?:INST|SYS|SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS|TOOL_CONTENT|THINK"
    r"|IMG|IMG_BREAK|IMG_END|PREFIX|MIDDLE|SUFFIX|ARGS|CALL_ID|[GS]?MASK)\]"
    r"|<</?SYS>>"
    r"|</?(?:s|unk|pad|bos|eos|eot|sep|cls|mask|sop|eop|(?:start|end)_of_[a-z_]+|tool_calls?"
    r"|tool_response|fim_[a-z]+|file_?sep|file_?name|repo_?name|gh_stars|issue_[a-z]+"
    r"|jupyter_[a-z]+|empty_output|commit_[a-z]+|unused\d+|extra_id_\d+)>",
    re.IGNORECASE,
)
#: What no reader should get as it is: C0 and C1 control characters but tab and newline (an
#: ANSI escape clears a terminal; `\r` rewrites the line it is on), NUL, zero-width and
#: byte-order marks (the parser reads them as blanks, so they hide keywords), the bidi
#: controls (embeddings, overrides, isolates and marks reorder what a screen shows: a name can
#: read backwards, or as another), the invisible word joiner and operators, and lone
#: surrogates (no server can encode them). The zero-width joiner and non-joiner stay: emoji
#: and several scripts are spelt with them.
_INVISIBLE = re.compile(
    r"\r\n?|[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064"
    r"\u2066-\u2069\ufeff]|[\ud800-\udfff]"
)
#: The builtin types whose data format_value reads through their own slots (bool before int).
_BASES = (str, bool, int, float, list, tuple, dict, bytes, bytearray, set, frozenset)
_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
_EXACT = {base: base for base in _BASES}


def _base(value: Any) -> type | None:
    """The builtin type among _BASES that `value` is an instance of, or None for any other.
    Decided by `type()`: `isinstance` would consult a `__class__` the object may fake; and
    looked up by hash only for a class whose metaclass is `type` (a metaclass's own `__hash__`
    or `__eq__` could raise)."""
    kind = type(value)
    if type(kind) is type:
        found = _EXACT.get(kind)
        if found is not None:
            return found
    return next((base for base in _BASES if issubclass(kind, base)), None)


def _text(value: str) -> str:
    """A str's own characters as an exact str: a subclass's `__str__`, `__len__` or
    `__getitem__` is never called (`str.__str__` copies the data of a subclass)."""
    return value if type(value) is str else str.__str__(value)


def _members(base: type, value: Any) -> tuple[Any, int]:
    """An iterator over a container's items ((key, value) pairs for a dict), and its length,
    both through the base type, so an overridden `__iter__`, `__len__` or `items` never runs."""
    if base is dict:
        return iter(dict.items(value)), dict.__len__(value)
    return base.__iter__(value), base.__len__(value)


def _type_name(value: Any) -> str:
    """The type's own name; `type(value).__name__` would run a metaclass's `__name__`."""
    return vars(type)["__name__"].__get__(type(value))


def format_number(value: float) -> str:
    """Whole floats as integers; float noise (0.1 + 0.2) rounded to 12 significant digits.
    Anything else as format_value shows it."""
    if _base(value) is not float:
        return format_value(value)
    value = float.__float__(value)
    if not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.12g}"


def format_value(value: Any, limit: int = 20_000) -> str:
    """A tool's return value as short text: strings as they are, numbers cleanly, records as
    numbered lines, mappings as compact JSON.

    Bounded and never raising, whatever a tool returns: containers are shown until about
    `limit` characters (then how many items were left out), nesting to a few levels, cycles and
    huge integers without walking or converting them whole. Subclasses of the builtin types are
    read through the builtin's own methods, so an overridden `__str__`, `__iter__`, `__len__`,
    `items`, `__eq__` or `__hash__` never runs here; any other object is shown by its `str()`
    (which may hang: callers bound formatting in time), or by its type name when that raises.
    Only a top-level string comes back whole (slicing it is free)."""
    if _base(value) is str:
        return _text(value)
    return _Render(limit).show(value, 0)


def _integer(value: int) -> str:
    if value.bit_length() <= _MAX_INT_BITS:
        return str(value)
    exponent = math.log10(abs(value))
    digits = math.floor(exponent)
    sign = "-" if value < 0 else ""
    return f"{sign}{10 ** (exponent - digits):.6f}e+{digits} (an integer of {digits + 1} digits)"


def _foreign(value: Any) -> str:
    """str() of an object that is not a builtin value; its failure is shown, not raised."""
    try:
        text = str(value)
    except Exception as error:
        return f"<{_type_name(value)} object: str() failed with {_type_name(error)}>"
    return _text(text)  # a `__str__` may return a str subclass with hostile methods of its own


class _Render:
    """One rendering with a character budget shared by every piece of it (each item costs at
    least one, so even a million empty strings stop at the budget)."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def show(self, value: Any, depth: int) -> str:
        """Plain text: numbered lines for sequences, JSON for mappings."""
        if depth > _MAX_NESTING:
            return self.spend("…")
        base = _base(value)
        if base is list or base is tuple:
            lines, more = self.items(base, value, lambda item: self.record(item, depth + 1))
            numbered = [f"{i}. {line}" for i, line in enumerate(lines, 1)]
            return "\n".join([*numbered, more] if more else numbered)
        if base is dict:
            return self.json(value, depth) if dict.__len__(value) else ""
        if base is set or base is frozenset:
            return "{" + self.joined(base, value, lambda v: self.json(v, depth + 1)) + "}"
        return self.scalar(value, base)

    def scalar(self, value: Any, base: type | None) -> str:
        if value is None:
            text = ""
        elif base is bool:
            text = "True" if value else "False"  # bool cannot be subclassed
        elif base is int:
            text = _integer(int.__int__(value))
        elif base is float:
            text = format_number(value)
        elif base is bytes or base is bytearray:
            text = repr(bytes(base.__getitem__(value, slice(0, max(self.left, 0)))))
        elif base is str:
            text = _text(value)
        else:
            text = _foreign(value)
        return self.spend(text)

    def spend(self, text: str) -> str:
        text = text[: max(self.left, 0) + 1]
        self.left -= len(text)
        return text

    def items(self, base: type, value: Any, show: Any) -> tuple[list[str], str | None]:
        """The items shown within the budget, and the note on those left out (or None)."""
        members, length = _members(base, value)
        shown: list[str] = []
        try:
            for item in members:
                if self.left <= 0:
                    return shown, f"… ({length - len(shown)} more)"
                self.left -= 1
                shown.append(show(item))
        except RuntimeError:  # an item's str() changed the container under the iterator
            return shown, "…"
        return shown, None

    def joined(self, base: type, value: Any, show: Any, separator: str = ", ") -> str:
        shown, more = self.items(base, value, show)
        return separator.join([*shown, more] if more else shown)

    def record(self, item: Any, depth: int) -> str:
        if _base(item) is dict and depth <= _MAX_NESTING:
            pairs = self.joined(
                dict, item, lambda pair: f"{self.key(pair[0])}: {self.show(pair[1], depth)}"
            )
            return pairs.replace("\n", " ")
        return self.show(item, depth).replace("\n", " ")

    def key(self, key: Any) -> str:
        base = _base(key)
        if base is tuple or base is frozenset:  # the hashable containers
            inner = self.joined(base, key, self.key)
            return f"({inner})" if base is tuple else "{" + inner + "}"
        return self.scalar(key, base)

    def json(self, value: Any, depth: int) -> str:
        """Compact JSON (other types as their text), cut at the budget and at deep nesting."""
        if depth > _MAX_NESTING:
            return self.spend("…")
        base = _base(value)
        if base is dict:
            pairs = self.joined(
                dict,
                value,
                lambda pair: f"{self.quoted(self.key(pair[0]))}: {self.json(pair[1], depth + 1)}",
            )
            return "{" + pairs + "}"
        if base in _CONTAINERS:
            return "[" + self.joined(base, value, lambda v: self.json(v, depth + 1)) + "]"
        if base is float and not math.isfinite(float.__float__(value)):
            return self.spend(json.dumps(float.__float__(value)))
        text = self.scalar(value, base)
        if base is None or base is str or base is bytes or base is bytearray:
            return "null" if value is None else self.quoted(text)
        return text.lower() if base is bool else text

    @staticmethod
    def quoted(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)


def quote_keywords(text: str) -> str:
    """Mark every protocol keyword in untrusted text, at a line start or inside a line, so that
    neither the model nor the parser reads it as a step: `│` goes right before the keyword,
    where no reading of the protocol accepts it (`│Final Answer: …`, `**│Action:**`,
    `## │Final Answer`), before each key that could name a JSON call's tool (`{│"action": …}`,
    which no JSON reader then decodes), and inside a reasoning tag (`<│/think>`), which would
    make what precedes it read as reasoning. The keywords are found by the parser's own
    scanner (`parsing.keywords.keyword_starts`: every keyword it could read, in any mode),
    so the two cannot disagree. Linear; quoting twice changes nothing more."""
    starts = set(keyword_starts(text))
    starts.update(tool_key_starts(text))
    starts.update(m.start() + 1 for m in _THINK_TAG.finditer(text))
    if not starts:
        return text
    pieces, at = [], 0
    for start in sorted(starts):
        pieces += (text[at:start], _QUOTE)
        at = start
    return "".join(pieces) + text[at:]


def neutralise_control_tokens(text: str) -> str:
    """Break every chat-template control token in untrusted text with a space after its first
    character (`<|im_end|>` -> `< |im_end|>`, `[INST]` -> `[ INST]`, `</s>` -> `< /s>`): still
    readable, and no tokenizer reads it as the token, so a tool result cannot close its turn
    and open a system one. Applying it twice changes nothing more."""
    if "<" not in text and "[" not in text:  # most results: a scan in C instead of the regex
        return text
    return _CONTROL_TOKEN.sub(lambda m: f"{m[0][0]} {m[0][1:]}", text)


def visible(text: str, *, line: bool = False) -> str:
    r"""Untrusted text with nothing hidden in it: a line break for `\r` and `\r\n`, nothing for a
    zero-width space or byte-order mark, and Python's escapes (`\x1b`, `\u202e`, `\ud800`)
    for other control characters, bidi controls and lone surrogates. For the model's eyes and
    a terminal's alike. `line=True` is for a short string a person reads on one line (a tool's
    name, the arguments a confirmation shows): every character Python does not call printable
    is escaped, line breaks, tabs and zero-width characters included, so that the line shows
    exactly which characters it holds and nothing can move the cursor or hide a difference."""
    if text.isprintable():  # most text: one scan in C
        return text
    if line:
        return "".join(char if char.isprintable() else _escaped(char) for char in text)
    if not _INVISIBLE.search(text):
        return text
    return _INVISIBLE.sub(_shown_instead, text)


def _shown_instead(match: re.Match[str]) -> str:
    char = match[0]
    if char[0] == "\r":
        return "\n"
    if char in "\u200b\ufeff":
        return ""
    return _escaped(char)


def _escaped(char: str) -> str:
    r"""Python's escape for one character: `\x1b`, `\u202e`, `\U000e0041`."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def defuse(text: str, limit: int | None = None) -> str:
    """Untrusted text made safe to show the model: nothing invisible, cut to `limit` if given
    (after the escapes, which count against it; before the quoting, so that the cut cannot
    bring an unquoted keyword to a line start), control tokens broken, keywords quoted."""
    text = visible(text)
    if limit is not None:
        text = truncate(text, limit)
    return quote_keywords(neutralise_control_tokens(text))


def truncate(text: str, limit: int = DEFAULT_LIMIT) -> str:
    """Keep the head and the tail, and say how much was left out between them."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    left_out = len(text) - head - tail
    return f"{text[:head]}\n… [{left_out} characters left out] …\n{text[len(text) - tail :]}"


def observe(
    result: ToolResult,
    *,
    limit: int = DEFAULT_LIMIT,
    lang: str = "en",
    others: Sequence[str] = (),
) -> str:
    """The observation text for one tool call (without the `Observation:` label), with a
    recovery hint in `lang` when the result cannot help the model as it is. A failed tool's
    hint names the `others` offered: a small model told only "try another tool" calls the
    same one again (the calculator, asked for the speed of light by name)."""
    if result.is_error:
        kind = result.error_kind
        hint = ""
        if kind in ("exception", "wrong_tool"):
            name = f"hint_{kind}" if others else f"hint_{kind}_alone"
            hint = templates.note(name, lang, tools=_named(others))
        elif kind in _HINTED_ERRORS:
            hint = templates.note(f"hint_{kind}", lang)
        error = format_value(result.error)  # "" for None; a str subclass read safely
        text = templates.note("tool_error", lang, error=error, hint=hint)
        return defuse(text.strip(), ERROR_LIMIT)
    shown = result.text if result.text is not None else format_value(result.value, 4 * limit)
    text = shown.strip()
    if not text:
        return templates.note("empty_result", lang)
    return defuse(text, limit)


def repeated_call(
    tool: str,
    step: int,
    earlier: str,
    lang: str = "en",
    *,
    again: bool = False,
    failed: bool = False,
    found: Sequence[str] = (),
    question: str = "",
    others: Sequence[str] = (),
    note: Callable[..., str] = templates.note,
) -> str:
    """Shown instead of calling a tool again with the same arguments: the earlier result, or,
    given the `question` (the loop's case), more. A model that repeats a call that worked has
    lost track of what it has: it is shown every result so far (`found`), the question, and
    the other tools it may use them with (`others`), which is what it needs to go on (two
    lookups done, the next step is the calculation). `failed`: the first call failed, and says
    so; `again`: the model repeated itself on the turn before too, and is asked to answer, in
    the words of its protocol (`note`: `Protocol.note`; the text protocol's names its
    `Final Answer:` label, which a native or own-format reply does not write)."""
    if again:
        return note("repeated_call_again", lang, tool=tool, step=str(step))
    if failed:
        return templates.note("repeated_failure", lang, tool=tool, step=str(step), earlier=earlier)
    if not question:
        return templates.note("repeated_call", lang, tool=tool, step=str(step), earlier=earlier)
    return templates.note(
        "repeated_call_found" if others else "repeated_call_found_alone", lang, tool=tool,
        step=str(step), found=found_list(found or [earlier]), question=truncate(question),
        tools=_named(others),
    )  # fmt: skip


def _named(tools: Sequence[str]) -> str:
    """The other tools a hint names: the first few, and "..." for the rest."""
    return ", ".join(tools[:_NAMED_TOOLS]) + (", ..." if tools[_NAMED_TOOLS:] else "")


def found_list(results: Sequence[str]) -> str:
    """Results so far as a list, a line each, defused (a tool's raw text, or its observation:
    defusing twice changes nothing)."""
    return "\n".join(f"- {defuse(' '.join(text.split()), 200)}" for text in results)


def format_error(
    error: FormatError, tools: Sequence[Tool], lang: str = "en", *, again: bool
) -> str:
    """The observation that answers a format error of the text protocol: what was wrong and
    the exact form, shown with a real tool and its example (small models copy a placeholder
    literally); a model that breaks the format again is shown the whole rules."""
    if again:
        rules = prompt.format_section(tools, lang)
        return templates.note("format_error_again", lang, message=error.message, rules=rules)
    named = [t for t in tools if t.name == error.tool] if error.tool is not None else tools[:1]
    hint = error.hint
    if named:
        example = grammar.render_input(named[0].example)
        hint = messages.hint(error.problem, error.lang, named[0].name, example)
    return templates.note("format_error", lang, message=error.message, hint=hint)


def against_choice(
    step: Step, choice: str, tools: Sequence[Tool], lang: str = "en"
) -> FormatError | None:
    """The error to answer a reply that breaks this turn's tool choice with: an answer when a
    call is required (or one named tool is), a call when none is allowed; None when it fits."""
    if choice == "none" and isinstance(step, Action):
        message = templates.note("tool_forbidden", lang)
        return FormatError(message, forms_hint(lang), problem="tool_forbidden", lang=lang)
    if choice in ("auto", "none") or not isinstance(step, FinalAnswer):
        return None
    named = next((t for t in tools if t.name == choice), None)
    if named is None:
        return FormatError(
            templates.note("tool_required", lang), forms_hint(lang), problem="tool_required"
        )
    example = grammar.render_input(named.example)
    return FormatError(
        templates.note("tool_required_named", lang, tool=named.name),
        forms_hint(lang, named.name, example),
        problem="tool_required",
        tool=named.name,
        lang=lang,
    )
