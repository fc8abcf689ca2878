"""Untrusted text -> text that is safe to show a model or a terminal: one place for what the
loop, serve, the MCP client and the policies show of words they did not write (a tool's
result, a client's tool message, a server's descriptions, a name in a confirmation).

Protocol keywords in such text are quoted, so a result that says `Final Answer: ...` reads as
data to the model and can never end the run by itself; chat-template control tokens in it
(`<|im_end|>`, `[INST]`, `</s>`...) are broken, so it cannot close its turn and open another;
what no reader should get as it is (control characters, bidi controls, zero-width marks) is
shown or dropped; and it is cut to its limit before the quoting, so the cut cannot bring an
unquoted keyword to a line start. Every function here is linear and never raises."""

from __future__ import annotations

import re

from textreact.parsing.blobs import tool_key_starts
from textreact.parsing.keywords import keyword_starts

__all__ = ["defuse", "neutralise_control_tokens", "quote_keywords", "truncate", "visible"]

_QUOTE = "│"
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


def truncate(text: str, limit: int) -> str:
    """Keep the head and the tail, and say how much was left out between them."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    left_out = len(text) - head - tail
    return f"{text[:head]}\n… [{left_out} characters left out] …\n{text[len(text) - tail :]}"
