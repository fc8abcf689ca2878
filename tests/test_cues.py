"""What a question's wording fixes about the arithmetic on two things it names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from textreact.policies.cues import Comparison, comparison

_PIECES = st.sampled_from(
    ["how many times", "how much more", "how many fewer", "ratio of", " than ", " as ", " to ",
     "是", "比", "的几倍", "高多少", "少多少", "Tokyo", "London", "of", "the", " ", "(", "?"]
)  # fmt: skip


@pytest.mark.parametrize(
    ("question", "names", "asked"),
    [
        ("How many times taller is the Burj Khalifa than the Eiffel Tower?",
         ["Eiffel Tower", "Burj Khalifa"], ("Burj Khalifa", "/", "Eiffel Tower")),
        # a name the question mentions by its last words
        ("How many times larger is the population of New York City than that of Taipei?",
         ["population of Taipei", "population of New York City"],
         ("population of New York City", "/", "population of Taipei")),
        ("How many times is A as tall as B?", ["A1", "B1"], None),  # names it does not mention
        ("What is the ratio of Tokyo's population to London's?", ["London", "Tokyo"],
         ("Tokyo", "/", "London")),
        ("How many more people live in Tokyo than in London?", ["London", "Tokyo"],
         ("Tokyo", "-", "London")),
        ("How much higher is Mount Everest than Mount Fuji, in metres?",
         ["Mount Fuji", "Mount Everest"], ("Mount Everest", "-", "Mount Fuji")),
        # a falling comparative asks for the second less the first
        ("How much shorter is Mount Fuji than Mount Everest?", ["Mount Fuji", "Mount Everest"],
         ("Mount Everest", "-", "Mount Fuji")),
        ("How many fewer people live in London than in Tokyo?", ["London", "Tokyo"],
         ("Tokyo", "-", "London")),
        ("北京的人口是上海的几倍？", ["上海人口", "北京人口"], ("北京人口", "/", "上海人口")),
        ("珠穆朗玛峰比富士山高多少米？", ["富士山", "珠穆朗玛峰"], ("珠穆朗玛峰", "-", "富士山")),
        ("上海的人口比北京少多少？", ["上海人口", "北京人口"], ("北京人口", "-", "上海人口")),
        ("富士山比珠穆朗玛峰矮多少米？", ["富士山", "珠穆朗玛峰"], ("珠穆朗玛峰", "-", "富士山")),
        # a name whose longest mention would take the word that asks (`富士山高`)
        ("珠穆朗玛峰比富士山高多少米？", ["珠穆朗玛峰高度", "富士山高度"],
         ("珠穆朗玛峰高度", "-", "富士山高度")),
        ("How many times is the Burj Khalifa as tall as the Eiffel Tower?",
         ["Eiffel Tower", "Burj Khalifa"], ("Burj Khalifa", "/", "Eiffel Tower")),
        # offsets in the question itself, whatever case folding does to its length
        ("İİİİ Straße: how many more people live in Tokyo than in London?", ["London", "Tokyo"],
         ("Tokyo", "-", "London")),
    ],
)  # fmt: skip
def test_the_words_that_fix_the_order_and_the_operator(
    question: str, names: list[str], asked: tuple[str, str, str] | None
) -> None:
    assert comparison(question, names) == (None if asked is None else Comparison(*asked))


@pytest.mark.parametrize(
    ("question", "names"),
    [
        # a sum: the order does not matter, and "combined" asks no order
        ("What is the combined population of Taipei and New York City?", ["Taipei", "New York"]),
        # "how many times" with no "than" or "as" between the names: which divides which?
        ("How many times does the Moon fit into the Earth?", ["Moon", "Earth"]),
        # the asking words after the first name
        ("Tokyo has how many more people than London?", ["Tokyo", "London"]),
        # a difference with no direction
        ("What is the difference between the heights of K2 and Everest?", ["K2", "Everest"]),
        # three names, or one
        ("How many more people live in Tokyo than in London and Paris?",
         ["Tokyo", "London", "Paris"]),
        ("How many more people live in Tokyo than in London?", ["Tokyo"]),
        # a multiple of something smaller: A / B to some readers, B / A to others
        ("How many times slower is sound than light?", ["speed of light", "speed of sound"]),
        ("How many times smaller is the Moon than the Earth?", ["Earth", "Moon"]),
        ("光速比声速快几倍？", ["光速", "声速"]),  # A / B, or A / B - 1
        ("东京人口比伦敦人口多多少倍？", ["东京人口", "伦敦人口"]),
        ("How many times is London smaller than Tokyo?", ["London", "Tokyo"]),
        ("How many times is London as small as Tokyo?", ["London", "Tokyo"]),
        ("How many times smaller is Mall of America than West Edmonton Mall?",
         ["Mall of America", "West Edmonton Mall"]),
        # "how many times" that counts
        ("How many times has Brazil won the World Cup more than Germany?", ["Brazil", "Germany"]),
        # two comparisons: which one is this call for?
        ("How many times bigger is London than Tokyo, and how many more people live in Tokyo"
         " than London?", ["Tokyo", "London"]),
        ("上海人口是北京的几倍，比北京多多少？", ["上海人口", "北京人口"]),
        # of two years, the earlier is the smaller
        ("How much longer ago was Rome founded than Paris?", ["Rome", "Paris"]),
        # a name found only inside another word
        ("How many more people live in Romeo than in Paris?", ["Rome", "Paris"]),
        # "as well as" links no comparison
        ("How many times have Brazil as well as Germany won the World Cup?",
         ["Brazil", "Germany"]),
        # of two years, the older is the smaller: no direction in the word
        ("How much older is Harvard than Yale?", ["Harvard founded", "Yale founded"]),
        # the asking words only before the first name, in the question's own offsets
        ("İİİİİİİİİİİİİİİİİİİİİİİİ: Tokyo has how many more people than London?",
         ["Tokyo", "London"]),
        # longer than a sentence or two
        ("How many more people live in Tokyo than in London? " + "Think it over. " * 80,
         ["Tokyo", "London"]),
        # both names found only as the same words ("population of"): no place for either
        ("How many times larger is the population of Oslo than that of Bergen?",
         ["population of Tromsø", "population of Narvik"]),
    ],
)  # fmt: skip
def test_no_comparison_where_the_words_do_not_fix_one(question: str, names: list[str]) -> None:
    assert comparison(question, names) is None


@given(st.lists(_PIECES, max_size=12).map("".join), st.lists(_PIECES, max_size=3).map("".join),
       st.lists(_PIECES, max_size=3).map("".join))  # fmt: skip
def test_a_comparison_is_of_the_two_names_given_in_some_order(
    question: str, one: str, other: str
) -> None:
    asked = comparison(question, [one, other])
    if asked is not None:
        assert {asked.first, asked.second} == {one, other} and asked.first != asked.second
        assert asked.operator in ("/", "-")
