"""Grounding (the `grounding` policy): after a copied worked-example call, the copied argument
of that tool is held by the grammar to the run's own words, for the text protocol only."""

from __future__ import annotations

import json

import regex
from hypothesis import given
from hypothesis import strategies as st

from textreact import Agent, ScriptedModel, Tool, builtin_tools
from textreact.constrain import tools_grammar
from textreact.constrain.recognizer import matches
from textreact.policies import CopiedExample, Grounding, Offer, small_model
from textreact.policies.grounding import MOST_WORDS, Hold, held, vocabulary
from textreact.protocols import NativeProtocol, TextProtocol
from textreact.steps import Action, PolicyNote, ToolResult, Turn
from textreact.tools.pattern import MAX_PATTERN, read

QUESTION = "What is the combined population of Taipei and New York City?"


def step(tool: str, value: str, key: str = "expression") -> str:
    return f"Thought: I will call it.\nAction: {tool}\nAction Input: " + json.dumps({key: value})


def pattern_of(tool: Tool, name: str) -> str:
    return tool.parameters["properties"][name]["pattern"]


def test_the_vocabulary_is_the_question_s_words_then_the_results_each_once() -> None:
    words = vocabulary(QUESTION, "2602000 (population of Taipei, 2020)")
    assert words[:3] == ("What", "is", "the")
    assert words.count("population") == 1 and words[-2:] == ("2602000", "2020")


def test_a_script_without_spaces_gives_one_word_per_character() -> None:
    """So that Qwen can compose `台北 人口` from `台北的人口是多少？`."""
    assert vocabulary("台北的人口是多少？", "") == ("台", "北", "的", "人", "口", "是", "多", "少")


def test_a_vocabulary_too_long_for_a_pattern_keeps_the_question_s_words() -> None:
    found = " ".join(f"word{i}" for i in range(2000))
    words = vocabulary(QUESTION, found)
    assert words[:11] == tuple(vocabulary(QUESTION, ""))
    calculator = held(builtin_tools()[0], words)
    assert len(pattern_of(calculator, "expression")) <= MAX_PATTERN
    assert "word1999" not in words


def test_a_held_argument_takes_the_question_s_phrases_and_not_the_example() -> None:
    calculator = held(builtin_tools()[0], vocabulary(QUESTION, ""))
    pattern = regex.compile(pattern_of(calculator, "expression"))
    assert pattern.fullmatch("population of Taipei + population of New York City")
    assert pattern.fullmatch("(12 + 30) * 4") is None  # begins with no word of the run
    assert pattern.fullmatch("population of Paris") is None
    assert pattern.fullmatch("(") is None and pattern.fullmatch("(Taipei") is None


def test_a_held_argument_begins_with_a_word_of_the_run() -> None:
    """Allowed to open with a bracket, Qwen wrote `(and) (and) (and)…` (measured)."""
    words = vocabulary(QUESTION, "2602000 (population of Taipei)\n8336000 (population of NYC)")
    pattern = regex.compile(pattern_of(held(builtin_tools()[0], words), "expression"))
    assert pattern.fullmatch("8336000 + 2602000")
    assert pattern.fullmatch("(and) (and)") is None
    assert pattern.fullmatch("8336000 - 2") is None  # 2 is no number of the run


def test_the_held_grammar_allows_the_run_s_words_and_refuses_the_copy() -> None:
    calculator, lookup = builtin_tools()
    grounded = held(lookup, vocabulary("How tall is Mount Everest?", ""))
    grammar = tools_grammar([calculator, grounded])
    assert not matches(grammar, step("lookup_fact", "height of Mount Everest", "query"))
    assert matches(grammar, step("lookup_fact", "Mount Everest", "query"))
    assert not matches(grammar, step("lookup_fact", "capital of France", "query"))
    assert matches(grammar, step("calculator", "(12 + 30) * 4"))  # not held: not copied


def test_only_plain_strings_are_held_and_the_tool_itself_is_untouched() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "days": {"type": "integer"},
        },
        "required": ["city"],
    }
    weather = Tool.from_schema("weather", "Use it for the weather.", schema)
    grounded = held(weather, ("Paris",))
    assert "pattern" in grounded.parameters["properties"]["city"]
    assert grounded.parameters["properties"]["unit"] == schema["properties"]["unit"]
    assert grounded.parameters["properties"]["code"]["pattern"] == "^[A-Z]{3}$"
    assert "pattern" not in weather.parameters["properties"]["city"]
    assert held(weather, ()) is weather


def test_only_the_arguments_named_are_held() -> None:
    """The copied argument only: a plain string beside it (a language code) stays free."""
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "target": {"type": "string"}},
        "required": ["text", "target"],
    }
    translate = Tool.from_schema("translate", "Use it to translate.", schema)
    grounded = held(translate, ("Paris",), ["text"])
    assert "pattern" in grounded.parameters["properties"]["text"]
    assert grounded.parameters["properties"]["target"] == {"type": "string"}
    assert held(translate, ("Paris",), ["unknown"]) is translate  # nothing named to hold
    both = held(translate, ("Paris",))  # None: every plain string
    assert all("pattern" in both.parameters["properties"][k] for k in ("text", "target"))


def test_a_run_s_hold_offers_the_same_copy_until_its_words_change() -> None:
    """The protocol builds a grammar once per set of tool objects."""
    calculator, lookup = builtin_tools()
    hold = Hold()
    assert hold.offer([calculator, lookup], QUESTION, "") == [calculator, lookup]
    hold.add("lookup_fact", ["query"])
    first = hold.offer([calculator, lookup], QUESTION, "")
    assert first[0] is calculator and first[1] is not lookup
    assert hold.offer([calculator, lookup], QUESTION, "")[1] is first[1]
    later = hold.offer([calculator, lookup], QUESTION, "2602000 (population of Taipei)")
    assert later[1] is not first[1] and "2602000" in pattern_of(later[1], "query")


