"""The command line's home: `textreact.cli` only dispatches; each command is one module that
registers its own parser and handler; the flags `run` and `compare` share are one set; and the
process environment is read (and, for uvicorn's workers, written) in one module only."""

from __future__ import annotations

import argparse
import ast
import os
from pathlib import Path

import pytest

from textreact import cli
from textreact.commands import compare, environment, flags, fuzz, mcp, parse, prompt, pull, run
from textreact.serve import cli as serve

PACKAGE = Path(__file__).resolve().parents[1] / "textreact"

#: Each command's module, a minimal command line for it, and the function that runs it.
CASES = [
    (run, ["run", "q"], run.handle),
    (parse, ["parse"], parse.handle),
    (prompt, ["prompt"], prompt.handle),
    (pull, ["pull"], pull.handle),
    (fuzz, ["fuzz"], fuzz.handle),
    (compare, ["compare"], compare.handle),
    (mcp, ["mcp", "list", "servers.json"], mcp.handle),
    (serve, ["serve"], serve.run),
]


def test_the_dispatcher_lists_every_command_in_its_help_order() -> None:
    assert tuple(module for module, _, _ in CASES) == cli.COMMANDS
    choices = next(a for a in cli.build_parser()._actions if a.dest == "command").choices
    assert list(choices) == [argv[0] for _, argv, _ in CASES]


@pytest.mark.parametrize(("module", "argv", "handler"), CASES, ids=[c[1][0] for c in CASES])
def test_each_command_module_builds_its_own_parser(module, argv, handler) -> None:
    commands = argparse.ArgumentParser(prog="p").add_subparsers(dest="command")
    parser = module.add_parser(commands)
    assert parser.prog == f"p {argv[0]}"
    assert parser.parse_args(argv[1:]).handler is handler
    assert cli.build_parser().parse_args(argv).handler is handler


@pytest.mark.parametrize(
    "flag",
    ["--base-url", "--model", "--timeout", "--constrain", "--policies", "--examples",
     "--decision-bias", "--max-tools", "--tools", "--mcp", "--mcp-allow"],
)  # fmt: skip
def test_run_and_compare_share_one_definition_of_their_common_flags(flag) -> None:
    def action(command: str) -> argparse.Action:
        subparsers = next(a for a in cli.build_parser()._actions if a.dest == "command")
        return subparsers.choices[command]._option_string_actions[flag]

    ran, compared = action("run"), action("compare")
    fields = ("dest", "type", "default", "choices", "metavar", "help")
    assert [getattr(ran, f) for f in fields] == [getattr(compared, f) for f in fields]


def test_the_shared_argparse_types_refuse_as_before() -> None:
    assert flags.seconds("2.5") == 2.5 and flags.positive_int("3") == 3
    assert flags.log_odds("-1") == -1.0 and flags.rate("0.5") == 0.5
    for parse_type, text in ((flags.seconds, "nan"), (flags.positive_int, "0"),
                             (flags.log_odds, "inf"), (flags.rate, "1.5")):  # fmt: skip
        with pytest.raises(argparse.ArgumentTypeError):
            parse_type(text)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_no_command_imports_the_dispatcher() -> None:
    commands = [*sorted((PACKAGE / "commands").glob("*.py")), PACKAGE / "serve" / "cli.py"]
    for path in [*commands, PACKAGE / "compare" / "cli.py", PACKAGE / "mcp" / "command.py"]:
        assert "textreact.cli" not in _imports(path), path


_ENVIRONMENT = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def _environment_uses(path: Path) -> list[int]:
    """The lines where `path` reads or writes the process environment through `os`."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute):
            if node.attr in _ENVIRONMENT and getattr(node.value, "id", None) == "os":
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            lines.extend(node.lineno for alias in node.names if alias.name in _ENVIRONMENT)
    return lines


def test_only_one_module_touches_the_process_environment() -> None:
    touching = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := _environment_uses(path))
    }
    assert list(touching) == ["commands/environment.py"], touching


def test_exported_variables_last_as_long_as_the_block() -> None:
    name = "TEXTREACT_TEST_EXPORTED"
    assert name not in os.environ
    with environment.exported({name: "/tmp/x"}):
        assert environment.environment()[name] == "/tmp/x"
    assert name not in os.environ
