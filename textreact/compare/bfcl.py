"""Berkeley Function Calling Leaderboard files in, scored calls out: loads BFCL's question and
possible-answer files for the categories of one call, none, or several made at once, and scores
the calls of a reply the way BFCL's AST checker does for Python
(`berkeley-function-call-leaderboard/bfcl_eval/eval_checker/ast_eval/ast_checker.py`).

The checker's rules, kept here: as many calls as expected (BFCL's `wrong_count`); each expected
call matched to a distinct call of the reply, in any order, by the single-call check
(`parallel_function_checker_no_order`: the expected calls in turn, each taking the first call
not yet taken that passes; where there is one expected call this is the single-call check
itself). The single-call check: the right function; every required parameter present; no
parameter that the schema or the possible answers lack; the value's type is the schema's (an
int passes where a float is expected; a value of the possible answers' own type passes as a
"variable"); strings compared after lowercasing and removing spaces and `,./-_*^`; lists, dicts
and lists of dicts compared element-wise the same way; an optional parameter left out only
where `""` is among its possible answers."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textreact.compare.suite import read_utf8
from textreact.errors import ConfigError

#: The categories this scorer handles: one expected call, none, or several at once (`parallel`).
#: `category()` takes the first that prefixes an id, so a longer name comes before its prefix.
CATEGORIES = (
    "live_parallel_multiple", "live_parallel", "live_multiple", "live_simple",
    "parallel_multiple", "parallel", "multiple", "simple", "live_irrelevance", "irrelevance",
)  # fmt: skip
#: Categories whose right reply calls no function: they have no possible-answer file.
NO_CALL = ("irrelevance", "live_irrelevance")
_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
_PUNCTUATION = re.compile(r"[ ,./\-_*^]")


@dataclass(frozen=True)
class Entry:
    """One BFCL question with the functions it offers and its possible answers."""

    id: str
    #: The first turn's messages, each {"role", "content"}.
    messages: tuple[dict[str, str], ...]
    functions: tuple[dict[str, Any], ...]
    #: [{FUNCTION_NAME: {PARAM: [possible values]}}], one element per expected call.
    ground_truth: tuple[dict[str, Any], ...]

    @property
    def question(self) -> str:
        return "\n\n".join(m["content"] for m in self.messages)


@dataclass(frozen=True)
class Check:
    """The checker's verdict on one call; `error_type` uses BFCL's names."""

    valid: bool
    error: str = ""
    error_type: str = ""


def category(entry_id: str) -> str:
    """`simple_python_12` -> `simple`; `live_multiple_3-1-0` -> `live_multiple`."""
    for name in CATEGORIES:
        if entry_id.startswith(name + "_"):
            return name
    return entry_id.rsplit("_", 1)[0]


def answers_path(questions: Path) -> Path:
    """Where the possible answers of `questions` are: BFCL keeps them in `possible_answer/` beside
    it; a flat copy names them `possible_answer_<name>` in the same folder."""
    candidates = [
        questions.parent / f"possible_answer_{questions.name}",
        questions.parent / "possible_answer" / questions.name,
    ]
    for path in candidates:
        if path.is_file():
            return path
    tried = " or ".join(str(p) for p in candidates)
    raise ConfigError(
        f"no possible-answer file for {questions}: looked for {tried}; give it with --answers"
    )


def _records(path: Path) -> list[dict[str, Any]]:
    lines = read_utf8(path, "the BFCL file").splitlines()
    try:
        return [json.loads(line) for line in lines if line.strip()]
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not BFCL JSON lines: {exc}") from exc


def load_bfcl(questions: str | Path, answers: str | Path | None = None) -> list[Entry]:
    """The entries of a BFCL question file of one of CATEGORIES, with their answers."""
    questions = Path(questions)
    records = _records(questions)
    if records and category(records[0]["id"]) in NO_CALL:
        truths: dict[str, Any] = {record["id"]: [] for record in records}
    else:
        answers = answers_path(questions) if answers is None else Path(answers)
        truths = {record["id"]: record["ground_truth"] for record in _records(answers)}
    entries = []
    for record in records:
        kind = category(record["id"])
        if kind not in CATEGORIES:
            raise ConfigError(
                f"{questions}: entry {record['id']} is of category {kind!r}, which this scorer "
                f"cannot score (it needs a run of several turns, or another language's checker); "
                f"give a file of one of the categories {', '.join(CATEGORIES)}"
            )
        if record["id"] not in truths:
            raise ConfigError(f"{answers} has no possible answer for {record['id']}")
        entries.append(
            Entry(
                id=record["id"],
                messages=tuple(record["question"][0]),
                functions=tuple(record["function"]),
                ground_truth=tuple(truths[record["id"]]),
            )
        )
    if not entries:
        raise ConfigError(f"{questions} holds no entries")
    return entries


def standardize(text: str) -> str:
    """BFCL's string normalisation: lowercase, no spaces or `,./-_*^`, single quotes double."""
    return _PUNCTUATION.sub("", text).lower().replace("'", '"')


#: A call as a run made it: the function's name as BFCL's file spells it (None: a call written
#: so that no name could be read) and its arguments as the model wrote them.
Call = tuple[str | None, Any]


