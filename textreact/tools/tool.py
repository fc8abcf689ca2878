"""Tool: one tool's name, when-to-use description, argument schema, example, callable, timeout;
it validates Action Inputs and renders itself for the text prompt, OpenAI and Anthropic."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from textreact import templates
from textreact.errors import ConfigError, ToolArgumentError, ToolExampleError
from textreact.parsing.inputs import NO_ACTION, is_no_action, names_final_answer
from textreact.tools.arguments import (
    MAX_UNION_WORK,
    branches_anywhere,
    check_arguments,
    union_work,
)
from textreact.tools.entry import entry, example_text
from textreact.tools.schema import NO_EXAMPLE, example_value, normalize

_NAME: Final = re.compile(r"[A-Za-z_][\w.-]{0,63}")
#: OpenAI and Anthropic accept only these characters in a tool name; ToolBox.resolve maps the
#: sanitised name back, because it ignores `_`/`.`/`-` differences.
_API_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")
#: What a name is compared on against the parser's "no action" words: case and separators
#: aside, so `None`, `n_a` and `No-Tool` are refused along with `none`, `n/a` and `no tool`.
_NAME_SEPARATORS: Final = re.compile(r"[\s_./-]+")
_NO_ACTION_KEYS: Final = frozenset(_NAME_SEPARATORS.sub("", w).casefold() for w in NO_ACTION)


class NotFound(str):
    """A result that says the tool found nothing (a lookup's miss): the model reads it as any
    text, and the loop knows nothing was found, so a model lost after it is asked the question
    alone (which then drops nothing) and no answer is taken from it. Return `NotFound("no
    entry for ...")` from a tool whose miss still says something useful, such as the closest
    queries; a miss with nothing to say can return "" (an empty result)."""

    __slots__ = ()


@dataclass(frozen=True, eq=False)
class Tool:
    """A tool the model can call. Build one with `@tool` or `Tool.from_schema`.

    Construction normalises `parameters` to standard JSON Schema (BFCL's dialect included),
    fills `example` from the schema where it is empty, and checks that the example itself
    passes `parse_arguments`, so the example every error message shows is a correct call.
    """

    #: The name the model writes after `Action:`.
    name: str
    #: When to use the tool (not only what it is): the model decides from this.
    description: str
    #: JSON Schema of the arguments, `{"type": "object", "properties": ..., "required": ...}`.
    parameters: Mapping[str, Any] = field(default_factory=dict)
    #: Called with the validated arguments as keywords; None for a schema-only tool.
    fn: Callable[..., Any] | None = None
    #: Seconds a call may run before the run goes on without it; None runs it inline, unbounded.
    timeout: float | None = 10.0
    #: One correct set of arguments, shown in the prompt and in every argument error.
    example: Mapping[str, Any] = field(default_factory=dict)
    #: Further validation after the schema (pydantic for `@tool`): arguments -> the values `fn`
    #: receives; raises ToolArgumentError.
    convert: Callable[[dict[str, Any]], dict[str, Any]] | None = field(default=None, repr=False)
    #: Whether a repeated call (the same arguments) may be answered from the first result.
    #: False for a tool whose result may change between calls (a job's status, the time):
    #: then each call runs.
    cache: bool = True
    #: The most characters of this tool's result the model is shown; None: the agent's
    #: `observation_limit`. For a tool that pages its own long results (an MCP server's), so
    #: that one page arrives whole and the page's own note says how to read on.
    result_limit: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ConfigError(
                f"tool name {self.name!r} must start with a letter or _ and use only letters, "
                "digits, _ . - (at most 64 characters), e.g. 'lookup_fact'",
                field="name",
            )
        if _NAME_SEPARATORS.sub("", self.name).casefold() in _NO_ACTION_KEYS or is_no_action(
            self.name
        ):
            raise ConfigError(
                f"tool name {self.name!r} is what a model writes after `Action:` to mean "
                "'no action', so the parser would never call it: name the tool after what it "
                f"does, e.g. {self.name + '_tool'!r}",
                field="name",
            )
        if names_final_answer(self.name):
            raise ConfigError(
                f"tool name {self.name!r} reads as the Final Answer keyword, so the parser takes "
                "a call to it as the run's answer: name the tool after what it does",
                field="name",
            )
        if not isinstance(self.description, str) or not self.description.strip():
            raise ConfigError(
                f"tool {self.name!r} needs a description that says when to use it",
                field="description",
            )
        if self.result_limit is not None and not (
            isinstance(self.result_limit, int) and self.result_limit >= 20
        ):
            raise ConfigError(
                f"tool {self.name!r}: result_limit must be an integer >= 20 or None",
                field="result_limit",
            )
        if self.timeout is not None and not self.timeout > 0:
            raise ConfigError(
                f"tool {self.name!r}: timeout must be > 0 seconds or None", field="timeout"
            )
        schema = normalize(self.parameters, where=f"tool {self.name!r} parameters")
        object.__setattr__(self, "parameters", schema)
        example = dict(self.example) or schema_example(schema)
        object.__setattr__(self, "example", example)
        try:
            self.parse_arguments(example)
        except ToolArgumentError as error:
            raise ToolExampleError(
                f"tool {self.name!r}: its example {example} does not fit its parameters ({error}); "
                "give a correct example",
                str(error),
            ) from None

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        fn: Callable[..., Any] | None = None,
        *,
        timeout: float | None = 10.0,
        example: Mapping[str, Any] | None = None,
        cache: bool = True,
    ) -> Tool:
        """A tool described by a JSON Schema: an OpenAI function definition's `parameters`, an
        MCP tool's `inputSchema`, or a BFCL function (`"dict"`, `"float"`, `"tuple"`, `"any"`)."""
        return cls(name, description, parameters, fn, timeout, example or {}, cache=cache)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly, as if `@tool` had not wrapped it."""
        if self.fn is None:
            raise ConfigError(f"tool {self.name!r} has no function; pass fn= to from_schema")
        return self.fn(*args, **kwargs)

    def parse_arguments(self, raw: str | dict[str, Any], lang: str = "en") -> dict[str, Any]:
        """Repair and validate an Action Input; raise ToolArgumentError with a message for the
        model, in `lang` (each problem: the parameter, what was expected, what was received;
        then a correct example). See `parse_arguments_with_repairs` for what is repaired."""
        return self.parse_arguments_with_repairs(raw, lang)[0]

    def parse_arguments_with_repairs(
        self, raw: str | dict[str, Any], lang: str = "en"
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """(arguments, names of the repairs applied), in the order of the chain documented in
        `textreact.tools.arguments`. The arguments are JSON values, fit to store in a transcript.
        Arguments that would cost `convert` (pydantic) more than MAX_UNION_WORK checks, through
        unions of models nested in each other, are refused before it runs: pydantic tries every
        member of a plain Union at every level (a `Field(discriminator=...)` union it does not).
        The message of the ToolArgumentError is in `lang`, the run's language."""
        arguments, repairs, problems = check_arguments(raw, self.parameters, lang)
        if not problems and self.convert is not None:
            if self._branches and union_work(arguments, self.parameters) > MAX_UNION_WORK:
                # pydantic would try every member at every level
                problems = [templates.note("argument_too_nested", lang)]
            else:
                try:
                    self.convert(arguments)
                except ToolArgumentError as error:
                    details = error.details
                    problems = [converted(details, lang) if details else str(error)]
        if problems:
            raise ToolArgumentError(self.argument_error(problems, lang))
        return arguments, repairs

    @functools.cached_property
    def _branches(self) -> bool:
        """Whether the schema has a union (or an `allOf`) anywhere, `$defs` included: read once
        per tool, so that arguments for a schema without one are not walked by `union_work`,
        which could only count each of their values once (`branches_anywhere`)."""
        return branches_anywhere(self.parameters)

    def argument_error(self, problems: list[str], lang: str = "en") -> str:
        """The model-facing message for `problems`, ending with a correct example, in `lang`."""
        lines = "\n".join(f"- {problem}" for problem in problems)
        example = example_text(self.example, lang)
        return templates.note(
            "argument_error", lang, tool=self.name, problems=lines, example=example
        )

    @property
    def is_async(self) -> bool:
        """True for an `async def` function: the async driver awaits it on its own loop, the
        sync one runs it to completion in the tool's worker thread."""
        fn = self.fn
        return inspect.iscoroutinefunction(fn) or (
            fn is not None and inspect.iscoroutinefunction(type(fn).__call__)
        )

    def invoke(self, arguments: dict[str, Any]) -> Any:
        """Run the function on arguments that `parse_arguments` returned."""
        if self.fn is None:
            raise ConfigError(f"tool {self.name!r} has no function to run")
        values = self.convert(arguments) if self.convert is not None else arguments
        return self.fn(**values)

    def text_spec(self) -> str:
        """The tool's entry in the prompt's <tools> section (`textreact.tools.entry`): name and
        when to use it, one line per argument with its type, then a complete example input,
        at a bounded cost whatever the schema."""
        return entry(self.name, self.description, self.parameters, self.example)

    @property
    def api_name(self) -> str:
        """The name as OpenAI and Anthropic accept it (`uber.ride` -> `uber_ride`)."""
        return _API_UNSAFE.sub("_", self.name)

    def openai_spec(self) -> dict[str, Any]:
        """The entry for OpenAI's `tools=`: `{"type": "function", "function": {...}}`."""
        return {
            "type": "function",
            "function": {
                "name": self.api_name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def anthropic_spec(self) -> dict[str, Any]:
        """The entry for Anthropic's `tools=` (tool_use): name, description, input_schema."""
        return {
            "name": self.api_name,
            "description": self.description,
            "input_schema": self.parameters,
        }


def converted(details: tuple[tuple[str, str, str], ...], lang: str = "en") -> str:
    """The problem line for what a `convert` found (`ToolArgumentError.details`: where, what
    it said, the value received), in the words of `## argument_converted` in `lang`; what
    pydantic itself says is quoted as it is."""
    root = templates.note("argument_root", lang)
    return "; ".join(
        templates.note("argument_converted", lang, path=where or root, message=message,
                       received=received)
        for where, message, received in details
    )  # fmt: skip


def schema_example(schema: dict[str, Any]) -> dict[str, Any]:
    """The example arguments of a normalised schema: its required parameters (the only one, for
    a tool of one), each the first of `example_candidates` that passes validation, so what
    the prompt shows is a correct call made of the schema's own values where it has any."""
    properties = schema["properties"]
    shown = [
        name for name in properties if name in schema.get("required", ()) or len(properties) == 1
    ]
    fits = _fits(schema)
    values = {name: example_value(properties[name], schema, name=name, fits=fits) for name in shown}
    return {name: value for name, value in values.items() if value is not NO_EXAMPLE}


def _fits(root: dict[str, Any]) -> Callable[[Any, dict[str, Any]], tuple[bool, Any]]:
    """A check of one value against one part of `root`, through the same validation an Action
    Input goes through; it returns the value as validation leaves it (`"42"` -> 42)."""

    def fits(value: Any, schema: dict[str, Any]) -> tuple[bool, Any]:
        wrapper = {**root, "properties": {"v": schema}, "required": ["v"]}
        wrapper["additionalProperties"] = False
        arguments, _, problems = check_arguments({"v": value}, wrapper)
        return not problems, arguments.get("v")

    return fits
