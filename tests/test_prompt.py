"""The system prompt and the worked example: rendered from prompts/, keywords from grammar."""

from __future__ import annotations

import re

import pytest

from textreact import grammar, prompt, templates, tool
from textreact.errors import ConfigError
from textreact.parser import parse
from textreact.tools import Tool, builtin_tools


def section(text: str, name: str) -> str:
    """The body of a `<name>` ... `</name>` section, each tag alone on its line."""
    match = re.search(rf"^<{name}>\n(.*?)\n</{name}>$", text, re.DOTALL | re.MULTILINE)
    assert match, f"no <{name}> section in:\n{text}"
    return match.group(1)


@pytest.mark.parametrize("lang", grammar.LANGUAGES)
def test_system_prompt_has_tools_and_format_in_the_grammar_of_its_language(lang):
    tools = builtin_tools()
    text = prompt.system_prompt(tools, lang)
    tools_part, format_part = section(text, "tools"), section(text, "format")
    for t in tools:
        assert t.name in tools_part
    for keyword in grammar.KEYWORDS:
        assert grammar.label(keyword, lang) in format_part
    assert "$" not in text


@pytest.mark.parametrize("lang", grammar.LANGUAGES)
def test_worked_example_parses_with_our_own_parser(lang):
    messages = prompt.example_messages(lang)
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant"] * (len(messages) // 2) and len(messages) >= 6
    steps = [parse(m["content"]) for m in messages[1::2]]
    assert steps[-1].kind == "final" and "error" not in {s.kind for s in steps}
    assert {s.tool for s in steps if s.kind == "action"} == {"lookup_fact", "calculator"}
    tools = {t.name: t for t in builtin_tools()}
    observation = grammar.label(grammar.OBSERVATION, lang)
    for i, step in enumerate(steps):
        if step.kind == "action":  # a valid call, answered by an observation
            tools[step.tool].parse_arguments(step.input)
            assert messages[2 * i + 2]["content"].startswith(observation)


def test_the_english_example_shows_one_call_then_the_answer():
    """Each exchange of the English example is one call and its answer, so no content of a
    second step (a unit conversion, say) can lend itself to another question."""
    steps = [parse(m["content"]) for m in prompt.example_messages()[1::2]]
    assert [s.kind for s in steps] == ["action", "final", "action", "final"]


def test_opening_is_system_example_question():
    messages = prompt.opening_messages("What is 2+2?", builtin_tools())
    assert messages[0]["role"] == "system"
    assert messages[-1] == {"role": "user", "content": "What is 2+2?"}
    assert len(messages) == 2 + len(prompt.example_messages())


def test_the_example_is_sent_whatever_the_tools_and_can_be_replaced_or_left_out():
    only = [t for t in builtin_tools() if t.name == "calculator"]
    assert prompt.opening_messages("q", only)[1:-1] == prompt.example_messages()
    own = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Final Answer: hi"}]
    assert prompt.opening_messages("q", only, examples=own)[1:3] == own
    assert len(prompt.opening_messages("q", only, examples=[])) == 2


def test_a_missing_slot_is_an_error_not_a_blank():
    with pytest.raises(ConfigError, match=r"\$format"):
        templates.fill("<tools>$tools</tools> $format", {"tools": "x"}, name="t.md")
    with pytest.raises(ConfigError, match="malformed"):
        templates.fill("costs 5$", {}, name="t.md")


def test_unknown_language_and_missing_template_are_config_errors():
    with pytest.raises(ConfigError, match="language"):
        templates.load_template("system.md", "fr")
    with pytest.raises(ConfigError, match=r"nope\.md"):
        templates.load_template("nope.md")


def test_exchange_text_must_use_known_roles():
    with pytest.raises(ConfigError, match="must start"):
        prompt.parse_exchange("hello\n### user\nhi")
    assert prompt.parse_exchange("### user\nhi\n### assistant\nho") == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ho"},
    ]


def test_user_tools_render_with_the_bundled_example():
    @tool
    def ping(host: str) -> str:
        """Use this to check whether a host is up.

        Args:
            host: the host name
        """
        return "up"

    messages = prompt.opening_messages("Is example.org up?", [ping])
    assert messages[1:-1] == prompt.example_messages()
    system = messages[0]["content"]
    assert "ping" in section(system, "tools") and "whether a host is up" in system
    assert "Action Input: a JSON object with the tool's arguments, e.g. {" in system


