"""The run search language: its grammar (lark, LALR) and the syntax tree a query parses to.

A query is comparisons joined by `and`, `or` and `not` (binding in that order, loosest last:
`not` tighter than `and`, `and` tighter than `or`), with parentheses. A comparison is a field, an
operator and a literal: `= != < <= > >=`, `in (...)`, `not in (...)`, `like` (SQL LIKE: `%` any
run of characters, `_` one character, backslash escapes either), `not like`, `is null`, `is not
null`. Literals are numbers, single- or double-quoted strings (a backslash escapes a quote or a
backslash; any other stays as written), durations (`90s`, `30m`, `2h`, `7d`), times (ISO 8601: `2026-11-01`,
`2026-11-01T12:00:00Z`) and `true`/`false`. What the fields are, and which literal each takes, is
ledger.views.search.fields; the query's SQL is ledger.views.search.compile.

Every bound is checked while parsing, before any SQL runs, each refused with its own message and
QUERY_TOO_LARGE (metadata: the limit, its maximum and the position): the text's bytes, the number
of comparisons, the nesting of and/or/not, the length of a literal or field name, the values of an
`in` list. A query that does not parse is INVALID_QUERY with the 1-based position where it went
wrong and what was expected there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ledger.domain.errors import Invalid
from ledger.domain.reasons import Reason

__all__ = [
    "IN_VALUES_MAX",
    "LITERAL_LENGTH_MAX",
    "QUERY_BYTES_MAX",
    "QUERY_CLAUSES_MAX",
    "QUERY_DEPTH_MAX",
    "And",
    "Comparison",
    "Literal",
    "Node",
    "Not",
    "Or",
    "OrderBy",
    "invalid_query",
    "parse_order",
    "parse_query",
]

QUERY_BYTES_MAX = 4 * 1024
QUERY_CLAUSES_MAX = 64
#: How deeply `and`, `or` and `not` may nest (a chain of one operator is one level).
QUERY_DEPTH_MAX = 16
#: The characters of a literal or a field name, as written.
LITERAL_LENGTH_MAX = 256
IN_VALUES_MAX = 100

GRAMMAR = r"""
?query: disjunction
?disjunction: conjunction | disjunction OR conjunction -> or_
?conjunction: negation | conjunction AND negation -> and_
?negation: primary | NOT negation -> not_
?primary: comparison | "(" disjunction ")"
comparison: FIELD OP literal -> compare
    | FIELD IN "(" literals ")" -> in_
    | FIELD NOT IN "(" literals ")" -> not_in
    | FIELD LIKE literal -> like
    | FIELD NOT LIKE literal -> not_like
    | FIELD IS NULL -> is_null
    | FIELD IS NOT NULL -> is_not_null
literals: literal ("," literal)*
literal: NUMBER | STRING | DURATION | TIME | TRUE | FALSE
order: FIELD (ASC | DESC)?

