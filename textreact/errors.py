"""The exception tree. The model's mistakes are data (FormatError, error observations); these
are for misuse of the library and for faults outside it. Constructors only store fields."""

from __future__ import annotations

from typing import Any


class TextReactError(Exception):
    """Base of every exception textreact raises on purpose."""


class ConfigError(TextReactError, ValueError):
    """A wrong argument or setting: the message says what was expected and how to fix it.
    `field` names the argument it is about (a tool's "name", "description", "parameters")
    where one does, so that a caller can point at it without reading the message."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its attributes: a process pool or pytest-xdist sends errors across, and
        the default (the message alone, again through `__init__`) loses `field` and breaks
        a subclass whose `__init__` takes more."""
        return (_unpickled, (type(self), self.args), self.__dict__)


def _unpickled(cls: type[BaseException], args: tuple[Any, ...]) -> BaseException:
    error = cls.__new__(cls)
    error.args = args
    return error


class ToolExampleError(ConfigError):
    """A tool's example does not fit its parameters: the one given is wrong, or none made from
    the schema fits (a pattern or a bound it cannot guess). `problems` is what validation said
    of the example."""

    def __init__(self, message: str, problems: str) -> None:
        super().__init__(message, field="example")
        self.problems = problems


class ModelError(TextReactError, RuntimeError):
    """The model or its server failed in a way the run cannot recover from."""


class NativeToolsUnsupportedError(ModelError):
    """The server refused `tools=`: this model has no native tool calling (Ollama says so)."""


class ScriptExhaustedError(ModelError):
    """A ScriptedModel was called more times than it has completions."""


class ToolError(TextReactError):
    """A tool could not be defined or run."""


class WrongToolError(ToolError, ValueError):
    """Raised by a tool whose input belongs to another tool (names where the calculator needs
    numbers): the message says what is needed, and the next request leaves the tool out, so a
    grammar steers the model to another tool or to its answer instead of the same call again.
    `needs` names what must be found before the tool can run ("Mount Everest", "Mount Fuji"):
    an answer given before the tool has run again is sent back once, with what is missing."""

    def __init__(self, message: str, needs: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.needs = needs


class CallRefusedError(ToolError):
    """Raised by a tool that asked whether to run and was told no (an MCP write behind a
    confirmation): the call was not run, so the model reads it as a refusal, as it reads a
    `before_call` veto, not as the tool's failure with a hint to check its input."""


class ToolArgumentError(ToolError, ValueError):
    """An Action Input does not fit the tool's schema; the message is written for the model.
    `details`, where a `convert` (pydantic's, for `@tool`) gives them: (where, what it said, the
    value received as shown) per problem, so that the message can be told in the run's language
    (`Tool.parse_arguments`)."""

    def __init__(self, message: str, details: tuple[tuple[str, str, str], ...] = ()) -> None:
        super().__init__(message)
        self.details = details


class ServerToolError(ToolError, RuntimeError):
    """An MCP server answered a call with `isError`: the message is what the server said (as
    untrusted as any tool result), so the model reads it as the tool's failure."""


class CalculatorError(ToolError, ValueError):
    """The calculator refused an expression; the message names what was not allowed."""


class MissingExtraError(ConfigError, ImportError):
    """An optional dependency is not installed; the message gives the install command."""
