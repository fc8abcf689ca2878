"""A regular expression -> what compiling it costs, known before it is compiled, and a cache
of compiled patterns bounded by that cost as well as by count.

`regex` (like `re`) writes a bounded repetition out in full when it compiles it: `a{1000000}`
takes about 270 MB, and the 17 characters of `^(a{1500}){1500}$` about 600 MB, before a single
match. The cost counted here is that written-out size: each atom (a character, a class, an
escape) counts 1, times the bound of every repetition around it (its upper bound, or its lower
one when it has none: `*`, `+` and `?` count 1, as they are loops, not copies). It reads the
pattern's text only, so it never fails on a pattern it cannot parse: it may count more than
`regex` writes out, never less. About 250 bytes a unit, as measured on `regex` 2024."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, Generic, TypeVar

from textreact.tools.pattern import _class_end as class_end

__all__ = ["MAX_COMPILE_COST", "CostlyPattern", "PatternCache", "check_cost", "compile_cost"]

#: The most a pattern may cost to compile (about 12 MB and 20 ms): `a{50000}` is the largest
#: plain repetition taken; a tool's pattern rarely needs a hundredth of it.
MAX_COMPILE_COST: Final = 50_000
_BOUNDS: Final = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")
T = TypeVar("T")


class CostlyPattern(ValueError):
    """A pattern that would cost more than MAX_COMPILE_COST to compile."""


def compile_cost(pattern: str, limit: int = MAX_COMPILE_COST) -> int:
    """The cost of compiling `pattern` (see the module), counted up to just past `limit`."""
    frames: list[list[int]] = [[0, 0]]  # per open group: [cost so far, cost of its last item]
    at = 0
    while at < len(pattern):
        char = pattern[at]
        times = 0
        if char == "\\":
            at += 2
            frames[-1][0] += 1
            frames[-1][1] = 1
            continue
        if char == "[":
            at = class_end(pattern, at)  # as the patterns' reader skips one
            frames[-1][0] += 1
            frames[-1][1] = 1
            continue
        if char == "(":
            frames.append([0, 0])
        elif char == ")" and len(frames) > 1:
            cost = frames.pop()[0]
            frames[-1][0] += cost
            frames[-1][1] = cost
        elif char in "*+?":
            times = 1
        elif char == "|":
            frames[-1][1] = 0
        elif char == "{" and (bounds := _repetition(pattern, at)):
            times, at = bounds
        else:
            frames[-1][0] += 1
            frames[-1][1] = 1
        if times:
            frame = frames[-1]
            frame[0] += frame[1] * (times - 1)
            frame[1] *= times
        if frames[-1][0] > limit:
            return limit + 1
        at += 1
    total = sum(frame[0] for frame in frames)  # groups left open count too
    return min(total, limit + 1)


def _repetition(pattern: str, at: int) -> tuple[int, int] | None:
    """(the count a `{m}`, `{m,}`, `{m,n}` or `{,n}` at `at` counts, the index of its `}`), or
    None where the brace opens no repetition."""
    bounds = _BOUNDS.match(pattern, at)
    if bounds is None or bounds.group(1, 3) in (("", ""), ("", None)):
        return None
    low, comma, high = bounds.groups()
    if high:
        return int(high), bounds.end() - 1
    return (int(low) if comma is None else max(int(low), 1)), bounds.end() - 1


def check_cost(pattern: str) -> None:
    """Raise CostlyPattern, saying why and what to write instead, for a pattern that would
    cost more than MAX_COMPILE_COST to compile."""
    if compile_cost(pattern) > MAX_COMPILE_COST:
        raise CostlyPattern(
            f"it would take more than {MAX_COMPILE_COST} units to compile (each repetition "
            "{m,n} is written out n times, nested ones multiply): bound the length with "
            "maxLength, or use * or + where the exact count does not matter"
        )


class PatternCache(Generic[T]):
    """`make` (a pattern's compiler) with its results cached by the pattern's text; a pattern
    that would cost more than MAX_COMPILE_COST is not compiled at all (None, as for a pattern
    that does not compile). The least recently used are dropped once there are more than
    `entries` or their costs add up past `total`: a cache bounded by count alone would keep as
    many of the costliest patterns as of the cheapest."""

    def __init__(
        self, make: Callable[[str], T | None], *, entries: int = 256, total: int = 250_000
    ) -> None:
        self._make = make
        self._entries = entries
        self._total = total
        self._held: OrderedDict[str, tuple[T | None, int]] = OrderedDict()
        self._cost = 0
        self._lock = threading.Lock()  # the server reads large requests in worker threads

    def __call__(self, pattern: str) -> T | None:
        with self._lock:
            found = self._held.get(pattern)
            if found is not None:
                self._held.move_to_end(pattern)
                return found[0]
        cost = compile_cost(pattern)
        if cost > MAX_COMPILE_COST:
            return None
        value = self._make(pattern)
        with self._lock:
            if pattern not in self._held:
                self._held[pattern] = (value, cost)
                self._cost += cost
            while len(self._held) > self._entries or (
                self._cost > self._total and len(self._held) > 1
            ):
                _, (_, dropped) = self._held.popitem(last=False)
                self._cost -= dropped
        return value

    def cache_clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._cost = 0
