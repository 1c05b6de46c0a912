"""A parsed run search (ledger.views.search.grammar) as SQL over the views: a WHERE clause over
view_runs r and view_accounts a, and the parts of its order (compile_order), each with its
parameters.
Values only ever travel as parameters; field names and keys too (a key is a parameter of its
subquery), so the SQL text holds nothing the query's author wrote.

Logic is two-valued: a comparison on a field the run lacks (or holds with a value of another
kind) is false, and `not` makes it true. So `spec.lr != 0.1` holds for runs whose lr is a number
other than 0.1, and `not spec.lr = 0.1` also for runs without a numeric lr. `like` ignores the case
of ASCII letters (as SQLite's LIKE does; PostgreSQL's is made to match, and text compares and
orders in byte order on it too, whatever the database's collation). Ordering puts the runs
that lack the field last in either direction; for spec, summary and tag keys numbers come before
strings; ties go newest first, as ListRuns orders.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from ledger.views.search.fields import STATUSES, Field, resolve
from ledger.views.search.grammar import And, Comparison, Literal, Node, Not, Or, OrderBy, invalid_query

__all__ = ["LIKE_WILDCARDS_MAX", "Part", "Sql", "compile_order", "compile_where", "like_pattern"]

#: The `%` a like pattern may hold: each one multiplies the work of a match.
LIKE_WILDCARDS_MAX = 8
USD_MICRO = Decimal(1_000_000)

_OPERATORS = {"=": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
# A run's id as a subquery's rows are tested against it: an expression, not the column, so the
# database walks the runs in the order asked (an index) and tests each, rather than fetching every
# run the subquery holds to sort them all (SQLite would use the column's index to do that).
_RUN = "r.run_id || ''"
_FIELDS = "SELECT run_id FROM view_run_fields WHERE key = ?"
_METRICS = "SELECT run_id FROM view_run_metrics WHERE metric = ?"
_LIKE = "LOWER({0}) LIKE LOWER(CAST(? AS TEXT){1}) ESCAPE '\\'"


@dataclass(frozen=True, slots=True)
class Sql:
    text: str
    params: tuple[Any, ...]


def _clash(field: Field, literal: Literal, expected: str) -> Exception:
    return invalid_query(f"{field.name} cannot be compared with {literal.text}", literal.position, expected)


def _time(field: Field, literal: Literal) -> float:
    if literal.kind not in ("time", "string"):
        raise _clash(field, literal, "a time (ISO 8601, e.g. 2026-11-01 or '2026-11-01T12:00:00Z')")
    try:
        moment = datetime.fromisoformat(literal.value)
    except ValueError:
        raise _clash(field, literal, "a time (ISO 8601, e.g. 2026-11-01 or '2026-11-01T12:00:00Z')") from None
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()


def _usd_micro(field: Field, literal: Literal) -> int:
    expected = "an amount in dollars of at most 6 decimal places"
    if literal.kind != "number":
        raise _clash(field, literal, expected)
    try:
        micro = Decimal(literal.text) * USD_MICRO
    except InvalidOperation:
        raise _clash(field, literal, expected) from None
    if micro != micro.to_integral_value():
        raise _clash(field, literal, expected)
    if abs(micro) >= 2**63:  # The column holds 64-bit micro-dollars.
        raise invalid_query("an amount out of range", literal.position, "an amount of less than 2**63 micro-dollars")
    return int(micro)


def _run_value(field: Field, literal: Literal) -> Any:
    takes = field.run.takes
    if takes == "string":
        if literal.kind != "string":
            raise _clash(field, literal, "a string")
        return literal.value
    if takes == "time":
        return _time(field, literal)
    if takes == "usd":
        return _usd_micro(field, literal)
    if literal.kind == "number" or (takes == "duration" and literal.kind == "duration"):
        return literal.value
    raise _clash(field, literal, "a duration or a number of seconds" if takes == "duration" else "a number")


def _column_value(field: Field, literal: Literal) -> tuple[str, Any]:
    """The column of view_run_fields (num or text) a document literal compares with, and its
    value; a metric's literal is a number."""
    if field.source == "metric":
        if literal.kind != "number":
            raise _clash(field, literal, "a number")
        return f"{field.stat}_value", float(literal.value)
    if literal.kind == "number":
        return "num", float(literal.value)
    if literal.kind == "string":
        return "text", literal.value
    if literal.kind == "bool":
        return "text", "true" if literal.value else "false"
    raise _clash(field, literal, "a number, a string, true or false")


