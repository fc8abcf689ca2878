"""What a user gets without flags: the embedded default model runs with its own policies (it
was measured with them), any other model with none; a named set always wins."""

from __future__ import annotations

import pytest

from textreact.cli import build_parser
from textreact.commands.run import default_policies as _default_policies


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        ([], {}, "small"),
        (["--base-url", "http://127.0.0.1:9/v1"], {}, "none"),
        ([], {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, "none"),
        (["--gguf", "other.gguf"], {}, "none"),
    ],
)
def test_the_embedded_default_model_gets_its_own_policies(
    argv: list[str], env: dict[str, str], expected: str
) -> None:
    args = build_parser().parse_args(["run", "q", *argv])
    assert args.policies is None and _default_policies(args, env) == expected
