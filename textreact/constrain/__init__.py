"""Constrained decoding for the text protocol: the tools' grammar (one Thought line, then one
Action whose Action Input fits that tool's own schema, or a Final Answer), the request fields
that carry it to each kind of server, and the detection of what a server takes.

    info = detect_server(base_url)            # once per endpoint; None: run unconstrained
    if info is not None and info.grammar:
        extra_body = info.request_fields(tools_grammar(tools, tool_choice="auto", lang="en"))

The grammar is GBNF, which llama.cpp, vLLM and SGLang all read. llama.cpp refuses `grammar`
together with `tools=`: send it with the text protocol only."""

from __future__ import annotations

from textreact.constrain.gbnf import MAX_ITEMS, MAX_STRING, schema_grammar
from textreact.constrain.react import (
    MAX_THOUGHT,
    MAX_THOUGHT_BY_LANG,
    TOOL_CHOICES,
    branch_grammar,
    tools_grammar,
)
from textreact.constrain.recognizer import GrammarSyntaxError, matches, parse_gbnf
from textreact.constrain.servers import SERVER_KINDS, ServerInfo, detect_server, request_fields

__all__ = [
    "MAX_ITEMS",
    "MAX_STRING",
    "MAX_THOUGHT",
    "MAX_THOUGHT_BY_LANG",
    "SERVER_KINDS",
    "TOOL_CHOICES",
    "GrammarSyntaxError",
    "ServerInfo",
    "branch_grammar",
    "detect_server",
    "matches",
    "parse_gbnf",
    "request_fields",
    "schema_grammar",
    "tools_grammar",
]
