"""Task suites for `textreact compare`: JSONL tasks in, and a scorer that says whether an answer
is right.

One task a line: `{"id", "question", "answer": number, "tolerance": relative, "pattern": regex,
"tags": [...], "lang": "en" | "zh", "calls": [tool, ...], "no_call": bool}`. An answer is
right when a number written in it is within the relative tolerance of `answer` (thousands
separators, `2.6 million` and `260.2万` are read), or when `pattern` matches it; a task may
give either or both. With `calls`, each named tool must also have been called (an answer from
memory is no answer to a question about the user's data); with `no_call`, no tool may have been
(the question needs none).

Patterns are matched with the `regex` package under a time limit: a pattern that backtracks
catastrophically (a nested quantifier such as `(a+)+$`) fails its task with the reason instead
of hanging the comparison. Whether a pattern will backtrack cannot be told from its text, so
it is bounded where it runs, not refused at load."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import regex

from textreact import grammar
from textreact.errors import ConfigError

DEFAULT_TOLERANCE = 1e-3
#: Seconds one pattern may take on one answer before the task is failed as unscorable.
PATTERN_SECONDS = 1.0

_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.])(?P<sign>[-−])?(?P<digits>\d{1,3}(?:[,，  ]\d{3})+|\d+)(?P<frac>\.\d+)?"
    r"(?:[eE](?P<exp>[-+]?\d+))?"
    r"(?:\s*(?P<scale>thousand|million|billion|trillion|万|亿)(?![a-z]))?",
    re.IGNORECASE,
)
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "万": 1e4, "亿": 1e8}


@dataclass(frozen=True)
class Task:
    """One question of a suite, with what counts as a right answer."""

    id: str
    question: str
    answer: float | None = None
    #: Relative tolerance for `answer`.
    tolerance: float = DEFAULT_TOLERANCE
    #: A regular expression a right answer matches (searched, not anchored).
    pattern: str | None = None
    tags: tuple[str, ...] = field(default=())
    #: Prompt language for the text protocol.
    lang: str = "en"
    #: Tools that must have been called for the answer to count.
    calls: tuple[str, ...] = field(default=())
    #: The question needs no tool: a call makes the answer wrong.
    no_call: bool = False

    def calls_fit(self, called: Iterable[str]) -> bool:
        """Whether the tools called (by name) are what the task asks of them."""
        made = set(called)
        return not made if self.no_call else set(self.calls) <= made


def numbers_in(text: str) -> list[float]:
    """Every number written in `text`, separators removed and scale words applied."""
    found = []
    for match in _NUMBER.finditer(text):
        digits = re.sub(r"[,，  ]", "", match["digits"])
        value = float(f"{digits}{match['frac'] or ''}e{match['exp'] or 0}")
        if match["scale"]:
            value *= _SCALES[match["scale"].lower()]
        found.append(-value if match["sign"] else value)
    return found


def is_correct(task: Task, answer: str | None) -> bool:
    """Whether `answer` is right for `task` (None, no answer, never is)."""
    return score(task, answer)[0]


def score(
    task: Task, answer: str | None, *, pattern_seconds: float = PATTERN_SECONDS
) -> tuple[bool, str | None]:
    """Whether `answer` is right, and why it could not be scored (None when it was): a pattern
    that runs past `pattern_seconds` counts as wrong, with the reason."""
    if answer is None:
        return False, None
    if task.pattern is not None:
        try:
            if regex.search(task.pattern, answer, timeout=pattern_seconds):
                return True, None
        except TimeoutError:
            return False, (
                f"pattern {task.pattern!r} ran past {pattern_seconds:g} s on an answer of "
                f"{len(answer)} characters (a nested quantifier backtracks); simplify it"
            )
    if task.answer is not None:
        right = any(
            math.isclose(value, task.answer, rel_tol=task.tolerance, abs_tol=1e-9)
            for value in numbers_in(answer)
        )
        return right, None
    return False, None


def parse_task(record: object, where: str) -> Task:
    """One JSONL record as a Task; a malformed one is a ConfigError naming where it is."""
    if not isinstance(record, dict) or not isinstance(record.get("question"), str):
        raise ConfigError(f"{where}: expected an object with a 'question' string, got {record!r}")
    answer, pattern = record.get("answer"), record.get("pattern")
    if answer is None and pattern is None:
        raise ConfigError(f"{where}: give 'answer' (a number) or 'pattern' (a regex), or both")
    if answer is not None and (isinstance(answer, bool) or not isinstance(answer, (int, float))):
        raise ConfigError(f"{where}: 'answer' must be a number, got {answer!r}; use 'pattern'")
    if pattern is not None:
        try:
            regex.compile(pattern)
        except (regex.error, TypeError) as exc:
            raise ConfigError(f"{where}: 'pattern' is not a valid regex: {exc}") from exc
    tags = record.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ConfigError(f"{where}: 'tags' must be a list of strings, got {tags!r}")
    tolerance = record.get("tolerance", DEFAULT_TOLERANCE)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or tolerance < 0:
        raise ConfigError(f"{where}: 'tolerance' must be a number >= 0, got {tolerance!r}")
    lang = record.get("lang", "en")
    if lang not in grammar.LANGUAGES:
        raise ConfigError(f"{where}: 'lang' must be one of {grammar.LANGUAGES}, got {lang!r}")
    calls, no_call = record.get("calls", []), record.get("no_call", False)
    if not isinstance(calls, list) or not all(isinstance(c, str) for c in calls):
        raise ConfigError(f"{where}: 'calls' must be a list of tool names, got {calls!r}")
    if not isinstance(no_call, bool) or (no_call and calls):
        raise ConfigError(f"{where}: 'no_call' must be true or false, and not given with 'calls'")
    return Task(
        id=str(record.get("id") or where),
        question=record["question"],
        answer=None if answer is None else float(answer),
        tolerance=float(tolerance),
        pattern=pattern,
        tags=tuple(tags),
        lang=lang,
        calls=tuple(calls),
        no_call=no_call,
    )


def parse_suite(lines: Iterable[str], source: str = "suite") -> list[Task]:
    """Tasks from JSONL text; blank lines and `#` comments are skipped; ids must be unique."""
    tasks: list[Task] = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{source}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON ({exc.msg})") from exc
        tasks.append(parse_task(record, where))
    ids = [task.id for task in tasks]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ConfigError(f"{source}: task ids must be unique; repeated: {', '.join(repeated)}")
    if not tasks:
        raise ConfigError(f"{source}: no tasks found; expected one JSON object a line")
    return tasks


def load_suite(path: str | Path) -> list[Task]:
    """A user's suite file."""
    path = Path(path)
    return parse_suite(read_utf8(path, "the suite file").splitlines(), str(path))


