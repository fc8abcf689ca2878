"""Turns -> a JSONL file, one line each as it happens, flushed and fsynced, so a crash or a
Ctrl-C leaves every completed turn on disk, and a normal end adds a last line with the stop
reason."""

from __future__ import annotations

import json
import os
import reprlib
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from textreact import jsonline


class Transcript:
    """An append-only JSONL transcript; each line has a `type`: start, step or stop."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None

    def __enter__(self) -> Transcript:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A lone surrogate (legal in a server's JSON) is written as its JSON escape, which
        # reads back as the same string, instead of failing the run.
        self._file = self.path.open("w", encoding="utf-8", errors="backslashreplace")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def write(self, record_type: str, **fields: Any) -> None:
        """Append one line and make sure it reached the disk before returning."""
        if self._file is None:
            raise RuntimeError("Transcript.write outside `with Transcript(path):`")
        record = {"type": record_type, **(step_record(fields) if record_type == "step" else fields)}
        try:
            line = jsonline.dumps(record, default=str)
        except (ValueError, RecursionError):  # a cycle or a deep structure from a program
            line = jsonline.dumps({k: _plain(v) for k, v in record.items()})
        self._file.write(line + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())


def step_record(record: dict[str, Any]) -> dict[str, Any]:
    """A step's record (`Turn.to_dict`) with its input as the tool reads it: text that is a
    JSON object (arguments the call refused, such as a number no float holds, `1e-400`, kept
    as written by the loop) is that object, its numbers as written (`jsonline.as_written`);
    any other input is as it was."""
    raw = record.get("input")
    if not isinstance(raw, str) or not raw.lstrip().startswith("{"):
        return record
    try:
        value = jsonline.as_written(raw)
    except (ValueError, RecursionError):
        return record
    return {**record, "input": value} if isinstance(value, dict) else record


def _plain(value: Any) -> Any:
    """A value json cannot write, as bounded text: the record is kept, never lost."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return reprlib.repr(value)


def read_transcript(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a transcript, in order."""
    with Path(path).open(encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]
