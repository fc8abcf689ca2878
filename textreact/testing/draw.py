"""Random choices for the generators, made three ways: through Hypothesis (the public,
shrinkable strategies), through a seeded `random.Random` (the fuzz runner's counting pass,
dozens of times faster than Hypothesis's engine), and by replaying recorded choices (the
runner's shrinker, which minimises every failure the counting pass finds).

Every generator in `values.py` and `families.py` is written once against `Drawer`. Options are
ordered simplest first, because both shrinkers move a pick towards the first one."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator, Sequence
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
    """Choices from a seeded `random.Random`: fast and reproducible. It records every choice,
    so that `shrink` can replay a failing example with simpler choices."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self.choices: list[Any] = []

    def _record(self, choice: T) -> T:
        self.choices.append(choice)
        return choice

    def pick(self, options: Sequence[T]) -> T:
        return options[self._record(self._rng.randrange(len(options)))]

    def integer(self, low: int, high: int) -> int:
        return self._record(self._rng.randint(low, high))

    def text(self, alphabet: str, min_size: int, max_size: int) -> str:
        size = self._rng.randint(min_size, max_size)
        return self._record("".join(self._rng.choices(alphabet, k=size)))

    def floating(self) -> float:
        if self._rng.random() < 0.25:
            value = self._rng.choice(_SPECIAL_FLOATS) * self._rng.choice((1, -1))
        else:
            value = self._rng.uniform(-1, 1) * 10 ** self._rng.randint(-20, 20)
        return self._record(value)

    def reject(self) -> NoReturn:
        raise RuntimeError("a generator rejected 100 values in a row; its filter is too narrow")


class Rejected(Exception):
    """A replayed choice sequence drew a value its generator rejects."""


class ReplayDrawer:
    """Replays recorded choices, each clamped to what its draw allows; once they run out, every
    draw takes its simplest value (the first option, the low end, the shortest text)."""

    def __init__(self, choices: Sequence[Any]) -> None:
        self._choices = choices
        self._next = 0

    def _take(self, kind: type) -> Any:
        if self._next >= len(self._choices):
            return None
        choice = self._choices[self._next]
        self._next += 1
        return choice if type(choice) is kind else None

    def pick(self, options: Sequence[T]) -> T:
        return options[self.integer(0, len(options) - 1)]

    def integer(self, low: int, high: int) -> int:
        choice = self._take(int)
        return choice if choice is not None and low <= choice <= high else low

    def text(self, alphabet: str, min_size: int, max_size: int) -> str:
        choice = self._take(str)
        fits = choice is not None and min_size <= len(choice) <= max_size
        return choice if fits and all(c in alphabet for c in choice) else alphabet[0] * min_size

    def floating(self) -> float:
        choice = self._take(float)
        return 0.0 if choice is None else choice

    def reject(self) -> NoReturn:
        raise Rejected


def shrink(choices: list[Any], fails: Callable[[Drawer], bool], budget: int = 2000) -> list[Any]:
    """The simplest choice sequence found that still `fails`, greedily: delete blocks of
    choices, then make single choices smaller, and start over after every success."""
    best = choices
    while budget > 0:
        for candidate in _simpler(best):
            budget -= 1
            if budget <= 0:
                break
            try:
                if fails(ReplayDrawer(candidate)):
                    best = candidate
                    break
            except Rejected:
                continue
        else:
            break
    return best


def _simpler(choices: list[Any]) -> Iterator[list[Any]]:
    for size in (8, 4, 2, 1):
        for i in range(len(choices) - size, -1, -1):
            yield choices[:i] + choices[i + size :]
    for i, choice in enumerate(choices):
        for smaller in _smaller(choice):
            yield [*choices[:i], smaller, *choices[i + 1 :]]
            if type(choice) is int:  # a smaller count draws fewer items: drop some with it
                yield from ([*choices[:i], smaller, *choices[i + 1 + n :]] for n in (1, 2, 4))


def _smaller(choice: Any) -> Iterator[Any]:
    if isinstance(choice, str) and choice:
        yield ""
        yield choice[: len(choice) // 2]
        yield from (choice[:j] + choice[j + 1 :] for j in range(len(choice)))
    elif type(choice) is int and choice != 0:
        yield from (0, choice // 2, choice - 1) if choice > 0 else (0, -(-choice // 2), choice + 1)
    elif isinstance(choice, float) and choice != 0.0:
        yield from (0.0, float(round(choice)))


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
