"""`textreact run`: answer one question with tools, the turns shown live on stderr (or one JSON
object with `--json`), the answer on stdout."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from textreact.commands.flags import (
    EXIT_INTERRUPTED,
    EXIT_MODEL,
    EXIT_NO_ANSWER,
    EXIT_OK,
    add_model_arguments,
    add_tool_options,
    check_budget,
    check_writable,
)
from textreact.commands.live import LiveView
from textreact.commands.model import base_url_of, open_model
from textreact.commands.question import QUESTION_HELP, read_question
from textreact.commands.terminal import json_text
from textreact.errors import ConfigError
from textreact.mcp.command import add_mcp_arguments, open_mcp

__all__ = ["add_parser", "default_policies", "handle"]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register `run` on the command line's subcommands."""
    run = commands.add_parser("run", help="answer a question with tools")
    run.add_argument("question", help=QUESTION_HELP)
    add_model_arguments(run)
    run.add_argument("--max-steps", type=int, default=8, help="model calls at most (default 8)")
    run.add_argument("--lang", choices=("en", "zh"), default="en", help="prompt language")
    run.add_argument("--json", action="store_true", help="print one JSON object, no live steps")
    run.add_argument("--transcript", type=Path, help="write a JSONL transcript here")
    run.add_argument(
        "--protocol",
        choices=("auto", "text", "native", "own", "own-first"),
        default="auto",
        help="auto (default): own-first for a model whose chat template has a tool format that "
        "measured ahead, else text; text: the ReAct text protocol; native: the server's own "
        "tool calling; own: the model's own tool format (from its chat template) in plain text; "
        "own-first: that format for the first decision, then text",
    )
    run.add_argument(
        "--tool-choice",
        default="auto",
        metavar="CHOICE",
        help="auto (default), required (a tool call before the first answer), none, or a tool name",
    )
    add_tool_options(run)
    add_mcp_arguments(run.add_argument_group("MCP servers (extra: mcp)"))
    run.add_argument("-v", "--verbose", action="store_true", help="print every message sent")
    run.set_defaults(handler=handle)
    return run


def default_policies(args: argparse.Namespace, env: Mapping[str, str]) -> str:
    """The policies a run gets unless `--policies` names some: the embedded default model's
    own ("small": it was measured with them, docs/evaluation.md), none for any other model,
    whose behaviour they were not written for."""
    embedded = not (base_url_of(args, env) or args.gguf)
    return "small" if embedded else "none"


def handle(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Run the question; the exit code says how the run ended."""
    from textreact.agent import Agent
    from textreact.loading import load_tools
    from textreact.policies import by_name
    from textreact.transcript import step_record

    question = read_question(args.question)
    tools = None if args.tools is None else load_tools(args.tools)
    policies = by_name(args.policies or default_policies(args, env))  # before the model starts
    check_budget(args.max_tools)
    if args.decision_bias is not None and args.protocol not in ("text", "auto"):
        raise ConfigError("--decision-bias scores the text protocol's branch: use --protocol text")
    if args.transcript is not None:
        check_writable(args.transcript, "--transcript")
    colour = sys.stderr.isatty() and "NO_COLOR" not in env
    live = None if args.json else LiveView(sys.stderr, verbose=args.verbose, colour=colour)
    own = [t.name for t in tools or ()]
    with open_mcp(args, env, own) as mcp, open_model(args, env) as model:
        if mcp is not None:  # the MCP tools beside the user's own (not the built-in ones)
            tools = (*(tools or ()), *mcp)
        agent = Agent(
            model, tools, protocol=args.protocol, max_steps=args.max_steps, lang=args.lang,
            on_event=live, tool_choice=args.tool_choice, policies=policies,
            max_tools=args.max_tools, examples=args.examples, decision_bias=args.decision_bias,
        )  # fmt: skip
        result = agent.run(question, transcript=args.transcript)
        notes = [getattr(model, name, None) for name in ("constrain_note", "decision_note")]
    for note in notes:
        if note and args.verbose:
            print(f"textreact: {note}", file=sys.stderr)
    if args.json:
        data = result.to_dict()
        data["steps"] = [step_record(step) for step in data["steps"]]
        print(json_text(data, sys.stdout))
    elif result.answer is not None:
        print(result.answer)
    if result.stop_reason == "interrupted":
        return EXIT_INTERRUPTED
    if result.error is not None and not args.json:
        print(f"textreact: model error: {result.error}", file=sys.stderr)
    if result.stop_reason == "model_error":
        return EXIT_MODEL
    return EXIT_OK if result.answer is not None else EXIT_NO_ANSWER
