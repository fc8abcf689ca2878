"""JSON Schema -> GBNF, the grammar language that llama.cpp's server, vLLM (`xgrammar`) and
SGLang all read, for the subset of JSON Schema that `textreact.tools.schema.normalize` produces.

Written here rather than taken from llama.cpp (`xllamacpp.json_schema_to_grammar`) so that the
core package needs no native extension, and because that function returns an llguidance grammar
when the build has llguidance, which servers without it cannot read (and which llama.cpp ignores
without an error when it is malformed, where a malformed GBNF is refused with a 400).

What a weak model may write is bounded on purpose: strings (`MAX_STRING` characters unless the
schema says `maxLength`), arrays (`MAX_ITEMS`), digits of a number, members of a free-form object
and its nesting depth, and a recursive `$ref` to the depth validation reads, so that a model
cannot ramble inside one value until the token limit.
A string's `pattern` is held to where `textreact.constrain.pattern` reads it; the grammar is
the shape, and `Tool.parse_arguments` still checks the rest (ranges, patterns it cannot read).
JSON is written compact, with at most one space after `:` and `,` (as `json.dumps` does), on one
line: the Action Input is one line of the protocol, for the parser too (no raw NEL or line or
paragraph separator, which it reads as line breaks).
"""

from __future__ import annotations

import re
from typing import Any, Final

from textreact import jsonline
from textreact.constrain.pattern import pattern_grammar
from textreact.tools.arguments import MAX_DEPTH
from textreact.tools.schema import resolve, types_of

#: Characters of a string whose schema gives no `maxLength`.
MAX_STRING: Final = 256
#: Items of an array whose schema gives no `maxItems`.
MAX_ITEMS: Final = 32
#: Members of an object whose schema names no properties, and the nesting of such free values.
MAX_MEMBERS: Final = 16
FREE_DEPTH: Final = 3
#: Schemas nested in one another (a member, an item, a union branch and a `$ref` count one
#: each) past which a value is any JSON value: a recursive model costs three a level (the
#: member, its union with null, the ref), and must reach the deepest value validation reads.
_DEEPEST: Final = 4 * MAX_DEPTH
#: The schemas that the level-by-level copies of recursive `$ref`s may reach in one grammar:
#: each recursion costs what its ref reaches, MAX_DEPTH times (a linked list reaches 5, so
#: 160), and past this a recursion is one rule that holds itself, its depth left to validation.
MOST_COPIED: Final = 4096
_SP: Final = '" "?'
_NAME_PART: Final = re.compile(r"[^a-z0-9]+")
#: Integers with a range at most this wide are written as the list of their values.
_SMALL_RANGE: Final = 32
_SHARED: Final[dict[str, str]] = {
    # No NEL or line or paragraph separator raw: the parser breaks lines at them, so a keyword
    # after one would end the Action Input (the canonical form writes them as escapes).
    "char": r'[^"\\\x7F\x00-\x1F\x85\u2028\u2029] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    # The first character of a string that must not be blank (the validator refuses blanks):
    # no space, tab or line break, raw or escaped.
    "lead-char": r'[^"\\\x7F\x00-\x20\x85\u2028\u2029] | "\\" (["\\/bf] | "u" [0-9a-fA-F]{4})',
    "integer": '"-"? ([0-9] | [1-9] [0-9]{1,15})',
    "natural": "[0-9] | [1-9] [0-9]{1,15}",
    "number": 'integer ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,2})?',
    "boolean": '"true" | "false"',
    "date": '"\\"" [0-9]{4} "-" [0-1] [0-9] "-" [0-3] [0-9] "\\""',
    "time": '[0-2] [0-9] ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})?',
    "date-time": '"\\"" [0-9]{4} "-" [0-1] [0-9] "-" [0-3] [0-9] "T" time '
    '("Z" | [+-] [0-2] [0-9] ":" [0-5] [0-9])? "\\""',
}
_FORMATS: Final = {"date": "date", "date-time": "date-time"}


