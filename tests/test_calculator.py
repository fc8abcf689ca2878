"""The calculator: exact arithmetic inside the allowlist, CalculatorError for everything else."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from textreact.errors import CalculatorError, WrongToolError
from textreact.tools.calculator import LoneNumberError, calculate, evaluate


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1+2", 3),
        (" 1+2 ", 3),
        ("0.1+0.2", 0.3),
        ("6/3", 2),
        ("2.5*2", 5),
        ("1/3", 1 / 3),
        ("-(2 - 5) * +4", 12),
        ("2602000 / 8336000", 2602000 / 8336000),
        ("15 × 37", 555),
        ("15 x 37", 555),
        ("2 x 3 x 4", 24),
        ("15% of 240", 36),
        ("12.5 % OF 80 + 1", 11),
        ("50% of 10% of 200", 10),
        ("10 ÷ 4", 2.5),
        ("１５＋２", 17),
        ("1,000 + 2", 1002),
        ("1,234,567.5 * 2", 2469135),
        ("2^3", 8),
        ("2**10", 1024),
        ("1.05**2", 1.1025),
        ("2**-1", 0.5),
        ("4**0.5", 2),
        ("2+3=", 5),
        ("(1 +\n 2)", 3),
        ("((((1))))", 1),
        ("1e3 + .5", 1000.5),
        ("10**12", 10**12),
        ("-10**12", -(10**12)),
        # edge spellings, decided: exact results, ints when whole
        ("１２３", 123),  # full-width digits are plain digits in another width
        ("1e5", 100000),
        (".5", 0.5),
        ("5.", 5),
        ("--1", 1),
        ("+-+1", -1),
        ("1/3*3", 1),
        ("-0.0", 0),
        ("1e-200*1e-200", 0),  # exact 1e-400 rounds to the nearest float, 0.0, shown whole
        # subnormal literals are finite and in range, and so is their arithmetic
        ("1e-320", 1e-320),
        ("5e-324", 5e-324),
        (".5e-323", 5e-324),
        ("1e-320 * 2", 2e-320),
        ("1e-320 / 4", 2.5e-321),
        ("1e-320 + 1", 1),
        ("2.2250738585072014e-308 / 2", 2.2250738585072014e-308 / 2),
        ("0e999", 0),
        ("0e-9999", 0),
        # a flat sum or product is one level deep, however long
        ("+".join(map(str, range(1, 14))), 91),
        ("+".join(map(str, range(1, 26))), 325),
        ("-".join(["1"] * 25), -23),
        ("1 - 2 + 3 - 4 + 5 - 6 + 7 - 8 + 9 - 10 + 11 - 12 + 13 - 14", -7),
        ("*".join(["2"] * 25), 2**25),
        ("2 * 3 / 4 * 5 / 6 * 7 / 8 * 9 / 10 * 11 / 12 * 13 / 14 * 15", 12.568359375),
        ("1*2 + 3*4 + 5*6 + 7*8 + 9*10 + 11*12 + 13*14 + 15*16", 744),
        ("-1 + -2 + -3 + -4 + -5 + -6 + -7 + -8 + -9 + -10 + -11 + -12 + -13", -91),
        ("(" * 12 + "+".join(["1"] * 12) + ")" * 12, 12),
    ],
)
def test_accepted(expression: str, expected: float) -> None:
    result = evaluate(expression)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # LangChain's old LLMMathChain RCE, and the escapes of numexpr, simpleeval and asteval
        ("__import__('os').system('echo pwned')", "function calls"),
        ("().__class__.__bases__[0].__subclasses__()", "function calls"),
        ("().__class__", "attributes"),
        ("(1).__class__", "attributes"),
        ("[c for c in ().__class__.__base__.__subclasses__()]", "comprehensions"),
        ("lambda: 1", "lambda"),
        ("(lambda x: x)(1)", "function calls"),
        ("f'{1+1}'", "f-strings"),
        ("(x := 5)", "assignment"),
        ("x", 'words in it ("x")'),
        ("abs(-1)", "function calls"),
        ("'a' * 3", "strings"),
        ("b'a'", "bytes"),
        ("1j", "complex numbers"),
        ("True + 1", "booleans"),
        ("7 // 2", "floor division"),
        ("7 % 2", "modulo"),
        ("15% * 240", "invalid syntax"),
        ("1 < 2", "comparisons"),
        ("1 if 1 else 2", "if/else"),
        ("~1", "~"),
        ("1 << 40", "<<"),
        ("[1]", "lists"),
        ("1, 5", "commas"),
        ("0x1F", "plain decimal"),
        ("1_000", "plain decimal"),
        # bounds
        ("9**9**9", "exponent 387420489 is too large"),
        ("2**1000", "exponent 1000 is too large"),
        ("2**50", "2 ** 50 exceeds the limit"),
        ("10**12 + 1", "exceeds the limit"),
        ("1e13", "exceeds the limit"),
        ("1e12/1e-300", "exceeds the limit"),
        ("1/1e-400", "out of range"),
        ("1e400", "out of range (the limit is 1e12)"),
        ("1e-99999999", "out of range (too small"),
        ("1e-324", "out of range (too small"),  # rounds to 0: no float holds it
        ("1e-400", "out of range (too small"),
        ("1" * 150 + "e-600", "out of range (too small"),
        ("1e-320 * 1e320", "out of range (the limit is 1e12)"),
        ("1/0", "division by zero"),
        ("0**-1", "division by zero"),
        ("(-8)**(1/3)", "not a real number"),
        ("(" * 13 + "1" + ")" * 13, "nested too deeply"),
        ("(" * 100 + "1" + ")" * 100, "characters long"),
        ("-" * 199 + "1", "nested too deeply"),  # a run of signs nests: depth before count
        ("1+" * 60 + "1", "more than 50 parts"),
        ("1" * 5000, "5000 characters long"),
        ("1" * 199, "exceeds the limit"),
        ("1" * 2_000_000, "characters long"),
        ("-(-(-(-(-(-(-(-(-(-(-(-(-1))))))))))))", "nested too deeply"),
        # real nesting still counts: right-nested sums, signs, powers
        ("1+(" * 12 + "1" + ")" * 12, "nested too deeply"),
        ("-" * 13 + "1", "nested too deeply"),
        ("2**" * 12 + "1", "nested too deeply"),
        ("+".join(map(str, range(1, 27))), "more than 50 parts"),
        ("*".join(["1"] * 26), "more than 50 parts"),
        ("", "empty"),
        ("   ", "empty"),
        ("1 2", "not a valid arithmetic expression"),
        ("1 +", "not a valid arithmetic expression"),
        ("\x00", "character"),
        ("π * 2", "words in it"),
        ("١٢٣", "character '١'"),  # Arabic-Indic digits: refused, not guessed
        ("5 # 3", "character '#'"),  # a comment would silently drop the rest
        ("1e5 #", "character '#'"),
        ("0b101", "plain decimal"),
        ("01", "leading zeros"),
    ],
)
def test_refused(expression: str, message: str) -> None:
    with pytest.raises(CalculatorError, match=re.escape(message)):
        evaluate(expression)


@pytest.mark.parametrize(
    ("expression", "names", "advice"),
    [
        ("Mount Everest - Mount Fuji", '"Mount Everest", "Mount Fuji"', "Find the number for each"),
        ("(population of Taipei) * 2", '"population of Taipei"', "Find the number for each"),
        ("height_a / height_b", '"height_a", "height_b"', "Find the number for each"),
        ("8849 m - 3776 m", '"m"', "Without the words it is 8849 - 3776:"),
        ("366 days * 24 hours", '"days", "hours"', "Without the words it is 366 * 24:"),
        ("北京 + 上海", '"北京", "上海"', "Find the number for each"),
        ("hello", '"hello"', "and there are none: it does arithmetic, nothing else."),
        ("opposite of hot?", '"opposite of hot"', "and there are none"),
    ],
)
def test_words_for_numbers_are_named_with_what_to_send(
    expression: str, names: str, advice: str
) -> None:
    """A small model writes the quantities' names before it has their numbers, or keeps their
    units: the error names the words and says what to do, instead of "invalid syntax"."""
    with pytest.raises(CalculatorError) as refused:
        evaluate(expression)
    assert f"words in it ({names})" in str(refused.value) and advice in str(refused.value)


@pytest.mark.parametrize(
    ("expression", "needs"),
    [
        ("Mount Everest - Mount Fuji", ("Mount Everest", "Mount Fuji")),
        ("北京 + 上海", ("北京", "上海")),
        ("hello", ()),  # no arithmetic at all: nothing to find first
    ],
)
def test_names_are_a_call_for_another_tool_that_says_what_it_needs(
    expression: str, needs: tuple[str, ...]
) -> None:
    """The loop leaves the calculator out of the next request and keeps what it needed."""
    with pytest.raises(WrongToolError) as refused:
        evaluate(expression)
    assert isinstance(refused.value, CalculatorError) and refused.value.needs == needs


@pytest.mark.parametrize("expression", ["8849 m - 3776 m", "1 +", "2 ** 1000", "1/0"])
def test_what_the_calculator_itself_can_fix_is_no_call_for_another_tool(expression: str) -> None:
    with pytest.raises(CalculatorError) as refused:
        evaluate(expression)
    assert not isinstance(refused.value, WrongToolError)


@pytest.mark.parametrize(
    ("expression", "value"),
    [("2997924580", 2997924580), ("1969", 1969), ("-5", -5), ("(42)", 42), ("1,000", 1000),
     ("3.5e3", 3500), (" 7 =", 7)],
)  # fmt: skip
def test_the_tool_refuses_a_lone_number_as_a_call_for_another_tool(
    expression: str, value: int
) -> None:
    """Nothing to calculate: a model "calculating" a number it recalled is sent elsewhere, and
    the message names the number and both ways on. The library function still takes it."""
    assert evaluate(expression) == value
    with pytest.raises(LoneNumberError) as refused:
        calculate(expression)
    assert isinstance(refused.value, WrongToolError) and isinstance(refused.value, CalculatorError)
    message = str(refused.value)
    assert "single number" in message and "look it up" in message and "final answer" in message
    assert message.startswith(" ".join(expression.strip().rstrip("=").split()).replace(",", ""))


@pytest.mark.parametrize(
    ("expression", "expected"), [("2 + 2", 4), ("-5 * 1", -5), ("15% of 240", 36), ("2^10", 1024)]
)
def test_the_tool_calculates_anything_with_an_operation(expression: str, expected: int) -> None:
    assert calculate(expression) == expected


def test_the_tool_reports_a_bad_expression_before_a_lone_number() -> None:
    with pytest.raises(CalculatorError, match="out of range") as refused:
        calculate("1e400")
    assert not isinstance(refused.value, LoneNumberError)


def test_a_letter_glued_to_a_number_is_named_as_a_character_not_as_a_word() -> None:
    with pytest.raises(CalculatorError, match="the character 'é' is not allowed") as refused:
        evaluate("1é")
    assert not isinstance(refused.value, WrongToolError)


def test_error_is_a_value_error() -> None:
    assert issubclass(CalculatorError, ValueError)


# --- properties -------------------------------------------------------------------------------

_LIMIT = Fraction(10**12)


def _numbers() -> st.SearchStrategy[tuple[str, Fraction]]:
    integers = st.integers(0, 10**6).map(lambda n: (str(n), Fraction(n)))
    decimals = st.tuples(st.integers(0, 10**6), st.integers(1, 3)).map(
        lambda p: (f"{p[0] / 10 ** p[1]:.{p[1]}f}", Fraction(p[0], 10 ** p[1]))
    )
    return integers | decimals


def _expressions() -> st.SearchStrategy[tuple[str, Fraction | None]]:
    """(text, exact value or None when a limit or a division by zero makes it an error)."""

    def extend(children: st.SearchStrategy) -> st.SearchStrategy:
        binary = st.tuples(children, st.sampled_from("+-*/"), children).map(_binary)
        unary = st.tuples(st.sampled_from("+-"), children).map(_unary)
        return binary | unary

    return st.recursive(_numbers(), extend, max_leaves=8)


def _binary(parts: tuple) -> tuple[str, Fraction | None]:
    (left, a), op, (right, b) = parts
    text = f"({left}) {op} ({right})"
    if a is None or b is None or (op == "/" and b == 0):
        return text, None
    value = {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else None}[op]
    return text, _checked(value)


def _unary(parts: tuple) -> tuple[str, Fraction | None]:
    sign, (operand, value) = parts
    text = f"{sign}({operand})"
    if value is None:  # an error inside stays an error
        return text, None
    return text, _checked(-value if sign == "-" else value)


def _checked(value: Fraction | None) -> Fraction | None:
    return None if value is None or abs(value) > _LIMIT else value


@given(_expressions())
def test_agrees_with_exact_fractions(case: tuple[str, Fraction | None]) -> None:
    text, exact = case
    assume(len(text) <= 200 and text.count("(") <= 12)
    if exact is None:
        with pytest.raises(CalculatorError):
            evaluate(text)
        return
    try:
        result = evaluate(text)
    except CalculatorError as error:  # only the structural limits may refuse a valid value
        assert "nested too deeply" in str(error) or "parts" in str(error)
        return
    assume(exact.denominator.bit_length() <= 100)
    assert result == (exact.numerator if exact.denominator == 1 else float(exact))


@given(
    st.integers(0, 9999),
    st.lists(st.tuples(st.sampled_from("+-"), st.integers(0, 9999)), max_size=24),
)
def test_a_flat_sum_of_up_to_25_terms_is_never_too_deep(first: int, rest: list) -> None:
    text = str(first) + "".join(f" {op} {n}" for op, n in rest)
    assert evaluate(text) == first + sum(n if op == "+" else -n for op, n in rest)


@given(st.text(max_size=300))
def test_arbitrary_text_raises_only_calculator_error(text: str) -> None:
    try:
        result = evaluate(text)
    except CalculatorError:
        return
    assert isinstance(result, (int, float)) and abs(result) <= 10**12


_OUTSIDE = st.sampled_from(
    ["x", "abs(1)", "'s'", "1j", "True", "None", "7//2", "7%2", "1<2", "[1]", "{}", "a.b", "...",
     "not 1", "1 and 2", "~1", "1<<2", "1|2", "1&2", "lambda:1", "(y:=1)", "f'{1}'", "b''", "1,2"]
)  # fmt: skip


@given(_expressions(), _OUTSIDE, st.sampled_from("+-*/"))
def test_anything_outside_the_grammar_is_refused(case, outside: str, op: str) -> None:
    text = f"({case[0]}) {op} ({outside})"
    with pytest.raises(CalculatorError):
        evaluate(text)


@given(
    st.lists(
        st.sampled_from(["1", "9", "0", ".", "e", "+", "-", "*", "/", "**", "^", "(", ")", " ",
                         "1e12", "1e-300", "99", ",", "x", "×", "="]),
        max_size=80,
    ).map("".join)
)  # fmt: skip
def test_fuzzed_operator_soup_raises_only_calculator_error(text: str) -> None:
    try:
        result = evaluate(text)
    except CalculatorError:
        return
    assert isinstance(result, (int, float)) and abs(result) <= 10**12
