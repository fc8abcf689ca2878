"""The package as users get it: the public surface, a light import, and a wheel that carries its
prompt templates and data (so it works from a normal install, not only an editable one)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import zipfile

import pytest

import textreact


def test_all_is_sorted_and_every_name_is_the_object_its_module_defines():
    """A name loaded on first use is the very object of the module `_LAZY` names (not a copy or
    a stand-in), and every other name is defined in the package module itself."""
    assert textreact.__all__ == sorted(textreact.__all__)
    assert list(textreact._LAZY) == sorted(textreact._LAZY)
    for name in textreact.__all__:
        value = getattr(textreact, name)
        if name in textreact._LAZY:
            assert value is getattr(importlib.import_module(textreact._LAZY[name]), name), name
        else:
            assert vars(textreact)[name] is value, name


def test_deprecated_and_internal_names_are_not_exported_but_stay_importable():
    """`NativeAgent` (deprecated: `Agent(protocol="native")`), `ToolBox` and `CalculatorError`
    (internal) left `__all__`; their modules still give them."""
    from textreact.agent import NativeAgent
    from textreact.errors import CalculatorError
    from textreact.tools import ToolBox

    for name, value in (("NativeAgent", NativeAgent), ("ToolBox", ToolBox),
                        ("CalculatorError", CalculatorError)):  # fmt: skip
        assert name not in textreact.__all__ and name not in textreact._LAZY
        assert not hasattr(textreact, name), name
        assert value.__name__ == name


def test_all_is_complete_and_leaks_nothing_private():
    """As httpx checks its own: every public name the package module defines or loads lazily
    is in __all__, and nothing in __all__ is private or a submodule."""
    import types

    for name in textreact.__all__:
        assert not name.startswith("_"), name
        assert not isinstance(getattr(textreact, name), types.ModuleType), name
    defined = {
        name
        for name, value in vars(textreact).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    lazy = set(textreact._LAZY)
    assert defined | lazy <= set(textreact.__all__)
    assert set(textreact.__all__) <= defined | lazy


def test_what_a_user_writes_first_is_exported():
    first_lines = {
        "Agent", "Result", "Turn", "StopReason", "tool", "Tool", "parse", "OpenAICompatModel",
        "AsyncOpenAICompatModel", "ChatModel", "ScriptedModel", "TextProtocol",
        "NativeProtocol", "ModelError", "ConfigError", "ToolArgumentError",
    }  # fmt: skip
    assert first_lines <= set(textreact.__all__)


def test_import_is_light():
    code = (
        "import sys, textreact; heavy = [m for m in ('openai', 'pydantic', 'hypothesis', 'httpx')"
        " if m in sys.modules]; print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_wheel_ships_prompts_and_data_and_works_from_a_plain_install(tmp_path):
    pytest.importorskip("hatchling", reason="building the wheel needs hatchling (test extra)")
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    build = [sys.executable, "-m", "pip", "wheel", str(root), "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "-w", str(tmp_path), "-q"], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("textreact-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("system.md", "format.md", "example.md", "notes.md", "zh/system.md", "zh/notes.md"):
        assert f"textreact/prompts/{name}" in names
    assert "textreact/tools/facts.json" in names
    target = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target)]
    subprocess.run([*install, str(wheel)], check=True, capture_output=True)
    code = (
        "import json, textreact, textreact.prompt as p; from textreact.tools import builtin_tools;"
        "m = p.opening_messages('q', builtin_tools(), lang='zh');"
        "print(json.dumps([textreact.__file__, len(m), m[0]['content'][:40]]))"
    )
    env = {"PYTHONPATH": str(target), "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    location, count, start = json.loads(done.stdout)
    assert location.startswith(str(target))
    assert count == 10 and "每次回复只写一步" in start  # system, two exchanges, question