def like_pattern(field: Field, literal: Literal) -> str:
    """A like pattern, checked: a string, ending in no lone escape, with few `%`."""
    if literal.kind != "string":
        raise _clash(field, literal, "a string pattern")
    pattern, escaped, wildcards = literal.value, False, 0
    for character in pattern:
        if not escaped and character == "%":
            wildcards += 1
        escaped = not escaped and character == "\\"
    if escaped:
        raise invalid_query("a like pattern ends with a lone \\", literal.position, "a character after \\")
    if wildcards > LIKE_WILDCARDS_MAX:
        raise invalid_query(
            f"a like pattern holds more than {LIKE_WILDCARDS_MAX} %",
            literal.position,
            f"at most {LIKE_WILDCARDS_MAX} %",
        )
    return str(pattern)


def _not_string(field: Field, comparison: Comparison) -> Exception:
    return invalid_query(f"like compares strings, and {field.name} is not one", comparison.position, "a string field")


def _check_status(field: Field, comparison: Comparison) -> None:
    if field.key == "status" and comparison.operator in ("=", "!=", "in", "not in"):
        for literal in comparison.values:
            if literal.value not in STATUSES:
                raise invalid_query(f"no status {literal.text}", literal.position, ", ".join(STATUSES))


def _text(expression: str, collate: str) -> str:
    """A text expression compared or ordered in byte order: with `collate`, the database's clause
    for it (PostgreSQL's own collation may fold case or order by language; SQLite's needs none)."""
    return f"({expression}){collate}" if collate else expression


def _run_comparison(field: Field, comparison: Comparison, now: float, collate: str) -> Sql:
    run = field.run
    expression, head = run.sql, (now,) if "?" in run.sql else ()
    text = _text(expression, collate) if run.takes == "string" else expression
    operator, values = comparison.operator, comparison.values
    if operator in ("is null", "is not null"):
        return Sql(f"{expression} {operator.upper()}", head)
    if operator in ("like", "not like"):
        if run.takes != "string":
            raise invalid_query(
                f"like compares strings, and {field.name} is not one", comparison.position, "a string field"
            )
        test = _LIKE.format(text, collate)
        params: tuple[Any, ...] = (like_pattern(field, values[0]),)
        test = test if operator == "like" else f"NOT {test}"
    else:
        _check_status(field, comparison)
        params = tuple(_run_value(field, literal) for literal in values)
        if operator in ("in", "not in"):
            test = f"{text} {operator.upper()} ({', '.join('?' * len(params))})"
        else:
            test = f"{text} {_OPERATORS[operator]} ?"
        params = (*head, *params)
    if not run.nullable:
        return Sql(test, params)
    # A run lacking the field: false, never NULL (which `not` would keep NULL).
    return Sql(f"({expression} IS NOT NULL AND {test})", (*head, *params))


def _stored_comparison(field: Field, comparison: Comparison, collate: str) -> Sql:
    """A comparison on a document key or a metric: the runs of a subquery over its indexed rows."""
    rows, key = (_METRICS, field.key) if field.source == "metric" else (_FIELDS, field.key)
    operator, values = comparison.operator, comparison.values
    if operator in ("is null", "is not null"):
        return Sql(f"{_RUN} {'NOT IN' if operator == 'is null' else 'IN'} ({rows})", (key,))
    if operator in ("like", "not like"):
        if field.source == "metric":
            raise invalid_query(
                f"like compares strings, and {field.name} is a number", comparison.position, "a string field"
            )
        test = _LIKE.format(_text("text", collate), collate)
        test = test if operator == "like" else f"text IS NOT NULL AND NOT {test}"
        return Sql(f"{_RUN} IN ({rows} AND {test})", (key, like_pattern(field, values[0])))
    typed = [_column_value(field, literal) for literal in values]
    column = typed[0][0]
    for (other, _), literal in zip(typed, values, strict=True):
        if other != column:
            raise invalid_query("an in list mixes numbers and strings", literal.position, "values of one kind")
    params = tuple(value for _, value in typed)
    column = _text(column, collate) if column == "text" else column
    if operator in ("in", "not in"):
        test = f"{column} {operator.upper()} ({', '.join('?' * len(params))})"
    else:
        test = f"{column} {_OPERATORS[operator]} ?"
    return Sql(f"{_RUN} IN ({rows} AND {test})", (key, *params))


