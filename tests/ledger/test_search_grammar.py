"""The run search language without storage: what each query parses to (operators, literals,
precedence, parentheses), every refusal with its reason and 1-based position, every bound, and
that the SQL it compiles to carries values only as parameters."""

from __future__ import annotations

import pytest

from ledger.domain.errors import Invalid
from ledger.domain.reasons import Reason
from ledger.views.search.compile import compile_order, compile_where
from ledger.views.search.grammar import (
    IN_VALUES_MAX,
    LITERAL_LENGTH_MAX,
    QUERY_BYTES_MAX,
    QUERY_CLAUSES_MAX,
    QUERY_DEPTH_MAX,
    And,
    Comparison,
    Not,
    Or,
    parse_order,
    parse_query,
)

NOW = 1_800_000_000.0


def shape(node: object) -> object:
    """A parsed query as nested tuples: ("and", ...), ("or", ...), ("not", x), or
    (field, operator, values...)."""
    if isinstance(node, Comparison):
        return (node.field, node.operator, *(literal.value for literal in node.values))
    if isinstance(node, Not):
        return ("not", shape(node.item))
    assert isinstance(node, And | Or)
    return ("and" if isinstance(node, And) else "or", *(shape(item) for item in node.items))


def refusal(query: str, reason: Reason = Reason.INVALID_QUERY) -> dict[str, str]:
    """The metadata of the refusal of `query` (parsed and compiled), checking its reason."""
    with pytest.raises(Invalid) as raised:
        compile_where(parse_query(query), NOW)
    assert raised.value.reason == reason, raised.value.message
    return raised.value.metadata


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("spec.lr = 0.1", ("spec.lr", "=", 0.1)),
        ("spec.lr != 1", ("spec.lr", "!=", 1)),
        ("spec.lr < 1", ("spec.lr", "<", 1)),
        ("spec.lr <= 1", ("spec.lr", "<=", 1)),
        ("spec.lr > -1.5e-3", ("spec.lr", ">", -0.0015)),
        ("spec.lr >= 2", ("spec.lr", ">=", 2)),
        ("status in ('done', \"failed\")", ("status", "in", "done", "failed")),
        ("status NOT IN ('done')", ("status", "not in", "done")),
        ("name like 'sft-%'", ("name", "like", "sft-%")),
        ("name not like 'a_c'", ("name", "not like", "a_c")),
        ("finished is null", ("finished", "is null")),
        ("finished IS NOT NULL", ("finished", "is not null")),
        ("elapsed > 90m", ("elapsed", ">", 5_400.0)),
        ("elapsed < 2h", ("elapsed", "<", 7_200.0)),
        ("elapsed < 1d", ("elapsed", "<", 86_400.0)),
        ("started > 2026-11-01", ("started", ">", "2026-11-01")),
        ("started > 2026-11-01T12:30:00Z", ("started", ">", "2026-11-01T12:30:00Z")),
        ("spec.flag = true", ("spec.flag", "=", True)),
        ("spec.flag = FALSE", ("spec.flag", "=", False)),
        ("spec.note = 'it\\'s'", ("spec.note", "=", "it's")),
        # A backslash escapes a quote or a backslash, and stays before anything else.
        ("name like 'a\\_b'", ("name", "like", "a\\_b")),
        ("name like 'a\\\\_b'", ("name", "like", "a\\_b")),
        ('name = "say \\"hi\\""', ("name", "=", 'say "hi"')),
        ("spec.`warmup-steps` = 3", ("spec.`warmup-steps`", "=", 3)),
        ("metrics.`train/loss`.min < 0.5", ("metrics.`train/loss`.min", "<", 0.5)),
        # Keywords inside a field name are the field's.
        ("spec.index = 1", ("spec.index", "=", 1)),
        ("spec.notes = 1", ("spec.notes", "=", 1)),
    ],
)
def test_each_operator_and_literal_parses(query: str, expected: object) -> None:
    assert shape(parse_query(query)) == expected


