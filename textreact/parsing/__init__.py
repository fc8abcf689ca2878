"""The parser's parts, one job each; `textreact.parser.parse` is the entry point.

window    where to look: leading reasoning, later <think> blocks, an end-of-turn token, a
          stop-word residue, a leading run of empty keywords
canonical the canonical form, read by one literal match before anything else
keywords  the keyword tokens of that window, found in one pass
reader    the decision: the one action, the final answer, or what is missing
inputs    Action Inputs, call syntax and tool names
blobs     tool calls written as JSON objects
messages  FormatError problems, messages and hints (from prompts/notes.md), and the
          implicit-answer checks
calls     several calls in one reply, where the caller allows them (`parse_calls`)
"""