def read_utf8(path: Path, what: str) -> str:
    """A file's text; a file that cannot be read, or is not UTF-8, is a ConfigError."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    return decode_utf8(raw, f"{what} {path}")


def decode_utf8(raw: bytes, source: str) -> str:
    """`raw` as UTF-8 text (a leading byte-order mark dropped); otherwise a ConfigError naming
    the first bad byte and where it is."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{source} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "convert it to UTF-8 (e.g. with iconv)"
        ) from None


def builtin_suite() -> list[Task]:
    """The bundled suite: calculator, fact lookups, multi-step, no-tool, Chinese, unknown facts."""
    text = (resources.files("textreact") / "suites" / "basic.jsonl").read_text(encoding="utf-8")
    return parse_suite(text.splitlines(), "built-in suite")


def select(tasks: list[Task], *, tags: Iterable[str] = (), limit: int | None = None) -> list[Task]:
    """The tasks carrying any of `tags` (all when none given), the first `limit` of them; a
    selection of no task is a ConfigError, never an empty comparison."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit must be a whole number >= 1, got {limit!r}")
    wanted = set(tags)
    chosen = [task for task in tasks if not wanted or wanted & set(task.tags)]
    if not chosen:
        known = sorted({tag for task in tasks for tag in task.tags})
        raise ConfigError(
            f"no task has any of the tags {', '.join(sorted(wanted))}; the suite's tags are: "
            f"{', '.join(known) if known else '(none)'}"
        )
    return chosen if limit is None else chosen[:limit]
