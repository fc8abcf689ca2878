"""Helpers for the parser's property tests: texts near the canonical form, built line by line
from a label and pieces of a value."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st


def near_canonical(labels: Sequence[str], pieces: Sequence[str]) -> st.SearchStrategy[str]:
    """One to four lines, each one of `labels` followed by up to six of `pieces`."""
    value = st.lists(st.sampled_from(list(pieces)), max_size=6).map("".join)
    return st.lists(st.tuples(st.sampled_from(list(labels)), value), min_size=1, max_size=4).map(
        lambda lines: "\n".join(label + text for label, text in lines)
    )
