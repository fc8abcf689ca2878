"""The one reading of `Retry-After` that `textreact serve` and the model clients share: a wait
the upstream asks for is honoured only when it is a finite number of seconds above zero."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from textreact.models.faults import retry_after


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "2"}, 2.0),
        # nonsense asks for nothing, and the other header is read
        ({"retry-after-ms": "nan", "retry-after": "3"}, 3.0),
        ({"retry-after-ms": "-5", "retry-after": "inf"}, None),
        ({"retry-after": "0"}, None),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, None),
        ({}, None),
    ],
)
def test_retry_after_reads_only_a_finite_wait_above_zero(headers, wait) -> None:
    assert retry_after(httpx.Headers(headers)) == wait
    assert retry_after(None) is None
