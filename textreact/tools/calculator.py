"""The calculator tool's engine: an arithmetic expression -> an exact number, or CalculatorError.

The expression is parsed with `ast` and only an explicit allowlist of node types is evaluated
(never `eval`). Arithmetic is exact: every literal becomes a `fractions.Fraction` from its
decimal text, so `0.1 + 0.2` is exactly 3/10 and the result carries no binary-float noise; the
only inexact step is a fractional power such as `2 ** 0.5`.

Limits, checked in this order so that hostile input is rejected before it costs anything:
length (200 characters, before `ast.parse`: it bounds the tree to a few hundred nodes),
parenthesis depth (12, before `ast.parse`), nesting depth (12), AST node count (50), the
allowlist, then during evaluation the magnitude of every literal, intermediate and final value
(|x| <= 1e12), division by zero, and powers (exponent |e| <= 100, no complex results). Depth
comes before the count, so an expression past both is refused for its nesting: a run of 60
signs (`------...1`) or a tower of powers is one number nested deep, not a long sum, and
"split it into smaller calculations" would not say what to change.

Depth is real nesting, not the height of Python's tree: `1 + 2 + ... + 25` is a flat sum, though
`ast` builds it as a chain 25 levels high. A run of `+`/`-` (or of `*`/`/`) written without
parentheses is one level; parentheses around a sum, a unary sign and a power's operands nest.
Literals must be numbers a float can hold (subnormals such as `1e-320` included); arithmetic
rounds like floats do below that (`1e-200 * 1e-200` is 0).
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Final

from textreact.errors import CalculatorError, WrongToolError

MAX_LENGTH: Final = 200
MAX_NODES: Final = 50
MAX_DEPTH: Final = 12
MAX_MAGNITUDE: Final = 10**12
MAX_EXPONENT: Final = 100
#: Exact values whose denominator grows past this many bits are rounded to the nearest float,
#: so a chain of divisions or powers cannot build huge integers.
_MAX_DENOMINATOR_BITS: Final = 128
#: A literal's decimal exponent beyond these is refused before Fraction builds 10**exponent:
#: any larger one is over the magnitude limit, any smaller one below the smallest float
#: (5e-324), whatever the 200 characters of digits before it.
_MAX_LITERAL_EXPONENT: Final = 300
_MIN_LITERAL_EXPONENT: Final = -600

#: What small models write for the operators, mapped to Python's spelling. `^` means power (no
#: one asks a calculator for XOR); `x` only counts as "times" between two numbers with spaces
#: on both sides, so `0x1F` stays a (refused) hexadecimal literal.
_SYMBOLS: Final = str.maketrans(
    {"×": "*", "÷": "/", "−": "-", "＋": "+", "－": "-", "＊": "*", "／": "/", "（": "(",
     "）": ")", "＾": "**", "．": ".", "^": "**"}
    | {chr(0xFF10 + d): str(d) for d in range(10)}
)  # fmt: skip
_TIMES_X: Final = re.compile(r"(?<=[\d)])\s+[xX]\s+(?=[\d(])")
#: `15% of 240`, as models write a percentage; `%` alone stays refused (it is Python's modulo).
_PERCENT_OF: Final = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*%\s*of\s+", re.IGNORECASE)
#: Thousands separators: groups of exactly three digits after a comma, e.g. `1,000,000.5`.
_THOUSANDS: Final = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])")
_DECIMAL: Final = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE]([+-]?\d+))?")
#: Words where numbers belong ("Mount Everest - Mount Fuji", "366 days * 24"), a run of them
#: being one name; a letter right after a digit is part of a literal (`2e3`, `0x1F`).
_WORDS: Final = re.compile(r"(?<![\w.])[^\W\d]\w*(?:[ ]+[^\W\d]\w*)*")
#: One number and nothing to do with it: a sign, parentheses and a trailing `=` at most.
_LONE_NUMBER: Final = re.compile(r"[-+(\s]*(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[)\s]*")

#: Exact values: ints while whole (fast), Fractions otherwise.
Rational = int | Fraction

_NAMES: Final[dict[type, str]] = {
    ast.Name: "names",
    ast.Call: "function calls",
    ast.Attribute: "attributes",
    ast.Subscript: "indexing",
    ast.Lambda: "lambda",
    ast.NamedExpr: "assignment (:=)",
    ast.JoinedStr: "f-strings",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.Compare: "comparisons",
    ast.BoolOp: "and/or",
    ast.IfExp: "if/else",
    ast.Tuple: "commas (thousands separators must be groups of three digits, like 1,000)",
    ast.List: "lists",
    ast.Dict: "dicts",
    ast.Set: "sets",
    ast.Starred: "*unpacking",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.FloorDiv: "// (floor division)",
    ast.Mod: "% (modulo)",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^ as XOR",
    ast.Invert: "~",
    ast.Not: "not",
}


def _check(value: Rational) -> Rational:
    """Enforce the magnitude bound; keep whole values as ints (fast) and denominators small."""
    if abs(value.numerator) > MAX_MAGNITUDE * value.denominator:
        raise CalculatorError(f"a value exceeds the limit of 1e12 in magnitude ({_show(value)})")
    if value.denominator == 1:
        return int(value.numerator)
    if value.denominator.bit_length() > _MAX_DENOMINATOR_BITS:
        return Fraction(float(value))
    return value


def _divide(a: Rational, b: Rational) -> Rational:
    if b == 0:
        raise CalculatorError("division by zero")
    return Fraction(a, b)


def _power(base: Rational, exponent: Rational) -> Rational:
    if abs(exponent) > MAX_EXPONENT:
        raise CalculatorError(f"exponent {_show(exponent)} is too large (limit {MAX_EXPONENT})")
    if base == 0 and exponent < 0:
        raise CalculatorError("division by zero (0 to a negative power)")
    if base != 0 and float(exponent) * _log10(base) > 12.5:
        raise CalculatorError(f"{_show(base)} ** {_show(exponent)} exceeds the limit of 1e12")
    if exponent.denominator != 1:
        if base < 0:
            raise CalculatorError("a negative number to a fractional power is not a real number")
        return Fraction(float(base) ** float(exponent))
    bits = base.numerator.bit_length() + base.denominator.bit_length()
    if bits * abs(exponent) > 4 * _MAX_DENOMINATOR_BITS:
        return Fraction(float(base) ** int(exponent))
    return Fraction(base) ** int(exponent)


_TOO_LONG: Final = (
    f"the expression is too long (more than {MAX_NODES} parts: numbers, operators, signs); "
    "split it into smaller calculations"
)
_TOO_DEEP: Final = (
    f"the expression is nested too deeply (more than {MAX_DEPTH} levels of parentheses, signs "
    "or powers inside one another); compute the inner part first"
)

#: Operators of one precedence level: a left-leaning chain of them is flat (`1 - 2 + 3`).
_LEVEL: Final[dict[type, str]] = {ast.Add: "+", ast.Sub: "+", ast.Mult: "*", ast.Div: "*"}
_BINARY: Final[dict[type, Callable[[Rational, Rational], Rational]]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: _divide,
    ast.Pow: _power,
}
_UNARY: Final[dict[type, Callable[[Rational], Rational]]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


def _log10(value: Rational) -> float:
    """log10 of a nonzero value too large or too small for a float."""
    return math.log10(abs(value.numerator)) - math.log10(value.denominator)


def _show(value: Rational) -> str:
    return str(_result(value)) if abs(value) <= 10**15 else f"about 1e{_log10(value):.0f}"


def _result(value: Rational) -> int | float:
    return int(value.numerator) if value.denominator == 1 else float(value)


def _normalise(expression: str) -> str:
    text = " ".join(expression.translate(_SYMBOLS).split()).rstrip("=").rstrip()
    text = _TIMES_X.sub(" * ", text)
    text = _PERCENT_OF.sub(r"\1 / 100 * ", text)
    return _THOUSANDS.sub(lambda m: m.group().replace(",", ""), text)


def _paren_depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    return deepest


def _literal(node: ast.Constant, text: str) -> Rational:
    value = node.value
    if isinstance(value, bool):
        raise CalculatorError(f"booleans are not allowed ({value})")
    if not isinstance(value, (int, float)):
        kind = {str: "strings", bytes: "bytes", complex: "complex numbers"}.get(type(value))
        raise CalculatorError(f"{kind or type(value).__name__} are not allowed ({value!r:.40})")
    source = text[node.col_offset : node.end_col_offset]
    if type(value) is int and source.isdigit():
        return _check(value)
    match = _DECIMAL.fullmatch(source)
    if match is None:
        raise CalculatorError(f"only plain decimal numbers are allowed, not {source!r}")
    exponent = int(match.group(1) or 0)
    if exponent and not source[: match.start(1) - 1].strip("0."):
        return 0  # `0e999` is 0, whatever its exponent
    if exponent > _MAX_LITERAL_EXPONENT:
        raise CalculatorError(f"the number {source} is out of range (the limit is 1e12)")
    # a nonzero number below the smallest float rounds to 0 (exact < 1e200: no overflow)
    exact = Fraction(source) if exponent >= _MIN_LITERAL_EXPONENT else Fraction(0)
    if exponent < 0 and not float(exact):
        raise CalculatorError(
            f"the number {source} is out of range (too small: the smallest is about 5e-324)"
        )
    return _check(exact)


class NeedsNumbersError(CalculatorError, WrongToolError):
    """Names of quantities, not numbers: another tool has to find the numbers first (the
    observation shows this name, so it says what went wrong)."""


def _words_refused(text: str) -> CalculatorError:
    """Why words were refused, and what to send instead: a small model writes the names of the
    quantities ("Burj Khalifa / Eiffel Tower") before it has looked their numbers up, or keeps
    the units ("8849 m - 3776 m"), or sends a question that is no arithmetic at all ("hot")."""
    found = tuple(dict.fromkeys(_WORDS.findall(text)))
    names = ", ".join(f'"{name}"' for name in found)
    message = f"the expression has words in it ({names}); the calculator reads numbers only"
    bare = " ".join(_WORDS.sub(" ", text).split())
    if not bare.strip("()'\"?.,! "):  # names only, no number or operator: no arithmetic
        return NeedsNumbersError(
            f"{message}, and there are none: it does arithmetic, nothing else."
        )
    try:
        if not bare.isascii():  # a letter no name took ("1é"): evaluate would come back here
            raise CalculatorError(bare)
        evaluate(bare)
    except CalculatorError:
        return NeedsNumbersError(
            f"{message}. Find the number for each of them first, then write the numbers.",
            needs=found,
        )
    return CalculatorError(
        f"{message}. Without the words it is {bare}: send that if it is what you mean."
    )


def _structure(tree: ast.Expression, text: str) -> None:
    """Depth, then node count, then the allowlist, all before anything is evaluated. The walk
    takes the whole tree: MAX_LENGTH bounds it to a few hundred nodes."""
    count = deepest = 0
    refused: ast.AST | None = None
    stack: list[tuple[ast.expr, int]] = [(tree.body, 1)]
    while stack:
        node, depth = stack.pop()
        count, deepest = count + 1, max(deepest, depth)
        if type(node) is ast.BinOp:
            refused = refused or _refused(node.op, _BINARY)
            left, level = node.left, _LEVEL.get(type(node.op))
            flat = level and type(left) is ast.BinOp and _LEVEL.get(type(left.op)) == level
            stack += ((left, depth if flat else depth + 1), (node.right, depth + 1))
        elif type(node) is ast.UnaryOp:
            refused = refused or _refused(node.op, _UNARY)
            stack.append((node.operand, depth + 1))
        elif type(node) is not ast.Constant:
            refused = refused or node
            children = ast.iter_child_nodes(node)
            stack += ((c, depth + 1) for c in children if isinstance(c, ast.expr))
    if deepest > MAX_DEPTH:
        raise CalculatorError(_TOO_DEEP)
    if count > MAX_NODES:
        raise CalculatorError(_TOO_LONG)
    if isinstance(refused, ast.Name):
        raise _words_refused(text)
    if refused is not None:
        name = _NAMES.get(type(refused), type(refused).__name__)
        raise CalculatorError(f"{name} not allowed: use numbers, + - * / ** (or ^) and parentheses")


def _refused(op: ast.AST, table: dict) -> ast.AST | None:
    return None if type(op) in table else op


def _evaluate(node: ast.expr, text: str) -> Rational:
    if isinstance(node, ast.Constant):
        return _literal(node, text)
    if isinstance(node, ast.UnaryOp):
        return _check(_UNARY[type(node.op)](_evaluate(node.operand, text)))
    assert isinstance(node, ast.BinOp)  # guaranteed by _structure
    left, right = _evaluate(node.left, text), _evaluate(node.right, text)
    return _check(_BINARY[type(node.op)](left, right))


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression exactly; raise CalculatorError naming what was refused.

    Accepted: decimal numbers (`12`, `1.5`, `.5`, `2e3`), unary `+ -`, binary `+ - * /`, powers
    (`**` or `^`, exponent at most 100 in magnitude), parentheses. Also accepted because they are
    unambiguous: surrounding whitespace and a trailing `=`; `×`, `÷`, `−` and full-width forms;
    `15 x 37` (an `x` between numbers with spaces on both sides); `15% of 240` (15 / 100 * 240;
    a bare `%` is refused, being Python's modulo); thousands separators in groups
    of exactly three digits (`1,000 + 2` is 1002; note that this reads `1,234` the English way,
    not as the European decimal 1.234; `1,5` is refused).
    Refused: names, calls, attributes, `//`, `%`, comparisons, strings, booleans, complex,
    hexadecimal/underscored literals, anything else.

    Returns an int when the exact result is whole (`6/3` -> 2, `2.5*2` -> 5), else the float
    nearest the exact result, so the caller never sees noise such as 0.30000000000000004.
    """
    if not isinstance(expression, str):
        raise TypeError(f"evaluate() takes a str, not {type(expression).__name__}")
    text = expression.strip()
    if len(text) > MAX_LENGTH:
        raise CalculatorError(
            f"the expression is {len(text)} characters long; the limit is {MAX_LENGTH}"
        )
    text = _normalise(text)
    if not text:
        raise CalculatorError("the expression is empty: write one, like 2 * (3 + 4)")
    if not text.isprintable() or not text.isascii() or "#" in text:
        # `#` would start a comment that ast drops silently: `5 # 3` is not 5
        bad = next(c for c in text if not (c.isprintable() and c.isascii()) or c == "#")
        if bad.isalpha() and _WORDS.search(text):  # a name in another script ("北京 + 上海")
            raise _words_refused(text)  # (a letter glued to a digit, "1é", names nothing)
        raise CalculatorError(f"the character {bad!r} is not allowed")
    if _paren_depth(text) > MAX_DEPTH:
        raise CalculatorError(_TOO_DEEP)
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError) as error:
        if _WORDS.search(text):
            raise _words_refused(text) from None
        reason = getattr(error, "msg", None) or type(error).__name__
        raise CalculatorError(f"not a valid arithmetic expression ({reason}): {text!r}") from None
    _structure(tree, text)
    return _result(_evaluate(tree.body, text))


class LoneNumberError(CalculatorError, WrongToolError):
    """A call with one number and nothing to calculate (the observation shows this name)."""


def calculate(expression: str) -> int | float:
    """The built-in calculator tool: `evaluate`, but a lone number is refused. A small model
    "calculates" a fact it only recalled (the speed of light as `2997924580`, one digit too
    many) and takes the number echoed back as the fact confirmed; refused, it is sent to
    another tool or to its answer."""
    value = evaluate(expression)
    shown = _normalise(expression.strip())
    if _LONE_NUMBER.fullmatch(shown):
        raise LoneNumberError(
            f"{shown} is a single number: there is nothing to calculate. If it is a fact you"
            " recalled, look it up first; if it is the answer, give it as your final answer."
        )
    return value
