"""`textreact compare`: the comparison's flags checked into a plan (`textreact.compare`), then
the model of the model flags, or each `--model-spec` in turn, opened and run through it."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from typing import Any

from textreact.commands.flags import add_model_arguments
from textreact.commands.model import checked_base_url, open_model
from textreact.compare import (
    add_compare_arguments,
    compare_command,
    compare_models,
    prepare_compare,
)
from textreact.errors import ConfigError
from textreact.mcp.command import add_mcp_arguments, open_mcp

__all__ = ["add_parser", "handle"]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register `compare` on the command line's subcommands."""
    compare = commands.add_parser(
        "compare",
        help="text protocol (with and without grammar) vs native tool calls, on one model or "
        "several",
        conflict_handler="resolve",  # compare's own --gguf repeats
    )
    add_model_arguments(compare)
    add_compare_arguments(compare)
    add_mcp_arguments(compare.add_argument_group("MCP servers (extra: mcp)"), interactive=False)
    compare.set_defaults(handler=handle, gguf=None)  # GGUF files come as model specs
    return compare


def handle(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Run the comparison; the exit code is `textreact.compare`'s."""

    plan = prepare_compare(args)  # usage errors before the model starts or any request
    with open_mcp(args, env, [t.name for t in plan.tools or ()]) as mcp:
        if mcp is not None:  # the MCP tools beside the user's own (not the built-in ones)
            plan = dataclasses.replace(plan, tools=(*(plan.tools or ()), *mcp))
        if not plan.specs:
            with open_model(args, env) as model:
                return compare_command(args, model, plan=plan)
        openers = [(spec.name, _spec_opener(args, spec, env)) for spec in plan.specs]
        return compare_models(args, openers, plan=plan)


def _spec_opener(args: argparse.Namespace, spec: Any, env: Mapping[str, str]) -> Any:
    """How to open one compared model: the model flags with the spec's endpoint (its key from
    `key_env`) or GGUF file in place. The key and the URL are checked now, before any model
    starts; OPENAI_BASE_URL is ignored, since the spec names the model."""
    api_key = args.api_key
    if spec.key_env:
        api_key = env.get(spec.key_env)
        if not api_key:
            raise ConfigError(
                f"model {spec.name}: key_env={spec.key_env} names an environment variable that "
                "is not set (or is empty); export it, or leave key_env= out"
            )
    if spec.base_url is not None:
        checked_base_url(spec.base_url, f"--model-spec {spec.name}")
    flags = argparse.Namespace(**vars(args))
    flags.base_url, flags.gguf, flags.api_key = spec.base_url, spec.gguf, api_key
    flags.model = spec.served_model if spec.base_url is not None else None
    rest = {k: v for k, v in env.items() if k != "OPENAI_BASE_URL"}
    return lambda: open_model(flags, rest)
