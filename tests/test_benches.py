"""Every benchmark in bench/ has a quick mode that CI runs (.ci/run), so that none can rot
unnoticed; the ones that need the embedded model are named there as left out."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_every_benchmarks_quick_mode_or_says_why_not() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    loop = re.search(
        r"for bench in ([a-z ]+); do\n\s+python \"bench/\$\{bench\}_bench.py\" --quick", ci
    )
    assert loop is not None
    run = set(loop.group(1).split())
    left_out = set(re.findall(r"Left out:.*", ci)[0].replace(",", " ").split())
    for script in sorted((ROOT / "bench").glob("*_bench.py")):
        name = script.name.removesuffix("_bench.py")
        assert name in run or f"bench/{script.name}" in left_out, f"{script.name}: not in CI"


def test_every_name_a_benchmark_imports_from_textreact_exists() -> None:
    """The benchmarks CI leaves out (they need a model) still import only what textreact has,
    so a module that moves cannot break one unnoticed."""
    import ast
    import importlib

    missing = []
    for script in sorted((ROOT / "bench").rglob("*.py")):
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("textreact"):
                module = importlib.import_module(node.module)
                missing += [
                    f"{script.name}: {node.module}.{alias.name}"
                    for alias in node.names
                    if not hasattr(module, alias.name)
                    and importlib.util.find_spec(f"{node.module}.{alias.name}") is None
                ]
    assert missing == []
