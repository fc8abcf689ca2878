"""`response_format` beside tools -> what the final answer must be: an instruction added to the
system prompt, and a check of the answer against it. An answer that does not fit is re-asked
once, as any unusable reply is; one that fits is sent as the JSON it holds (repaired the way
tool arguments are: `"18"` for an integer becomes 18). Not sent upstream: the same request may
end in a call, which the upstream's JSON mode would forbid."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from textreact import jsonish, templates
from textreact.serve.errors import bad_request
from textreact.serve.schemas import SchemaProblem, checked_schema
from textreact.tools.arguments import check_arguments

_FENCE: Final = re.compile(r"\A```[a-zA-Z]*[ \t]*\n(?P<body>.*?)\n?```\Z", re.DOTALL)


@dataclass(frozen=True)
class AnswerFormat:
    """What the client's `response_format` asks the final answer to be."""

    #: The JSON Schema the answer must fit; None: any JSON object (`json_object`).
    schema: dict[str, Any] | None = None

    def instruction(self, lang: str) -> str:
        """The sentence the system prompt gains."""
        slots = templates.labels(lang)
        if self.schema is None:
            return templates.render("serve/answer_json.md", lang, slots)
        shown = json.dumps(self.schema, ensure_ascii=False)
        return templates.render("serve/answer_schema.md", lang, {**slots, "schema": shown})

    def reask(self, problem: str, lang: str) -> str:
        """What the model is told when its answer does not fit."""
        slots = {**templates.labels(lang), "problem": problem}
        return templates.render("serve/answer_unfit.md", lang, slots)

    def read(self, answer: str, lang: str = "en") -> tuple[str, str | None]:
        """(the answer as the JSON text to send, None) when it fits, else (it, the problem)."""
        text = answer.strip()
        fenced = _FENCE.match(text)
        try:
            value, _ = jsonish.loads(fenced.group("body") if fenced else text)
        except jsonish.JsonishError:
            return answer, templates.render("serve/answer_not_json.md", lang, {})
        if self.schema is None and not isinstance(value, dict):
            return answer, templates.render("serve/answer_not_object.md", lang, {})
        if self.schema is None:
            return json.dumps(value, ensure_ascii=False), None
        fitted, problems = _fit(value, self.schema, lang)
        if problems:
            return answer, "; ".join(problems)
        return json.dumps(fitted, ensure_ascii=False), None


def _fit(value: Any, schema: dict[str, Any], lang: str) -> tuple[Any, list[str]]:
    """`value` checked against `schema` as tool arguments are, and what did not fit."""
    if schema.get("type") == "object" or ("properties" in schema and "type" not in schema):
        if not isinstance(value, dict):
            return value, [templates.render("serve/answer_not_object.md", lang, {})]
        fitted, _, problems = check_arguments(value, schema, lang)
        return fitted, problems
    wrapper = {"type": "object", "properties": {"answer": schema}, "required": ["answer"]}
    fitted, _, problems = check_arguments({"answer": value}, wrapper, lang, root=schema)
    return fitted.get("answer"), problems


def answer_format(value: Any) -> AnswerFormat | None:
    """The request's `response_format` checked; None for plain text. Raises ServeError."""
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return AnswerFormat()
    if kind != "json_schema":
        raise bad_request(
            'response_format must be {"type": "text"}, {"type": "json_object"} or '
            '{"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}}',
            "response_format",
        )
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        raise bad_request(
            'response_format.json_schema must be an object such as {"name": "answer", '
            '"schema": {"type": "object", "properties": {...}}}',
            "response_format.json_schema",
        )
    schema = spec.get("schema")
    if schema is None:
        return AnswerFormat()
    try:
        return AnswerFormat(checked_schema(schema, "response_format.json_schema.schema"))
    except SchemaProblem as exc:
        raise bad_request(str(exc), "response_format.json_schema.schema") from None