OR: "or"i
AND: "and"i
NOT: "not"i
IN: "in"i
IS: "is"i
NULL: "null"i
LIKE: "like"i
TRUE: "true"i
FALSE: "false"i
ASC: "asc"i
DESC: "desc"i
OP: "=" | "!=" | "<=" | ">=" | "<" | ">"
FIELD: /[^\W\d]\w*(\.(\w+|`[^`]*`))*/
TIME.3: /\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?(?![\w.])/
DURATION.2: /\d+(\.\d+)?(s|m|h|d)(?!\w)/
NUMBER: /-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/
STRING: /'(?:[^'\\]|\\.)*'/ | /"(?:[^"\\]|\\.)*"/
%ignore /\s+/
"""

# What the parser's terminals are called in an error's `expected`.
_EXPECTED_NAMES = {
    "FIELD": "a field",
    "OP": "an operator",
    "NUMBER": "a number",
    "STRING": "a string",
    "DURATION": "a duration",
    "TIME": "a time",
    "LPAR": "(",
    "RPAR": ")",
    "COMMA": ",",
    "$END": "the end of the query",
}


@dataclass(frozen=True, slots=True)
class Literal:
    """A literal: its kind (number, string, duration, time, bool), its value (the number, the
    string unescaped, the duration in seconds, the time's text, the bool), its text as written
    and its 1-based position."""

    kind: str
    value: Any
    position: int
    text: str


@dataclass(frozen=True, slots=True)
class Comparison:
    """`field operator values`: operator is one of = != < <= > >= in, not in, like, not like,
    is null, is not null (values empty for the last two, one for the others but the in lists)."""

    field: str
    operator: str
    values: tuple[Literal, ...]
    position: int


@dataclass(frozen=True, slots=True)
class And:
    """Every item holds; `depth` is how deeply and, or and not nest in it, `clauses` how many
    comparisons it holds (the parser bounds both as it builds)."""

    items: tuple[Node, ...]
    depth: int
    clauses: int


@dataclass(frozen=True, slots=True)
class Or:
    """Some item holds (depth and clauses: as And's)."""

    items: tuple[Node, ...]
    depth: int
    clauses: int


@dataclass(frozen=True, slots=True)
class Not:
    """The item does not hold (depth and clauses: as And's)."""

    item: Node
    depth: int
    clauses: int


Node = Comparison | And | Or | Not


@dataclass(frozen=True, slots=True)
class OrderBy:
    field: str
    descending: bool
    position: int


def invalid_query(message: str, position: int, expected: str) -> Invalid:
    """INVALID_QUERY at `position` (1-based), saying what was `expected` there."""
    return Invalid(
        f"query: {message} at position {position} (expected {expected})",
        reason=Reason.INVALID_QUERY,
        position=position,
        expected=expected,
    )


def too_large(message: str, limit: str, maximum: int, position: int) -> Invalid:
    return Invalid(
        f"query: {message} at position {position}",
        reason=Reason.QUERY_TOO_LARGE,
        limit=limit,
        maximum=maximum,
        position=position,
    )


def _unescape(quoted: str) -> str:
    """A string literal's value: a backslash before a quote or a backslash escapes it; any other
    backslash stays as written (so a like pattern's \\% and \\_ are written as they are)."""
    body, out, at = quoted[1:-1], [], 0
    while at < len(body):
        if body[at] == "\\" and at + 1 < len(body) and body[at + 1] in "\\'\"":
            at += 1
        out.append(body[at])
        at += 1
    return "".join(out)


_DURATION_S = {"s": 1, "m": 60, "h": 3_600, "d": 86_400}


def _literal(token: Token) -> Literal:
    text, position = str(token), token.start_pos + 1  # type: ignore[operator]
    if len(text) > LITERAL_LENGTH_MAX:
        raise too_large(
            f"a literal is longer than {LITERAL_LENGTH_MAX} characters", "literal_length", LITERAL_LENGTH_MAX, position
        )
    kind = token.type
    if kind == "STRING":
        if "\x00" in text:  # Text the ledger holds never has one; SQLite's LIKE would stop at it.
            raise invalid_query("a string holds a NUL character", position + text.index("\x00"), "text without NUL")
        return Literal("string", _unescape(text), position, text)
    if kind == "DURATION":
        return Literal("duration", float(text[:-1]) * _DURATION_S[text[-1]], position, text)
    if kind == "TIME":
        return Literal("time", text, position, text)
    if kind in ("TRUE", "FALSE"):
        return Literal("bool", kind == "TRUE", position, text)
    number = float(text) if any(c in text for c in ".eE") else int(text)
    if number in (float("inf"), float("-inf")) or abs(number) >= 2**63:
        raise invalid_query("a number out of range", position, "a number of at most 2**63 in magnitude")
    return Literal("number", number, position, text)


def _field(token: Token) -> tuple[str, int]:
    text, position = str(token), token.start_pos + 1  # type: ignore[operator]
    if len(text) > LITERAL_LENGTH_MAX:
        raise too_large(
            f"a field name is longer than {LITERAL_LENGTH_MAX} characters",
            "literal_length",
            LITERAL_LENGTH_MAX,
            position,
        )
    return text, position


def _size(node: Node) -> tuple[int, int]:
    """How deeply and, or and not nest in `node`, and how many comparisons it holds."""
    if isinstance(node, Comparison):
        return 0, 1
    return node.depth, node.clauses


def _bounded(depth: int, clauses: int, position: int) -> None:
    if depth > QUERY_DEPTH_MAX:
        raise too_large(f"and, or and not nest more than {QUERY_DEPTH_MAX} deep", "depth", QUERY_DEPTH_MAX, position)
    if clauses > QUERY_CLAUSES_MAX:
        raise too_large(f"more than {QUERY_CLAUSES_MAX} comparisons", "clauses", QUERY_CLAUSES_MAX, position)


def _chain(kind: type[And] | type[Or], left: Node, operator: Token, right: Node) -> Node:
    """`left operator right`; a chain of one operator is one node and one level (`a and b and
    c` is And(a, b, c))."""
    position = operator.start_pos + 1  # type: ignore[operator]
    right_depth, right_clauses = _size(right)
    if isinstance(left, kind):
        items, depth, clauses = (*left.items, right), max(left.depth, right_depth + 1), left.clauses + right_clauses
    else:
        left_depth, left_clauses = _size(left)
        items, depth, clauses = (left, right), 1 + max(left_depth, right_depth), left_clauses + right_clauses
    _bounded(depth, clauses, position)
    return kind(items, depth, clauses)


@v_args(inline=True)
class _Build(Transformer[Token, Any]):
    """Builds the syntax tree as the parser reduces (lark makes no tree of its own, and nothing
    recurses however deep the query nests); each node carries its depth and count of comparisons,
    so a bound is refused where it is crossed."""

    def or_(self, left: Node, operator: Token, right: Node) -> Node:
        return _chain(Or, left, operator, right)

    def and_(self, left: Node, operator: Token, right: Node) -> Node:
        return _chain(And, left, operator, right)

    def not_(self, operator: Token, item: Node) -> Node:
        depth, clauses = _size(item)
        _bounded(depth + 1, clauses, operator.start_pos + 1)  # type: ignore[operator]
        return Not(item, depth + 1, clauses)

    def _comparison(self, field: Token, operator: str, values: tuple[Literal, ...]) -> Comparison:
        name, position = _field(field)
        return Comparison(name, operator, values, position)

    def compare(self, field: Token, operator: Token, value: Literal) -> Comparison:
        return self._comparison(field, str(operator), (value,))

    def in_(self, field: Token, _in: Token, values: tuple[Literal, ...]) -> Comparison:
        return self._comparison(field, "in", values)

    def not_in(self, field: Token, _not: Token, _in: Token, values: tuple[Literal, ...]) -> Comparison:
        return self._comparison(field, "not in", values)

    def like(self, field: Token, _like: Token, value: Literal) -> Comparison:
        return self._comparison(field, "like", (value,))

    def not_like(self, field: Token, _not: Token, _like: Token, value: Literal) -> Comparison:
        return self._comparison(field, "not like", (value,))

    def is_null(self, field: Token, _is: Token, _null: Token) -> Comparison:
        return self._comparison(field, "is null", ())

    def is_not_null(self, field: Token, _is: Token, _not: Token, _null: Token) -> Comparison:
        return self._comparison(field, "is not null", ())

    def literals(self, *values: Literal) -> tuple[Literal, ...]:
        if len(values) > IN_VALUES_MAX:
            raise too_large(
                f"an in list of more than {IN_VALUES_MAX} values",
                "in_values",
                IN_VALUES_MAX,
                values[IN_VALUES_MAX].position,
            )
        return values

    def literal(self, token: Token) -> Literal:
        return _literal(token)

    def order(self, field: Token, direction: Token | None = None) -> OrderBy:
        name, position = _field(field)
        return OrderBy(name, direction is not None and direction.type == "DESC", position)


def _parser(start: str) -> Lark:
    return Lark(GRAMMAR, start=start, parser="lalr", lexer="basic", transformer=_Build(), maybe_placeholders=False)


_QUERY = _parser("query")
_ORDER = _parser("order")


def _expected(names: Iterable[str]) -> str:
    spelled = sorted({_EXPECTED_NAMES.get(name, name.lower()) for name in names})
    return ", ".join(spelled) or "nothing more"


def _check_parentheses(parser: Lark, text: str) -> None:
    """Parentheses nest at most QUERY_DEPTH_MAX deep (checked on the tokens, before parsing)."""
    depth = 0
    for token in parser.lex(text):
        if token.type == "LPAR":
            depth += 1
            if depth > QUERY_DEPTH_MAX:
                raise too_large(
                    f"parentheses nest more than {QUERY_DEPTH_MAX} deep",
                    "depth",
                    QUERY_DEPTH_MAX,
                    token.start_pos + 1,  # type: ignore[operator]
                )
        elif token.type == "RPAR":
            depth -= 1


def _parse(parser: Lark, text: str) -> Any:
    if len(text.encode()) > QUERY_BYTES_MAX:
        raise too_large(f"longer than {QUERY_BYTES_MAX} bytes", "bytes", QUERY_BYTES_MAX, QUERY_BYTES_MAX + 1)
    if not text.strip():
        raise invalid_query("the text is empty", 1, "a field")
    try:
        _check_parentheses(parser, text)
        return parser.parse(text)
    except UnexpectedInput as error:
        raise _refusal(error, text) from None


def _refusal(error: UnexpectedInput, text: str) -> Invalid:
    """INVALID_QUERY for what the parser refused, at its position."""
    if isinstance(error, UnexpectedCharacters):
        at = error.pos_in_stream or 0
        found = text[at]
        if found in "'\"":
            return invalid_query("a string is not closed", at + 1, f"a closing {found}")
        return invalid_query(f"unexpected character {found!r}", at + 1, _expected(error.allowed))
    if isinstance(error, UnexpectedEOF):
        return invalid_query("the text ends early", len(text) + 1, _expected(error.expected))
    if isinstance(error, UnexpectedToken):
        token = error.token
        if token.type == "$END":
            return invalid_query("the text ends early", len(text) + 1, _expected(error.expected))
        return invalid_query(f"unexpected {str(token)!r}", (token.start_pos or 0) + 1, _expected(error.expected))
    return invalid_query("the text does not parse", (error.pos_in_stream or 0) + 1, "a query")


def parse_query(text: str) -> Node:
    """The syntax tree of a query; INVALID_QUERY or QUERY_TOO_LARGE (with the position) when it
    does not parse or crosses a bound."""
    node: Node = _parse(_QUERY, text)
    return node


def parse_order(text: str) -> OrderBy:
    """`FIELD [asc|desc]`, what a search is ordered by; errors as parse_query's."""
    order: OrderBy = _parse(_ORDER, text)
    return order
