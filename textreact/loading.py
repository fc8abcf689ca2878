"""What a `MODULE:NAME` flag names: a parser for `textreact fuzz`, a tool list for `textreact
compare --tools`. The module is a dotted name on the path, or a `.py` file's path, so a user's
own file works from where they stand."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from textreact.errors import ConfigError

__all__ = ["load_object", "load_tools"]


def load_object(spec: str, what: str, example: str, form: str = "module:name") -> Any:
    """`package.module:name`, `path/to/file.py:name` or `module:Class.attr` -> the object it
    names; anything wrong is a ConfigError that says what was expected (`what`, `example`)."""
    module_name, colon, attribute = spec.rpartition(":")
    if not colon or not module_name or not attribute:
        raise ConfigError(f"expected {what} as {form} (e.g. {example}), got {spec!r}")
    try:
        target: Any = _module(module_name)
    except (ImportError, OSError, SyntaxError) as exc:
        raise ConfigError(
            f"cannot import {module_name!r} for {what} {spec!r}: {exc}. Check the module name "
            "or path, and run from the directory that holds it or add it to PYTHONPATH."
        ) from exc
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"{module_name!r} has no attribute {attribute!r} (from {spec!r})")
        target = getattr(target, part)
    return target


def _module(name: str) -> Any:
    if not name.endswith(".py"):
        return importlib.import_module(name)
    path = Path(name).resolve()
    if not path.is_file():
        raise ImportError(f"no file {name}")
    module_id = f"_textreact_user_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(module_id, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{name} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_id] = module  # dataclasses and pickling look a module up by its name
    sys.path.insert(0, str(path.parent))  # the file's own imports of its neighbours
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def load_tools(spec: str) -> tuple[Any, ...]:
    """The tools a `--tools MODULE:NAME` flag names: a list of Tools, or a function returning
    one; anything else is a ConfigError that says what was expected."""
    from textreact.tools import Tool

    found = load_object(spec, "--tools", "my_tools.py:TOOLS")
    tools = found() if callable(found) and not isinstance(found, Tool) else found
    if not isinstance(tools, (list, tuple)) or not all(isinstance(t, Tool) for t in tools):
        raise ConfigError(
            f"--tools {spec} must name a list of textreact Tools (made with @tool or "
            f"Tool.from_schema), got {type(tools).__name__}"
        )
    return tuple(tools)
