"""`${VAR}` in an `mcpServers` entry -> its value from the environment the caller gives, in the
forms Claude Code (`${VAR}`, `${VAR:-default}`) and Cursor (`${env:VAR}`) expand, so that a
config written for them keeps its secrets out of the file here too. Reading a config never
reads the process environment itself: the command line passes it (`textreact.mcp.command`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from textreact.errors import ConfigError

__all__ = ["expand"]

#: `$${` (a literal `${`), a reference textreact expands (the name, the default after `:-`, which
#: holds no `${`: a nested reference is not expanded), or any other `${...}`, a nested default
#: among them, which is refused rather than passed on as it is.
_REFERENCE: Final = re.compile(
    r"\$\$\{|\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-((?:[^}$]|\$(?!\{))*))?\}"
    r"|\$\{[^}]{0,40}\}?"
)
_FORMS: Final = "${NAME}, ${NAME:-default} or ${env:NAME} (and $${ for a literal ${)"
_NO_ENVIRON: Final = "no environment was given: load_config(path, environ=os.environ)"


def expand(text: str, environ: Mapping[str, str] | None, where: str) -> str:
    """`text` with each reference replaced by its variable's value (a default where the
    variable is unset or empty). A variable that is not set and has no default, or a form
    textreact does not expand, is a ConfigError naming `where` and the reference. With no
    `environ`, no variable is set."""
    if "${" not in text:
        return text

    def value(match: re.Match[str]) -> str:
        whole, name, default = match[0], match[1], match[2]
        if whole == "$${":
            return "${"
        if name is None:
            raise ConfigError(
                f"{where}: {whole} is not a variable textreact expands; write {_FORMS}"
            )
        found = (environ or {}).get(name)
        if found or (found is not None and default is None):
            return found
        if default is not None:
            return default
        hint = "" if environ is not None else f" ({_NO_ENVIRON})"
        raise ConfigError(
            f"{where} uses ${{{name}}}, which is not set{hint}; set it, give a default "
            f"(${{{name}:-value}}), or write the value itself"
        )

    return _REFERENCE.sub(value, text)
