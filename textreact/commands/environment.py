"""The process environment, read in one place: the entry points (`textreact.cli.main`, and the
app of a `serve --workers` worker process) take it from here and hand it down as a mapping, so
no other module reads it. The one write is `exported`, for child processes that cannot be given
a mapping of their own (uvicorn starts its workers with this process's environment)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

__all__ = ["environment", "exported"]


def environment() -> Mapping[str, str]:
    """The process's environment variables, as they are now."""
    return os.environ


@contextlib.contextmanager
def exported(variables: Mapping[str, str]) -> Iterator[None]:
    """`variables` set in the process environment while the block runs, so that the processes
    started inside it inherit them; removed when it ends."""
    os.environ.update(variables)
    try:
        yield
    finally:
        for name in variables:
            os.environ.pop(name, None)