def literal(text: str) -> str:
    """`text` as a GBNF string literal: quotes, backslashes and control characters escaped."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def json_literal(value: Any) -> str | None:
    """The JSON text of `value` as the canonical form writes it (`grammar.render_input`), as a
    GBNF literal (for `const` and `enum` members and property names); None where it has none
    (nested past what `json` writes, or not JSON). A lone surrogate is written as its JSON
    escape, so the grammar stays UTF-8 that can be sent."""
    try:
        return literal(jsonline.encoded(value).decode("utf-8"))
    except (TypeError, ValueError, RecursionError):
        return None


class Rules:
    """A GBNF grammar under construction: rules by name, in the order they were made.

    Identical bodies share one rule, so a hundred tools with a string argument each add one
    string rule, not a hundred. Names keep only `a-z`, digits and `-`, which every GBNF reader
    accepts."""

    def __init__(self, *, max_string: int = MAX_STRING, max_items: int = MAX_ITEMS) -> None:
        if max_string < 1 or max_items < 1:
            raise ValueError(
                f"max_string and max_items must be >= 1, got {max_string} and {max_items}"
            )
        self.max_string = max_string
        self.max_items = max_items
        self._rules: dict[str, str] = {}
        self._by_body: dict[str, str] = {}
        #: The expression of each ref built: by (ref, nesting) where it holds a recursion
        #: that stops at a fixed depth of the value, by (ref, None) where it is the same at
        #: any depth.
        self._refs: dict[tuple[str, int | None], str] = {}
        #: The refs being built, each with the `[`/`{` nestings it was entered at.
        self._building: dict[str, list[int]] = {}
        #: Whether what is being built holds a ref's recursion or its bound, and so differs
        #: with the depth it starts at (see `_ref`).
        self._levelled = False
        #: The recursive refs written level by level, and the schemas their copies reach.
        self._copied: set[str] = set()
        self._copies = 0
        #: The rule of each recursive ref too large to copy: one rule that holds itself.
        self._whole: dict[str, str] = {}
        #: How deep inside `[`/`{` of the root value the expression being built starts.
        self._brackets = 0
        #: The last number a name made from each base took: a thousand properties of one
        #: name made a thousand probes each, a million in all, without it.
        self._tried: dict[str, int] = {}

    def name(self, hint: str) -> str:
        """A fresh rule name made from `hint`, reserved but not yet defined."""
        base = _NAME_PART.sub("-", hint.lower()).strip("-")[:40].strip("-") or "rule"
        base = base if base[0].isalpha() else "r-" + base
        n = self._tried.get(base, 1)  # numbers tried for this base before: not tried again
        name = base if n == 1 else f"{base}-{n}"
        while name in self._rules or name in _SHARED or name == "root":
            n += 1
            name = f"{base}-{n}"
        self._tried[base] = n
        self._rules[name] = ""
        return name

    def define(self, name: str, body: str) -> str:
        self._rules[name] = body
        self._by_body.setdefault(body, name)
        return name

    def add(self, hint: str, body: str) -> str:
        """The name of a rule with `body`: an existing one with the same body, else a new one."""
        if body in self._by_body:
            return self._by_body[body]
        return self.define(self.name(hint), body)

    def shared(self, name: str) -> str:
        """One of the fixed rules (`integer`, `char`, ...), with the ones it refers to."""
        if name not in self._rules:
            self._rules[name] = _SHARED[name]
            for other in re.findall(r"\b[a-z][a-z-]*\b", _SHARED[name]):
                if other in _SHARED and other != name:
                    self.shared(other)
        return name

    def text(self, root: str) -> str:
        """The grammar, `root ::= <root>` first, one rule a line."""
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self._rules.items() if name != "root"]
        return "\n".join(lines) + "\n"

    # JSON Schema -> an expression (most often the name of a rule)

    def value(self, schema: Any, root: dict[str, Any], hint: str, depth: int = 0) -> str:
        """An expression for the JSON text of a value that fits `schema`; a schema this subset
        does not cover (allOf, not, if/then, a bad $ref) falls back to any JSON value."""
        if not isinstance(schema, dict) or depth > _DEEPEST:
            return self.free(FREE_DEPTH)
        if "$ref" in schema:
            return self._ref(schema, root, depth)
        nullable = schema.get("nullable") is True
        pinned = [schema["const"]] if "const" in schema else schema.get("enum")
        if isinstance(pinned, list) and pinned:
            members = dict.fromkeys(json_literal(v) for v in pinned)
            if None not in members:  # else a value past writing: the looser rule below
                body = self.add(hint + "-enum", " | ".join(members))  # type: ignore[arg-type]
                return self._nullable(body, nullable)
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                alternatives = [
                    self.value({**_rest(schema, key), **b} if isinstance(b, dict) else b,
                               root, f"{hint}-{i}", depth + 1)
                    for i, b in enumerate(branches)
                ]  # fmt: skip
                return self._nullable(
                    self.add(hint, " | ".join(dict.fromkeys(alternatives))), nullable
                )
        if schema.get("allOf"):
            parts = schema["allOf"]
            if isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], dict):
                return self.value({**_rest(schema, "allOf"), **parts[0]}, root, hint, depth + 1)
            return self.free(FREE_DEPTH)
        kinds = types_of(schema) or _implied_types(schema)
        if not kinds:
            return self.free(FREE_DEPTH)
        if nullable and "null" not in kinds:
            kinds = [*kinds, "null"]
        alternatives = [self._typed(kind, schema, root, hint, depth) for kind in kinds]
        if len(alternatives) == 1:
            return alternatives[0]
        return self.add(hint, " | ".join(dict.fromkeys(alternatives)))

    def _nullable(self, expression: str, nullable: bool) -> str:
        return f'({expression} | "null")' if nullable else expression

    def _ref(self, schema: dict[str, Any], root: dict[str, Any], depth: int) -> str:
        """The expression of a `$ref`. A ref reached again while it is built, inside no `[` or
        `{` since (a circle of refs, an `anyOf` that holds itself), would be a left-recursive
        rule, which servers refuse: it is any JSON value there instead, a looser rule the
        validator narrows. One reached again inside brackets (a linked list, a tree) gets
        rules of its own for each level of the value, down to the deepest value validation
        reads (a ref MAX_DEPTH levels in, where any JSON scalar stands for it: a list's last
        `null`), so a model cannot nest it until the token limit, nor deeper than the call is
        taken; a recursion past what `_may_copy` allows is one recursive rule instead. What
        holds no recursion is built once, whatever its depth."""
        ref = str(schema["$ref"])
        level = self._brackets
        entered = self._building.setdefault(ref, [])
        if entered and entered[-1] == level:
            return self.free(FREE_DEPTH)
        hint = "ref-" + ref.rsplit("/", 1)[-1]
        if entered and ref not in self._whole and not self._may_copy(ref, root):
            self._whole[ref] = self.name(hint)
        if ref in self._whole:
            return self._whole[ref]
        if entered:
            self._levelled = True
            if level >= MAX_DEPTH:
                return self.free(0)
        for key in ((ref, None), (ref, level)):
            if key in self._refs:
                self._levelled |= key[1] is not None
                return self._refs[key]
        outer, self._levelled = self._levelled, False
        entered.append(level)
        target = resolve(schema, root)
        body = self.value(target, root, hint, depth + 1) if target else self.free(FREE_DEPTH)
        entered.pop()
        if ref in self._whole:  # it reached itself, and was too large to copy
            body, self._levelled = self.define(self._whole[ref], body), False
        self._refs[(ref, level if self._levelled else None)] = body
        self._levelled |= outer
        return body

    def _may_copy(self, ref: str, root: dict[str, Any]) -> bool:
        """Whether a recursion through `ref` may be written level by level: each level copies
        what the ref reaches, and the copies of a grammar reach at most MOST_COPIED schemas in
        all (a circle of 2,048 schemas, as many as serve takes, would otherwise make megabytes
        of grammar, sent with every request)."""
        if ref not in self._copied:
            room = (MOST_COPIED - self._copies) // MAX_DEPTH
            reach = _reach(resolve({"$ref": ref}, root), root, room)
            if reach > room:
                return False
            self._copied.add(ref)
            self._copies += reach * MAX_DEPTH
        return True

    def _inside(self, schema: Any, root: dict[str, Any], hint: str, depth: int) -> str:
        """`value` for a member or an item: after a `[` or `{`, so no longer left of a rule."""
        self._brackets += 1
        try:
            return self.value(schema, root, hint, depth + 1)
        finally:
            self._brackets -= 1

    def _typed(self, kind: str, schema: dict[str, Any], root: dict[str, Any], hint: str,
               depth: int) -> str:  # fmt: skip
        if kind == "string":
            return self.string(schema, hint)
        if kind == "integer":
            return self._integer(schema, hint)
        if kind == "number":
            return self.shared("number")
        if kind == "boolean":
            return self.shared("boolean")
        if kind == "null":
            return '"null"'
        if kind == "array":
            return self._array(schema, root, hint, depth)
        if kind == "object":
            return self._object(schema, root, hint, depth)
        return self.free(FREE_DEPTH)

    def string(self, schema: dict[str, Any], hint: str = "string") -> str:
        """A JSON string: a date or date-time by its `format`, else of bounded length."""
        if schema.get("format") in _FORMATS:
            return self.shared(_FORMATS[schema["format"]])
        lengths = {"minLength", "maxLength"} & schema.keys()  # the plain rule bounds those
        held = None if lengths else pattern_grammar(schema.get("pattern"), "char", self.max_string)
        if held is not None:
            if "(char)" in held:
                self.shared("char")
            body = " ".join(piece for piece in ('"\\""', held, '"\\""') if piece)
            return self.add(hint + "-pattern", body)
        low = _count(schema.get("minLength"), 1)
        high = min(_count(schema.get("maxLength"), self.max_string), self.max_string)
        if low > high:  # a schema that no string fits is the validator's to report
            low, high = min(low, 1), max(high, 1)
        char, lead = self.shared("char"), self.shared("lead-char")
        if high == 0:
            body = '"\\"\\""'
        elif low == 0:
            body = f'"\\"" ({lead} {char}{{0,{high - 1}}})? "\\""'
        else:
            body = f'"\\"" {lead} {char}{{{low - 1},{high - 1}}} "\\""'
        return self.add("string" if (low, high) == (1, self.max_string) else hint, body)

    def _integer(self, schema: dict[str, Any], hint: str) -> str:
        low, high = schema.get("minimum"), schema.get("maximum")
        if _is_int(low) and _is_int(high) and 0 <= high - low < _SMALL_RANGE:
            return self.add(hint + "-range", " | ".join(f'"{n}"' for n in range(low, high + 1)))
        if isinstance(low, (int, float)) and not isinstance(low, bool) and low >= 0:
            return self.shared("natural")
        return self.shared("integer")

    def _array(self, schema: dict[str, Any], root: dict[str, Any], hint: str, depth: int) -> str:
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and prefix:
            parts = [self._inside(s, root, f"{hint}-{i}", depth) for i, s in enumerate(prefix)]
            return self.add(hint, '"[" ' + f' "," {_SP} '.join(parts) + ' "]"')
        item = self._inside(schema.get("items", {}), root, hint + "-item", depth)
        low = _count(schema.get("minItems"), 0)
        high = min(_count(schema.get("maxItems"), self.max_items), self.max_items)
        low = min(low, high)
        return self.add(hint, _sequence('"["', item, '"]"', low, high))

    def _object(self, schema: dict[str, Any], root: dict[str, Any], hint: str, depth: int) -> str:
        properties = schema.get("properties")
        if isinstance(properties, dict) and properties:
            required = set(schema.get("required", ()))
            members = [
                (
                    f"{json_literal(name)} \":\" {_SP} "
                    f"{self._inside(spec, root, f'{hint}-{name}', depth)}",
                    name in required,
                )
                for name, spec in properties.items()
            ]  # fmt: skip
            return self.add(hint, f'"{{" {self._members(members, hint)} "}}"')
        extra = schema.get("additionalProperties")
        value = (
            self._inside(extra, root, hint + "-value", depth)
            if isinstance(extra, dict) and extra
            else self.free(FREE_DEPTH - 1)
        )
        member = self.add(hint + "-member", f'{self.string({})} ":" {_SP} {value}')
        return self.add(hint, _sequence('"{"', member, '"}"', 0, MAX_MEMBERS))

    def _members(self, members: list[tuple[str, bool]], hint: str) -> str:
        """The members in schema order, each optional one free to be left out, commas only
        between those present: `first[i]` is what may come when nothing is written yet,
        `after[i]` what may come after a member, from member i on."""
        after = [""] * (len(members) + 1)
        first = [""] * (len(members) + 1)
        for i in reversed(range(len(members))):
            member, needed = members[i]
            piece = f'"," {_SP} {member}' if needed else f'("," {_SP} {member})?'
            if i > 0:
                after[i] = self.add(f"{hint}-after", f"{piece} {after[i + 1]}".strip())
            head = f"{member} {after[i + 1]}".strip()
            if needed:
                first[i] = head
            elif first[i + 1]:
                first[i] = f"{head} | {first[i + 1]}"
            else:
                first[i] = f"({head})?"
            first[i] = self.add(f"{hint}-members", first[i])
        return first[0]

    def free(self, depth: int) -> str:
        """Any JSON value nested at most `depth` deep, its strings and members bounded."""
        scalar = self.add("scalar", f'{self.string({"minLength": 0})} | number | boolean | "null"')
        self.shared("number")
        self.shared("boolean")
        if depth <= 0:
            return scalar
        inner = self.free(depth - 1)
        array = _sequence('"["', inner, '"]"', 0, MAX_MEMBERS)
        member = f'{self.string({"minLength": 0})} ":" {_SP} {inner}'
        obj = _sequence('"{"', f"({member})", '"}"', 0, MAX_MEMBERS)
        return self.add(f"value-{depth}", f"{scalar} | {array} | {obj}")


def _reach(schema: dict[str, Any], root: dict[str, Any], most: int) -> int:
    """How many schemas the grammar of `schema` reads (its members, items and branches, each
    `$ref` followed once), counted to `most + 1` at the most."""
    seen: set[int] = set()
    stack: list[Any] = [schema]
    while stack and len(seen) <= most:
        item = stack.pop()
        if not isinstance(item, dict) or id(item) in seen:
            continue
        seen.add(id(item))
        if "$ref" in item:
            stack.append(resolve(item, root))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            if isinstance(item.get(key), list):
                stack += item[key]
        if isinstance(item.get("properties"), dict):
            stack += item["properties"].values()
        stack += [item.get("items"), item.get("additionalProperties")]
    return len(seen)


def _sequence(opener: str, item: str, closer: str, low: int, high: int) -> str:
    """`opener` + `low`..`high` comma-separated items + `closer`, as one expression."""
    if high == 0:
        return f"{opener} {closer}"
    more = f'("," {_SP} {item}){{{max(low - 1, 0)},{high - 1}}}'
    body = f"{item} {more}" if low > 0 else f"({item} {more})?"
    return f"{opener} {body} {closer}"


def _rest(schema: dict[str, Any], key: str) -> dict[str, Any]:
    """The schema less `key` and the keywords that only apply to it, merged into each branch."""
    return {
        k: v for k, v in schema.items() if k not in (key, "anyOf", "oneOf", "allOf", "nullable")
    }


def _implied_types(schema: dict[str, Any]) -> list[str]:
    if "properties" in schema or "additionalProperties" in schema:
        return ["object"]
    if "items" in schema or "prefixItems" in schema:
        return ["array"]
    return []


def _count(value: object, default: int) -> int:
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def schema_grammar(
    schema: dict[str, Any], *, max_string: int = MAX_STRING, max_items: int = MAX_ITEMS
) -> str:
    """A whole GBNF grammar whose root is one JSON value that fits `schema` (a normalised
    tool schema or any of its parts; `$ref`s resolve against `schema` itself)."""
    rules = Rules(max_string=max_string, max_items=max_items)
    return rules.text(rules.value(schema, schema, "value"))