def test_not_binds_tighter_than_and_which_binds_tighter_than_or() -> None:
    assert shape(parse_query("a = 1 or b = 2 and c = 3")) == (
        "or",
        ("a", "=", 1),
        ("and", ("b", "=", 2), ("c", "=", 3)),
    )
    assert shape(parse_query("not a = 1 and b = 2")) == ("and", ("not", ("a", "=", 1)), ("b", "=", 2))
    assert shape(parse_query("a = 1 and b = 2 or not c = 3")) == (
        "or",
        ("and", ("a", "=", 1), ("b", "=", 2)),
        ("not", ("c", "=", 3)),
    )


def test_parentheses_override_precedence() -> None:
    assert shape(parse_query("(a = 1 or b = 2) and c = 3")) == (
        "and",
        ("or", ("a", "=", 1), ("b", "=", 2)),
        ("c", "=", 3),
    )
    assert shape(parse_query("not (a = 1 or b = 2)")) == ("not", ("or", ("a", "=", 1), ("b", "=", 2)))
    assert shape(parse_query("((a = 1))")) == ("a", "=", 1)


def test_a_chain_of_one_operator_is_one_node() -> None:
    assert shape(parse_query("a = 1 and b = 2 and c = 3")) == ("and", ("a", "=", 1), ("b", "=", 2), ("c", "=", 3))


def test_order_by_parses_a_field_and_a_direction() -> None:
    assert parse_order("metrics.loss.min desc").descending
    assert not parse_order("spec.lr").descending
    assert parse_order("spec.lr ASC").field == "spec.lr"


@pytest.mark.parametrize(
    ("query", "position", "expected"),
    [
        ("spec.lr =", "10", "a number"),
        ("spec.lr == 1", "10", "a number"),
        ("spec.lr = 1 and", "16", "a field"),
        ("spec.lr = 'x", "11", "a closing '"),
        ("(spec.lr = 1", "13", ")"),
        ("spec.lr = 1)", "12", "the end of the query"),
        ("spec.lr = 1 spec.x = 2", "13", "and"),
        ("spec.lr ~ 1", "9", "an operator"),
        ("", "1", "a field"),
    ],
)
def test_a_syntax_error_names_its_position_and_what_was_expected(query: str, position: str, expected: str) -> None:
    metadata = refusal(query)
    assert metadata["position"] == position
    assert expected in metadata["expected"]


@pytest.mark.parametrize(
    ("query", "position", "expected"),
    [
        ("colour = 'red'", "1", "spec.KEY"),
        ("spec = 1", "1", "spec.KEY"),
        ("metrics.loss = 1", "1", "metrics.NAME.last|min|max"),
        ("metrics.loss.mean > 1", "14", "last, min or max"),
        ("spec.taux_d\u00e9part = 1", "12", "an ASCII field name"),
        ("name > 3", "8", "a string"),
        ("attempts = 'two'", "12", "a number"),
        ("metrics.loss.min = 'low'", "20", "a number"),
        ("spec.lr = 2h", "11", "a number, a string, true or false"),
        ("spec.lr like 1", "14", "a string pattern"),
        ("metrics.loss.min like 'x%'", "1", "a string field"),
        ("attempts like '1%'", "1", "a string field"),
        ("status = 'finished'", "10", "running, done, failed, stopped, lost"),
        ("started > 'yesterday'", "11", "a time"),
        ("started > 3", "11", "a time"),
        ("elapsed > 'long'", "11", "a duration"),
        ("cap_usd > 1.0000001", "11", "at most 6 decimal places"),
        ("spec.lr in (1, 'a')", "16", "values of one kind"),
        ("name like 'a\\\\'", "11", "a character after"),
        ("name like '%a%b%c%d%e%f%g%h%i'", "11", "at most 8 %"),
        ("spec.lr = 1e999", "11", "at most 2**63"),
    ],
)
def test_an_unknown_field_or_a_type_clash_names_its_position(query: str, position: str, expected: str) -> None:
    metadata = refusal(query)
    assert metadata["position"] == position
    assert expected in metadata["expected"]


