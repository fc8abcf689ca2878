"""The fact lookup: every phrasing of a known fact hits, near misses say unknown and suggest."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from textreact.errors import WrongToolError
from textreact.tools import NotFound
from textreact.tools.facts import lookup_fact


@pytest.mark.parametrize(
    ("query", "number"),
    [
        ("population of Taipei", "2602000"),
        ("Taipei population", "2602000"),
        ("What is the population of Taipei?", "2602000"),
        ("  TAIPEI   population!! ", "2602000"),
        ("Taipei's population", "2602000"),
        ("how many people live in Taipei", "2602000"),
        ("台北人口", "2602000"),
        ("台北的人口是多少？", "2602000"),
        ("臺北人口", "2602000"),
        ("population of New York", "8336000"),
        ("New York City population", "8336000"),
        ("纽约人口", "8336000"),
        ("speed of light", "299792458"),
        ("What is the speed of light?", "299792458"),
        ("光速", "299792458"),
        ("光速是多少", "299792458"),
        ("how tall is Mt. Everest?", "8849"),
        ("珠穆朗玛峰有多高", "8849"),
        ("boiling point of water", "100"),
        ("absolute zero", "-273.15"),
    ],
)
def test_hit_is_number_first(query: str, number: str) -> None:
    answer = lookup_fact(query)
    assert answer.split()[0] == number
    float(answer.split()[0])


def test_capitals_answer_with_the_city() -> None:
    assert lookup_fact("capital of France").startswith("Paris (")
    assert lookup_fact("法国的首都是哪里").startswith("Paris (")


@pytest.mark.parametrize(
    ("query", "close"),
    [
        ("population density of Taipei", "population of Taipei"),
        ("population of Tainan", "population of Taiwan"),
        ("Taipai population", "population of Taipei"),
        ("height of Mount Everst", "height of Mount Everest"),
        ("boiling point of methanol", "boiling point of ethanol"),
    ],
)
def test_miss_is_unknown_with_suggestions(query: str, close: str) -> None:
    answer = lookup_fact(query)
    assert answer.startswith("unknown: ") and f'"{close}"' in answer
    assert isinstance(answer, NotFound)  # the loop knows it found nothing


def test_a_hit_and_a_lookup_of_several_facts_are_findings() -> None:
    assert not isinstance(lookup_fact("population of Taipei"), NotFound)
    assert not isinstance(lookup_fact("population of Taipei and New York City"), NotFound)
    assert isinstance(lookup_fact("x" * 500), NotFound)


@pytest.mark.parametrize(
    "query",
    ["population of Zyxtopia", "population of the city of Zyxtopia", "capital of Portugal"],
)
def test_a_miss_on_an_unknown_name_suggests_no_fact_of_the_same_kind(query: str) -> None:
    """ "population of Taipei" is no answer to a question about Zyxtopia: a small model that is
    offered it looks it up and reports Taipei's population as Zyxtopia's."""
    answer = lookup_fact(query)
    assert "Closest" not in answer and "say that it is not known" in answer


@pytest.mark.parametrize(
    ("query", "about"),
    [
        ("Mount Everest", "height of Mount Everest"),
        ("Burj Khalifa", "height of the Burj Khalifa"),
        ("atomic number gold", "atomic number of gold"),
        ("speed of light in metres per second", "speed of light in vacuum"),
        ("height of Mount Everest in metres", "height of Mount Everest"),
        ("boiling point of ethanol in degrees Celsius", "boiling point of ethanol"),
    ],
)
def test_words_of_one_fact_only_answer_it_by_name(query: str, about: str) -> None:
    """A query that leaves out a noun, or adds the unit it wants, still finds the one fact its
    words belong to; the answer names the fact, so the model can tell what it got."""
    assert f"({about}" in lookup_fact(query)


@pytest.mark.parametrize(
    ("query", "about"),
    [
        ("average distance from the Earth to the Moon", "average distance from the Earth to"),
        ("mean distance from the Earth to the Sun", "one astronomical unit"),
        ("population of Taipei in 2020", "population of Taipei, 2020"),
    ],
)
def test_a_known_query_with_words_of_its_fact_s_description_answers_it(
    query: str, about: str
) -> None:
    """Qwen asked for the "average distance from the Earth to the Moon" and was told it was
    unknown; the fact says it is the average one."""
    assert f"({about}" in lookup_fact(query)


@pytest.mark.parametrize(
    "query",
    ["population density of Taipei", "average population of Taipei", "distance to the Sun 1975"],
)
def test_a_known_query_with_words_its_fact_does_not_say_is_a_miss(query: str) -> None:
    """A wrong number is worse than a miss: "density" is another fact."""
    assert lookup_fact(query).startswith("unknown: ")


@pytest.mark.parametrize("query", ["Taipei", "population", "m", "km per hour", "Taipei 1975"])
def test_words_shared_by_several_facts_or_units_alone_are_a_miss(query: str) -> None:
    assert lookup_fact(query).startswith("unknown: ")


def test_a_miss_says_how_to_answer_when_no_suggestion_fits() -> None:
    assert "say that it is not known" in lookup_fact("population of Zyxtopia")


@pytest.mark.parametrize("query", ["clear daytime sky", "number of legs a spider has", "", "?"])
def test_a_miss_close_to_no_known_fact_suggests_nothing(query: str) -> None:
    """An unrelated suggestion is worse than none: a small model copies it as its answer."""
    answer = lookup_fact(query)
    assert answer.startswith("unknown: ") and "nothing close to it is" in answer
    assert "Closest" not in answer and "answer it from what you know" in answer


def test_typo_suggests_the_intended_fact() -> None:
    assert '"population of Taipei"' in lookup_fact("Taipai population")


def test_every_bundled_query_finds_its_own_fact() -> None:
    data = json.loads(resources.files("textreact.tools").joinpath("facts.json").read_text("utf-8"))
    assert len(data["facts"]) >= 50
    for fact in data["facts"]:
        for query in fact["queries"]:
            assert lookup_fact(query) == f"{fact['value']} ({fact['about']})", query


@given(st.text(max_size=200))
def test_answers_text_or_refuses_only_arithmetic(query: str) -> None:
    """Any text gets an answer or a miss; only a calculation is refused, as a call for the
    calculator (the loop then leaves the lookup out of the next request)."""
    try:
        assert isinstance(lookup_fact(query), str)
    except WrongToolError as error:
        assert "is arithmetic" in str(error) and any(c.isdigit() for c in query)


@pytest.mark.parametrize(
    "query",
    ["x" * 1_000_000, " ".join(str(i) for i in range(100_000)), "人" * 100_000],
    ids=["1 MB", "100k words", "100k CJK"],
)
def test_a_huge_query_is_refused_before_matching(query: str) -> None:
    assert lookup_fact(query) == (
        f"unknown: the query is {len(query)} characters long; ask for one fact in a few words "
        "(at most 200 characters)."
    )


@given(st.text(max_size=300))
def test_any_query_gives_a_string(query: str) -> None:
    answer = lookup_fact(query)
    assert isinstance(answer, str) and answer


@pytest.mark.parametrize(
    ("query", "parts"),
    [
        (
            "combined population of Taipei and New York City",
            ["population of Taipei", "population of New York"],
        ),
        (
            "How much higher is Mount Everest than Mount Fuji",
            ["height of Mount Everest", "height of Mount Fuji"],
        ),
        ("population of Tokyo minus London", ["population of Tokyo", "population of London"]),
        ("北京和上海的人口加起来是多少", ["北京人口", "上海人口"]),
    ],
)
def test_a_query_for_several_facts_answers_each_in_order(query: str, parts: list[str]) -> None:
    """A small model asks for everything a question needs in one lookup, and told to ask for
    each fact it answers with the first: each fact comes back, one line each, in the order the
    question names them."""
    answer = lookup_fact(query)
    head, *lines = answer.split("\n")
    assert head.endswith(f"names {len(parts)} facts; each one:")
    assert lines == [f"- {lookup_fact(part)}" for part in parts]
    assert not any(line.startswith("- unknown") for line in lines)


def test_units_that_are_the_subject_are_not_dropped() -> None:
    """ "seconds in a leap year" is not "days in a leap year": only a closing "in <units>" is
    dropped, and the miss suggests the two facts that make it up."""
    answer = lookup_fact("seconds in a leap year")
    assert answer.startswith("unknown: ")
    assert '"days in a leap year"' in answer and '"seconds in a day"' in answer


@pytest.mark.parametrize(
    "query", ["17 * 23", "1234 + 5678", "2**10", "(45 + 55) * 12", "3.5 x 4", "15% of 240"]
)
def test_a_calculation_is_told_to_be_calculated(query: str) -> None:
    """SmolLM2 sends arithmetic to the lookup when the example it saw last is a lookup."""
    with pytest.raises(WrongToolError, match="is arithmetic, not a fact to look up"):
        lookup_fact(query)


@pytest.mark.parametrize("query", ["Taipei 101", "1969", "height of Taipei 101"])
def test_numbers_in_a_query_are_no_calculation(query: str) -> None:
    assert "arithmetic" not in lookup_fact(query)
