"""`--model-spec` and `--gguf` text -> the models of one comparison: what each one is (an
endpoint, a GGUF file, or the embedded default) and the name its rows carry.

Only the spelling is checked here (pure functions, no environment, no files): the CLI resolves
`key_env=` and checks each URL, and `prepare_compare` checks that GGUF files exist, all before
the first model starts."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from textreact.errors import ConfigError
from textreact.redact import public_url

#: The options a spec may carry after its target, for an endpoint only.
SPEC_KEYS = ("model", "key_env")
SPEC_FORM = "NAME=BASE_URL[,model=M][,key_env=VAR], NAME=FILE.gguf, or NAME (the embedded model)"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ModelSpec:
    """One model of a comparison; exactly one of `base_url` and `gguf` is set, or neither (the
    embedded default model)."""

    #: The label of its rows, files and chart bars.
    name: str
    base_url: str | None = None
    gguf: Path | None = None
    #: The model name sent to the endpoint (None: `name`).
    model: str | None = None
    #: The environment variable that holds the endpoint's API key.
    key_env: str | None = None

    @property
    def served_model(self) -> str:
        return self.model or self.name


def parse_model_spec(text: str) -> ModelSpec:
    """`NAME=TARGET[,model=M][,key_env=VAR]` as a ModelSpec: a TARGET with `://` is an endpoint,
    any other a GGUF file, none the embedded default. A malformed spec is a ConfigError that
    shows the expected form."""
    head, *options = text.split(",")
    name, _, target = head.partition("=")
    name, target = name.strip(), target.strip()

    def refuse(why: str) -> ConfigError:
        shown = text.replace(target, public_url(target)) if "://" in target else text
        return ConfigError(f"model spec {shown!r}: {why}; expected {SPEC_FORM}")

    if not name or any(c.isspace() or not c.isprintable() for c in name):
        raise refuse("the NAME before '=' must be a non-empty word without spaces")
    if not any(c.isalnum() for c in name):
        raise refuse(f"the NAME {name!r} needs a letter or a digit")
    given: dict[str, str] = {}
    for option in options:
        key, equals, value = (part.strip() for part in option.partition("="))
        if key not in SPEC_KEYS or not equals:
            known = ", ".join(f"{k}=..." for k in SPEC_KEYS)
            raise refuse(f"{option.strip()!r} is not one of {known}")
        if key in given:
            raise refuse(f"{key}= is given twice")
        if not value:
            raise refuse(f"{key}= needs a value")
        given[key] = value
    if "key_env" in given and not _ENV_NAME.fullmatch(given["key_env"]):
        raise refuse(f"key_env={given['key_env']} is not an environment variable's name")
    if "://" in target:
        if not target.lower().startswith(("http://", "https://")):
            raise refuse(f"the base URL {public_url(target)!r} must start with http:// or https://")
        return ModelSpec(name, base_url=target, **given)
    if given:
        raise refuse(f"{', '.join(k + '=' for k in given)} only go with a base URL (an endpoint)")
    return ModelSpec(name, gguf=Path(target) if target else None)


def gguf_spec(path: str) -> ModelSpec:
    """`--gguf PATH`: the file served by the embedded server, named after its file stem."""
    if not path.strip():
        raise ConfigError("--gguf needs the path of a GGUF file")
    return ModelSpec(Path(path).stem or path, gguf=Path(path))


def spec_type(text: str) -> ModelSpec:
    """An argparse type for `--model-spec` (a malformed one is a usage error, exit 2)."""
    try:
        return parse_model_spec(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def gguf_type(text: str) -> ModelSpec:
    """An argparse type for a repeatable `--gguf`."""
    try:
        return gguf_spec(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def check_specs(specs: Sequence[ModelSpec]) -> tuple[ModelSpec, ...]:
    """The specs, refused when two share a name (rows, files and bars are told apart by it) or
    a GGUF file is not there."""
    names = [spec.name for spec in specs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(
            f"two models are named {', '.join(repeated)}; give each its own name with "
            "--model-spec NAME=... (a --gguf file is named after its file stem)"
        )
    for spec in specs:
        if spec.gguf is not None and not spec.gguf.is_file():
            raise ConfigError(
                f"model {spec.name}: no GGUF file at {spec.gguf}; give the path of a .gguf file"
            )
    return tuple(specs)