def test_an_unknown_order_by_field_is_refused_with_its_position() -> None:
    with pytest.raises(Invalid) as raised:
        compile_order(parse_order("spec"), False, NOW)
    assert raised.value.reason == Reason.INVALID_QUERY
    assert raised.value.metadata["position"] == "1"


def test_the_text_is_bounded_in_bytes() -> None:
    metadata = refusal("name = '" + "\u00e9" * (QUERY_BYTES_MAX // 2) + "'", Reason.QUERY_TOO_LARGE)
    assert metadata["limit"] == "bytes"
    assert metadata["maximum"] == str(QUERY_BYTES_MAX)


def test_comparisons_are_bounded_in_number() -> None:
    within = " or ".join(["attempts = 1"] * QUERY_CLAUSES_MAX)
    compile_where(parse_query(within), NOW)
    metadata = refusal(within + " or attempts = 2", Reason.QUERY_TOO_LARGE)
    assert metadata["limit"] == "clauses"
    assert metadata["position"] == str(len(within) + 2)


def test_operators_are_bounded_in_depth() -> None:
    compile_where(parse_query("not " * QUERY_DEPTH_MAX + "attempts = 1"), NOW)
    metadata = refusal("not " * (QUERY_DEPTH_MAX + 1) + "attempts = 1", Reason.QUERY_TOO_LARGE)
    assert metadata["limit"] == "depth"
    assert metadata["position"] == "1"
    # Deeper than Python's recursion limit: refused, never a RecursionError.
    assert refusal("not " * 1000 + "attempts = 1", Reason.QUERY_TOO_LARGE)["limit"] == "depth"


def test_alternating_operators_count_their_depth() -> None:
    query = "attempts = 0"
    for level in range(QUERY_DEPTH_MAX):
        query = f"({query}) {'and' if level % 2 else 'or'} attempts = {level}"
    compile_where(parse_query(query), NOW)
    assert refusal(f"not ({query})", Reason.QUERY_TOO_LARGE)["limit"] == "depth"


def test_parentheses_are_bounded_in_depth() -> None:
    compile_where(parse_query("(" * QUERY_DEPTH_MAX + "attempts = 1" + ")" * QUERY_DEPTH_MAX), NOW)
    metadata = refusal(
        "(" * (QUERY_DEPTH_MAX + 1) + "attempts = 1" + ")" * (QUERY_DEPTH_MAX + 1), Reason.QUERY_TOO_LARGE
    )
    assert metadata["limit"] == "depth"
    assert metadata["position"] == str(QUERY_DEPTH_MAX + 1)


def test_literals_and_field_names_are_bounded_in_length() -> None:
    longest = "x" * (LITERAL_LENGTH_MAX - 2)
    compile_where(parse_query(f"name = '{longest}'"), NOW)
    metadata = refusal(f"name = '{longest}x'", Reason.QUERY_TOO_LARGE)
    assert (metadata["limit"], metadata["position"]) == ("literal_length", "8")
    metadata = refusal("spec." + "k" * LITERAL_LENGTH_MAX + " = 1", Reason.QUERY_TOO_LARGE)
    assert (metadata["limit"], metadata["position"]) == ("literal_length", "1")


def test_in_lists_are_bounded_in_values() -> None:
    values = ", ".join(str(n) for n in range(IN_VALUES_MAX))
    compile_where(parse_query(f"attempts in ({values})"), NOW)
    metadata = refusal(f"attempts in ({values}, 1)", Reason.QUERY_TOO_LARGE)
    assert metadata["limit"] == "in_values"
    assert metadata["position"] == str(len(f"attempts in ({values}, ") + 1)


def test_values_and_keys_travel_as_parameters_never_in_the_sql_text() -> None:
    hostile = 'x"); DROP TABLE view_runs; --'
    sql = compile_where(parse_query(f"spec.`{hostile}` = '{hostile}' or name like '{hostile}%'"), NOW)
    assert hostile not in sql.text
    assert sql.params.count(f"spec.`{hostile}`") == 1  # A key that is not letters, digits and _ stays quoted.
    assert hostile in sql.params