def check_calls(entry: Entry, calls: Sequence[Call]) -> Check:
    """Score the calls of one reply against the entry's possible answers: as many as expected,
    each expected call matched by a distinct one in any order (BFCL's
    `parallel_function_checker_no_order`, greedy as it is); an entry with no possible answer
    (irrelevance: no function fits) is right only with no call."""
    if not entry.ground_truth:
        return Check(not calls, f"called {calls[0][0]}" if calls else "", "called")
    if len(calls) != len(entry.ground_truth):
        made = (
            "no function was called" if not calls
            else "1 call was made" if len(calls) == 1
            else f"{len(calls)} calls were made"
        )  # fmt: skip
        return Check(False, f"{made}, {len(entry.ground_truth)} expected", "wrong_count")
    if len(calls) == 1:
        return _check_one(entry, entry.ground_truth[0], *calls[0])
    left = list(range(len(calls)))
    for number, expected in enumerate(entry.ground_truth, 1):
        checks = [(i, _check_one(entry, expected, *calls[i])) for i in left]
        matched = next((i for i, check in checks if check.valid), None)
        if matched is None:
            why = "; ".join(f"call {i + 1}: {check.error}" for i, check in checks)
            name = next(iter(expected))
            return Check(
                False, f"expected call {number} ({name}) matches none of the calls left: {why}",
                "cannot_find_match",
            )  # fmt: skip
        left.remove(matched)
    return Check(True)


def check_call(entry: Entry, name: str | None, arguments: Any) -> Check:
    """Score a reply of one call (`name` None: no call was made); see `check_calls`."""
    return check_calls(entry, [] if name is None else [(name, arguments)])


def _check_one(
    entry: Entry, expected: Mapping[str, Any], name: str | None, arguments: Any
) -> Check:
    """BFCL's `simple_function_checker`: one call against one expected call."""
    [(function, possible)] = expected.items()
    if name != function:
        return Check(False, f"called {name!r}, expected {function!r}", "wrong_func_name")
    if not isinstance(arguments, Mapping):
        return Check(False, f"arguments are not an object: {arguments!r}", "type_error:arguments")
    schema = next(f for f in entry.functions if f["name"] == function)["parameters"]
    properties = schema.get("properties", {})
    for param in schema.get("required", []):
        if param not in arguments:
            return Check(False, f"missing required parameter {param!r}", "missing_required")
    for param, value in arguments.items():
        if param not in properties or param not in possible:
            return Check(False, f"unexpected parameter {param!r}", "unexpected_param")
        check = _check_value(param, value, properties[param], possible[param])
        if not check.valid:
            return check
    for param, values in possible.items():
        if param not in arguments and "" not in values:
            return Check(False, f"parameter {param!r} left out but required", "missing_optional")
    return Check(True)


def _check_value(param: str, value: Any, details: Mapping[str, Any], possible: list) -> Check:
    described = details.get("type", "any")
    expected = _TYPES.get(described, str)
    nested = (
        _TYPES.get(details.get("items", {}).get("type", ""), str)
        if described
        in (
            "array",
            "tuple",
        )
        else None
    )
    if described == "float" and type(value) is int:
        value = float(value)
    check, is_variable = _check_type(param, value, possible, expected, nested)
    if not check.valid:
        return check
    if not is_variable:
        if expected is dict:
            return _check_dict(param, value, possible)
        if expected is list and nested is dict:
            return _check_list_of_dicts(param, value, possible)
        if expected is str:
            return _member(
                param,
                standardize(value),
                [standardize(p) for p in possible if isinstance(p, str)],
                "string",
            )
        if expected is list:
            return _member(
                param,
                _standardized(value),
                [_standardized(p) for p in possible if isinstance(p, list)],
                "list/tuple",
            )
    return _member(param, value, possible, "others")


def _member(param: str, value: Any, possible: list, kind: str) -> Check:
    if value in possible:
        return Check(True)
    return Check(False, f"{param!r}: {value!r} is none of {possible!r}", f"value_error:{kind}")


def _standardized(items: list) -> list:
    return [standardize(item) if isinstance(item, str) else item for item in items]


def _answer_type(possible: list) -> type | None:
    return next((type(p) for p in possible if p != ""), None)


def _check_type(
    param: str, value: Any, possible: list, expected: type, nested: type | None
) -> tuple[Check, bool]:
    """BFCL's type check: (verdict, whether the value is a "variable" of the answers' type)."""
    answer_type = _answer_type(possible)
    is_variable = answer_type is not None and answer_type is not expected
    if type(value) is expected:
        if nested is None:
            return Check(True), is_variable
        for item in possible:
            if not isinstance(item, list) or all(
                _check_type(param, v, item, nested, None)[0].valid for v in value
            ):
                return Check(True), is_variable
    elif answer_type is not None and type(value) is answer_type:
        return Check(True), True
    found = type(value).__name__
    return Check(
        False, f"{param!r}: expected {expected.__name__}, got {found}", "type_error"
    ), False


def _check_dict(param: str, value: dict, possible: list) -> Check:
    failure = Check(False, f"{param!r}: {value!r} matches no possible dict", "value_error:dict")
    for answer in possible:
        if answer == "":
            continue
        keys_known = all(
            key in answer
            and (standardize(v) if isinstance(v, str) else v)
            in [standardize(p) if isinstance(p, str) else p for p in answer[key]]
            for key, v in value.items()
        )
        if keys_known and all(k in value or "" in vals for k, vals in answer.items()):
            return Check(True)
    return failure


def _check_list_of_dicts(param: str, value: list, possible: list) -> Check:
    for answer in possible:
        if len(answer) == len(value) and all(
            _check_dict(param, item, [expected]).valid
            for item, expected in zip(value, answer, strict=True)
        ):
            return Check(True)
    return Check(False, f"{param!r}: {value!r} matches no possible list", "value_error:list_dict")
