"""Two ways to make the same random choices: through Hypothesis, which shrinks a failure to a
minimal example, and through `random.Random`, which is a hundred times faster for counting.

Every generator in `values.py` and `families.py` is written once against `Drawer`; the public
strategies interpret it with Hypothesis, the fuzz runner's counting pass with a seeded Random.
Options are ordered simplest first, because Hypothesis shrinks a pick towards the first one."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, Protocol, TypeVar

import hypothesis
from hypothesis import strategies as st

T = TypeVar("T")

#: Floats that break naive number handling; the random drawer mixes them into its draws.
_SPECIAL_FLOATS = (
    0.0, -0.0, 0.5, 1e-7, 1e16, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
)  # fmt: skip


class Drawer(Protocol):
    def pick(self, options: Sequence[T]) -> T: ...
    def integer(self, low: int, high: int) -> int: ...
    def text(self, alphabet: str, min_size: int, max_size: int) -> str: ...
    def floating(self) -> float: ...
    def reject(self) -> NoReturn: ...


class RandomDrawer:
    """Choices from a seeded `random.Random`: fast and reproducible, but no shrinking."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def pick(self, options: Sequence[T]) -> T:
        return options[self._rng.randrange(len(options))]

    def integer(self, low: int, high: int) -> int:
        return self._rng.randint(low, high)

    def text(self, alphabet: str, min_size: int, max_size: int) -> str:
        return "".join(self._rng.choices(alphabet, k=self._rng.randint(min_size, max_size)))

    def floating(self) -> float:
        if self._rng.random() < 0.25:
            return self.pick(_SPECIAL_FLOATS) * self.pick((1, -1))
        return self._rng.uniform(-1, 1) * 10 ** self._rng.randint(-20, 20)

    def reject(self) -> NoReturn:
        raise RuntimeError("a generator rejected 100 values in a row; its filter is too narrow")


class HypothesisDrawer:
    """Choices drawn through Hypothesis inside a composite strategy, so they shrink."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self._draw = draw

    def pick(self, options: Sequence[T]) -> T:
        return options[self._draw(_integers(0, len(options) - 1))]

    def integer(self, low: int, high: int) -> int:
        return self._draw(_integers(low, high))

    def text(self, alphabet: str, min_size: int, max_size: int) -> str:
        return self._draw(_texts(alphabet, min_size, max_size))

    def floating(self) -> float:
        return self._draw(_FLOATS)

    def reject(self) -> NoReturn:
        hypothesis.reject()


_FLOATS = st.floats(allow_nan=False, allow_infinity=False)


@functools.cache
def _integers(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


@functools.cache
def _texts(alphabet: str, min_size: int, max_size: int) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(alphabet), min_size=min_size, max_size=max_size)


def strategy(generate: Callable[[Drawer], T]) -> st.SearchStrategy[T]:
    """The Hypothesis strategy of a generator written against `Drawer`."""
    return st.composite(lambda draw: generate(HypothesisDrawer(draw)))()


def until(d: Drawer, generate: Callable[[Drawer], T], accept: Callable[[T], bool]) -> T:
    """Draw again until `accept` holds: the rare rejects are cheaper than a narrower alphabet."""
    for _ in range(100):
        value = generate(d)
        if accept(value):
            return value
    d.reject()