def test_a_long_question_leaves_room_for_what_the_calls_found() -> None:
    question = " ".join(f"word{i}" for i in range(600))
    words = vocabulary(question, "2602000 (population of Taipei)\n8336000")
    assert "2602000" in words and "8336000" in words and "word0" in words
    # each word costs the server's grammar at every character: bounded, half for the question
    assert len(words) <= MOST_WORDS and sum(w.startswith("word") for w in words) <= MOST_WORDS // 2
    assert vocabulary("x" * 40 + " Taipei", "") == ("Taipei",)  # a word too long is left out


@given(
    st.text(min_size=1, max_size=200),
    st.text(max_size=400),
)
def test_every_held_pattern_is_one_the_grammar_writes(question: str, found: str) -> None:
    """Whatever the question and results hold, the hold is a pattern in the subset the
    grammar reads (else the grammar would silently keep the plain string)."""
    words = vocabulary(question, found)
    grounded = held(builtin_tools()[1], words)
    if words:
        pattern = pattern_of(grounded, "query")
        assert len(pattern) <= MAX_PATTERN and read(pattern) is not None
        assert regex.fullmatch(pattern, " ".join(words[:5]))


def lookup_offered(script: ScriptedModel, request: int) -> str:
    return script.options[request]["grammar"]


def test_after_a_copied_call_the_text_protocol_holds_that_tool_to_the_run_s_words() -> None:
    """Request 2 leaves the copied tool out; request 3 offers it held (the question's words
    and the height found), and the calculator, never copied, as it is."""
    script = ScriptedModel(
        [
            step("lookup_fact", "capital of France", "query"),
            step("lookup_fact", "height of Mount Everest", "query"),
            "Thought: done.\nFinal Answer: 8849 m",
        ]
    )
    agent = Agent(script, protocol="text", policies=[CopiedExample(), Grounding()])
    result = agent.run("How tall is Mount Everest?")
    assert result.steps[0].policy_notes == (
        PolicyNote("copied_example", "not_run", "copied_call", ("query",)),
    )
    assert PolicyNote("grounding", "steered", "tools") in result.steps[2].policy_notes
    first, third = script.options[0]["grammar"], script.options[2]["grammar"]
    assert '"Everest"' not in first and '"Everest"' in third and '"8849"' in third
    assert '"France"' not in third
    assert matches(third, step("calculator", "(12 + 30) * 4"))
    assert not matches(third, step("lookup_fact", "capital of France", "query"))


def test_an_error_s_text_lends_no_words_to_the_hold() -> None:
    """An argument error ends with the tool's correct example: its words are no result."""
    script = ScriptedModel(
        [
            step("lookup_fact", "capital of France", "query"),
            'Thought: again.\nAction: lookup_fact\nAction Input: {"query": 5, "x": 1}',
            "Thought: done.\nFinal Answer: I do not know",
        ]
    )
    result = Agent(script, protocol="text", policies=small_model()).run(
        "How tall is Mount Everest?"
    )
    assert result.steps[0].result.error_kind == "not_run"
    assert result.steps[1].result.error_kind == "arguments"
    assert "capital of France" in result.steps[1].observation
    assert not matches(
        script.options[2]["grammar"], step("lookup_fact", "capital of France", "query")
    )


def test_the_native_protocol_sends_the_tools_schemas_as_they_are() -> None:
    """tools= is the tool's own schema, which a provider validates: no held copy leaks in."""
    script = ScriptedModel(
        [
            ScriptedModel.calls(("lookup_fact", {"query": "capital of France"})),
            ScriptedModel.calls(("lookup_fact", {"query": "height of Mount Everest"})),
            "8849 m",
        ]
    )
    Agent(script, protocol="native", policies=small_model()).run("How tall is Mount Everest?")
    sent = json.dumps([o.get("tools") for o in script.options])
    assert '"lookup_fact"' in json.dumps(script.options[2].get("tools"))
    assert "pattern" not in sent


class Run:
    """A run as the grounding policy reads it: one call refused as a copy."""

    def __init__(self, protocol: object) -> None:
        self.protocol = protocol
        self.question = "How tall is Mount Everest?"
        self.tools = builtin_tools()
        self.opening: list = []
        self.requests = 1
        self.lang = "en"
        self.tool_choice = "auto"
        copied = ToolResult(
            "lookup_fact", {"query": "capital of France"}, error="a copy", error_kind="not_run"
        )
        note = PolicyNote("copied_example", "not_run", "copied_call", ("query",))
        action = Action("lookup_fact", {"query": "capital of France"})
        self.turns = [Turn(1, "", action, "a copy", copied, policy_notes=(note,))]


def test_the_policy_holds_the_copied_tool_only_where_the_protocol_holds_arguments() -> None:
    """Native tools= carries the tools' own schemas: the policy leaves the offer as it is
    there, and replaces the copied tool by its held copy under the text protocol."""
    tools = tuple(builtin_tools())
    offer = Offer(tools, "auto")
    native = Run(NativeProtocol())
    assert Grounding().start(native).steer(native, offer) == offer
    text = Run(TextProtocol())
    steered = Grounding().start(text).steer(text, offer)
    assert steered.tool_choice == "auto" and steered.tools[0] is tools[0]
    assert "pattern" in steered.tools[1].parameters["properties"]["query"]