def compile_where(node: Node, now: float, collate: str = "") -> Sql:
    """The WHERE condition of a parsed query (`now`: the epoch seconds elapsed is measured to;
    `collate`: the database's clause for byte order). Recursion is as deep as the query nests,
    which the parser bounds."""
    if isinstance(node, Comparison):
        field = resolve(node.field, node.position)
        if field.source == "run":
            return _run_comparison(field, node, now, collate)
        return _stored_comparison(field, node, collate)
    if isinstance(node, Not):
        inner = compile_where(node.item, now, collate)
        return Sql(f"NOT ({inner.text})", inner.params)
    parts = [compile_where(item, now, collate) for item in node.items]
    joiner = " AND " if isinstance(node, And) else " OR "
    assert isinstance(node, And | Or)
    return Sql(joiner.join(f"({part.text})" for part in parts), tuple(p for part in parts for p in part.params))


@dataclass(frozen=True, slots=True)
class Part:
    """One part of a search's order (every run it holds comes before the next part's): the
    tables it walks (view_runs r and view_accounts a, after the table whose index orders it),
    what it adds to the WHERE clause, and its ORDER BY terms."""

    source: str
    condition: Sql | None
    terms: Sql


RUNS = "view_runs r LEFT JOIN view_accounts a ON a.account = r.run_id"
TIES = "r.opened_at DESC, r.run_id DESC"


def _walked(table: str, condition: str, params: tuple[Any, ...], terms: str) -> Part:
    """A part walked along an index of `table` (aliased o) in its order, each row's run joined:
    a page stops after its runs instead of sorting every match."""
    return Part(f"{table} o CROSS JOIN {RUNS}", Sql(f"{condition} AND r.run_id = o.run_id", params), Sql(terms, ()))


def _lacking(table: str, condition: str, key: str) -> Part:
    """The runs without a row of `table` where `condition` holds (on its alias f): last, newest first."""
    test = f"NOT EXISTS (SELECT 1 FROM {table} f WHERE f.run_id = r.run_id AND {condition})"
    return Part(RUNS, Sql(test, (key,)), Sql(TIES, ()))


def compile_order(order: OrderBy | None, descending: bool, now: float, collate: str = "") -> tuple[Part, ...]:
    """The parts a search is ordered in: runs lacking the field come last either way, and for
    spec, summary and tag keys numbers before strings; ties newest first. A part ordered by a
    document key or a metric walks its (key, value) index, so a page costs the runs it reads."""
    if order is None:
        return (Part(RUNS, None, Sql(TIES, ())),)
    field = resolve(order.field, order.position)
    direction = "DESC" if descending or order.descending else "ASC"
    if field.source == "run":
        expression = field.run.sql
        head = (now,) if "?" in expression else ()
        ordered = _text(expression, collate) if field.run.takes == "string" else expression
        if not field.run.nullable:
            return (Part(RUNS, None, Sql(f"{ordered} {direction}, {TIES}", head)),)
        terms = f"CASE WHEN {expression} IS NULL THEN 1 ELSE 0 END, {ordered} {direction}, {TIES}"
        return (Part(RUNS, None, Sql(terms, (*head, *head))),)
    if field.source == "metric":
        value = f"{field.stat}_value"
        terms = f"o.{value} {direction}, {TIES}"
        return (
            _walked("view_run_metrics", f"o.metric = ? AND o.{value} IS NOT NULL", (field.key,), terms),
            _lacking("view_run_metrics", f"f.metric = ? AND f.{value} IS NOT NULL", field.key),
        )
    text = _text("o.text", collate)
    return (
        _walked("view_run_fields", "o.key = ? AND o.num IS NOT NULL", (field.key,), f"o.num {direction}, {TIES}"),
        _walked(
            "view_run_fields",
            "o.key = ? AND o.num IS NULL AND o.text IS NOT NULL",
            (field.key,),
            f"{text} {direction}, {TIES}",
        ),
        _lacking("view_run_fields", "f.key = ? AND (f.num IS NOT NULL OR f.text IS NOT NULL)", field.key),
    )