@pytest.mark.parametrize("lang", grammar.LANGUAGES)
def test_every_engine_note_renders_in_every_language(lang):
    slots = {"message": "MSG", "hint": "HINT", "rules": "RULES", "max_steps": "7"}
    for name in ("truncated", "best_effort", "format_error", "format_error_again"):
        text = templates.note(name, lang, **slots)
        assert "$" not in text and text.strip() == text
    assert grammar.label(grammar.FINAL_ANSWER, lang) in templates.note("best_effort", lang, **slots)
    with pytest.raises(ConfigError, match="no section '## nope'"):
        templates.note("nope", lang)


# tool rendering: example values from the schema itself, never a placeholder a model copies


def _example_of(name: str, spec: dict) -> object:
    schema = {"type": "object", "properties": {name: spec}, "required": [name]}
    return Tool.from_schema("t", "Use it.", schema).example[name]


@pytest.mark.parametrize(
    ("name", "spec", "expected"),
    [
        ("city", {"type": "string", "examples": ["Paris"], "default": "Rome"}, "Paris"),
        ("units", {"type": "string", "default": "metric"}, "metric"),
        ("level", {"enum": ["low", "high"]}, "low"),
        ("flag", {"const": "on"}, "on"),
        (
            "city",
            {"type": "string", "description": "The city, e.g. 'San Francisco, CA'."},
            "San Francisco, CA",
        ),
        ("city", {"type": "string", "description": "The city, for instance Boston, MA"}, "Boston"),
        ("count", {"type": "integer", "description": "How many, e.g. 42"}, 42),
        ("rate", {"type": "number", "description": "The rate. Default is 0.05."}, 0.05),
        (
            "tags",
            {
                "type": "array",
                "items": {"type": "string"},
                "description": "Tags, e.g. ['red', 'blue']",
            },
            ["red", "blue"],
        ),
        (
            "food",
            {
                "type": "array",
                "items": {"type": "string"},
                "description": "Diet, e.g. vegan, gluten-free.",
            },
            ["vegan"],
        ),
        ("count", {"type": "integer", "description": "e.g. 'many'"}, 1),  # does not fit: skipped
        ("mail", {"type": "string", "format": "email"}, "name@example.com"),
        ("day", {"type": "string", "format": "date"}, "2024-01-31"),
        ("player_name", {"type": "string"}, "<player name>"),
        ("code", {"type": "string", "maxLength": 3}, "x"),  # "<code>" is too long to fit
        ("repos", {"type": "array", "items": {"type": "string"}}, ["<repos>"]),
        ("size", {"type": "integer", "minimum": 10}, 10),
        ("share", {"type": "number"}, 0.5),
        ("share", {"type": "number", "minimum": 2, "maximum": 3}, 2),
        ("on", {"type": "boolean"}, True),
        ("limit", {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 5}]}, 5),
        (
            "point",
            {
                "type": "object",
                "properties": {"x": {"type": "number"}, "label": {"type": "string"}},
                "required": ["label"],
            },
            {"label": "<label>"},
        ),
    ],
)
def test_example_values_come_from_the_schema_itself(name, spec, expected):
    assert _example_of(name, spec) == expected


def test_no_rendering_shows_a_placeholder_the_model_could_copy_as_data():
    specs = [{"type": "string"}, {"type": "array", "items": {"type": "string"}}, {}]
    for spec in specs:
        text = Tool.from_schema("t", "Use it.", {"properties": {"query": spec}}).text_spec()
        assert '"text"' not in text
        assert '"<query>"' in text.splitlines()[-1], text  # the example line


def test_optional_and_nullable_types_are_named_right():
    @tool
    def find(city: str, limit: float | None = None, tags: list[str] | None = None) -> str:
        """Use this to find places in a city."""
        return ""

    lines = find.text_spec().splitlines()
    assert "  city (string, required)" in lines
    assert "  limit (number or null, optional)" in lines
    assert "  tags (array of string or null, optional)" in lines
    labels = {
        "a": {"type": ["string", "null"]},
        "b": {"type": "integer", "nullable": True},
        "c": {"anyOf": [{"type": "null"}, {"type": "boolean"}]},
        "d": {},
        "e": {"const": "x"},
    }
    text = Tool.from_schema("t", "Use it.", {"properties": labels}).text_spec()
    for line in (
        "a (string or null",
        "b (integer or null",
        "c (boolean or null",
        "d (any",
        'e ("x"',
    ):
        assert f"  {line}, optional)" in text, text
