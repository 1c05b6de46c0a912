"""Run search over the views, on each backend: answers checked against a brute-force evaluator
(tests.ledger.search_model) over random runs and random queries, ordering with runs lacking the
field last, paging, retracted runs, summary keys replaced, metric stats, and refusals made before
anything is read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger import Ledger
from ledger.domain.errors import Invalid
from ledger.domain.reasons import Reason
from tests.ledger.conftest import FakeClock
from tests.ledger.search_model import expected, record_runs

NUMBERS = [0.0001, 0.0003, 0.001, 0.0005, 8, 16, 32, 12, 1, 2, 2.5, 5, 0.1, 0.2, 0.3]
STRINGS = ["adam", "AdamW", "sgd", "one", "x", "y", "a_b", "a%b", "plain"]
PATTERNS = ["ad%", "%w", "a\\_b", "a\\%b", "a_b", "%", "s_d", "sft%", "%-1%", "dpo%", "eval\\_%"]
DOCUMENT_FIELDS = [
    "spec.lr",
    "spec.lora.r",
    "spec.lora",
    "spec.opt",
    "spec.flag",
    "spec.mixed",
    "spec.notes",
    "spec.missing",
    "summary.eval",
    "summary.tag",
    "summary.nested",
    "summary.nested.k",
    "summary.nested.j",
    "tags.team",
]
METRIC_FIELDS = [f"metrics.{name}.{stat}" for name in ("loss", "acc", "none") for stat in ("last", "min", "max")]
METRIC_VALUES = [0.5, 1.0, 1.5, 2.0, 2.5, 1.2]
TIMES = ["2025-01-01T01:00:00+00:00", "2025-01-01T03:00:00+00:00", "2025-01-01T05:30:00+00:00"]
RUN_FIELDS: dict[str, tuple[str, list[Any]]] = {
    "status": ("string", ["running", "done", "failed", "stopped", "lost"]),
    "name": ("string", ["sft-a-1", "dpo-2", "x"]),
    "account": ("string", ["team-a", "team-b"]),
    "attempts": ("number", [0, 1, 2]),
    "started": ("time", TIMES),
    "finished": ("time", TIMES),
    "elapsed": ("duration", [("30m", 1_800.0), ("2h", 7_200.0), ("3600", 3_600)]),
    "spend_committed_usd_micro": ("number", [0, 100, 500, 900]),
    "spend_committed_usd": ("usd", [0.0005, 0.0001, 0]),
    "cap_usd_micro": ("number", [1_000_000, 5_000_000]),
    "cap_usd": ("usd", [1, 5]),
}
COMPARISONS = ["=", "!=", "<", "<=", ">", ">="]
CORPUS = Path(__file__).resolve().parents[1] / "data" / "0.1.0"


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _literal(kind: str, value: Any) -> tuple[str, Any, str]:
    """(kind, value, text) of a literal as the model and the query text each want it."""
    if kind == "string":
        return "string", value, _quoted(value)
    if kind == "bool":
        return "bool", value, "true" if value else "false"
    if kind == "time":
        return "time", value, _quoted(value)
    if kind == "duration":
        return "number", value[1], value[0]
    return kind, value, repr(value)


@st.composite
def comparisons(draw: st.DrawFn) -> tuple[Any, ...]:
    family = draw(st.sampled_from(["document", "metric", "run"]))
    if family == "document":
        name = draw(st.sampled_from(DOCUMENT_FIELDS))
        kind = draw(st.sampled_from(["number", "string", "bool"]))
        pool: list[Any] = {"number": NUMBERS, "string": STRINGS, "bool": [True, False]}[kind]
        operators = [*COMPARISONS, "in", "not in", "like", "not like", "is null", "is not null"]
    elif family == "metric":
        name, kind, pool = draw(st.sampled_from(METRIC_FIELDS)), "number", METRIC_VALUES
        operators = [*COMPARISONS, "in", "not in", "is null", "is not null"]
    else:
        name = draw(st.sampled_from(sorted(RUN_FIELDS)))
        kind, pool = RUN_FIELDS[name]
        operators = [*COMPARISONS, "in", "not in", "is null", "is not null"]
        operators += ["like", "not like"] if kind == "string" else []
    operator = draw(st.sampled_from(operators))
    if operator in ("is null", "is not null"):
        return ("cmp", name, operator, [])
    if operator in ("like", "not like"):
        return ("cmp", name, operator, [("string", draw(st.sampled_from(PATTERNS)), "")])
    if operator in ("in", "not in"):
        values = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4))
        return ("cmp", name, operator, [_literal(kind, value) for value in values])
    if name == "status":
        operator = draw(st.sampled_from(["=", "!="]))
    return ("cmp", name, operator, [_literal(kind, draw(st.sampled_from(pool)))])


queries = st.recursive(
    comparisons(),
    lambda inner: st.one_of(
        st.tuples(st.just("and"), inner, inner),
        st.tuples(st.just("or"), inner, inner),
        st.tuples(st.just("not"), inner),
    ),
    max_leaves=6,
)


def render(node: tuple[Any, ...]) -> str:
    if node[0] in ("and", "or"):
        return f"({render(node[1])}) {node[0]} ({render(node[2])})"
    if node[0] == "not":
        return f"not ({render(node[1])})"
    _, name, operator, literals = node
    if operator in ("is null", "is not null"):
        return f"{name} {operator}"
    if operator in ("like", "not like"):
        return f"{name} {operator} {_quoted(literals[0][1])}"
    if operator in ("in", "not in"):
        return f"{name} {operator} ({', '.join(text for _, _, text in literals)})"
    return f"{name} {operator} {literals[0][2]}"


def ids(ledger: Ledger, position: int, **search: Any) -> list[str]:
    page = ledger.search_runs(limit=100, min_position=position, **search)
    return [run.run_id for run in page.runs]


@pytest.mark.parametrize("seed", [1, 2])
def test_search_answers_what_a_brute_force_evaluator_does(ledger: Ledger, clock: FakeClock, seed: int) -> None:
    runs, position = record_runs(ledger, clock, seed, count=18)
    now = clock.now.timestamp()
    order_fields = st.sampled_from(["", *DOCUMENT_FIELDS, *METRIC_FIELDS, *sorted(RUN_FIELDS)])

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(
        query=st.one_of(st.none(), queries),
        order=order_fields,
        descending=st.booleans(),
        limit=st.integers(1, 6),
        offset=st.integers(0, 18),
    )
    def agrees(query: tuple[Any, ...] | None, order: str, descending: bool, limit: int, offset: int) -> None:
        where = "" if query is None else render(query)
        found = ids(ledger, position, where=where, order_by=order, descending=descending)
        whole = expected(runs, query, order, descending, now)
        assert found == whole, (where, order, descending)
        # A page from any offset, which may begin or end within any part of the order (the runs
        # with a number, with a string, lacking the field).
        page = ledger.search_runs(where=where, order_by=order, descending=descending, limit=limit, offset=offset)
        assert [run.run_id for run in page.runs] == whole[offset : offset + limit], (where, order, limit, offset)
        assert page.next_offset == (offset + limit if len(whole) > offset + limit else None)

    agrees()


def test_pages_continue_from_their_offset_to_the_end(ledger: Ledger, clock: FakeClock) -> None:
    runs, position = record_runs(ledger, clock, 3, count=12)
    whole = expected(runs, None, "spec.lr", True, clock.now.timestamp())
    walked, offset = [], 0
    while offset is not None:
        page = ledger.search_runs(where="", order_by="spec.lr desc", limit=4, offset=offset, min_position=position)
        walked += [run.run_id for run in page.runs]
        offset = page.next_offset
    assert walked == whole
    assert len(whole) == 11  # One of the twelve is retracted.


def test_rows_are_the_run_summaries_list_runs_answers(ledger: Ledger, clock: FakeClock) -> None:
    _, position = record_runs(ledger, clock, 4, count=8)
    listed = ledger.list_runs(limit=100, min_position=position).runs
    assert ledger.search_runs(where="", limit=100).runs == listed
    assert len(listed) == 7


def test_retracted_runs_only_when_asked(ledger: Ledger) -> None:
    run_id = ledger.open_run(run_key="r", spec={"lr": 0.1}).run_id
    position = ledger.retract_run(run_id=run_id, reason="leaked eval data").position
    assert ids(ledger, position, where="spec.lr = 0.1") == []
    assert ids(ledger, position, where="spec.lr = 0.1", include_retracted=True) == [run_id]


def test_a_summary_key_noted_again_replaces_its_nested_leaves(ledger: Ledger) -> None:
    run_id = ledger.open_run(run_key="r").run_id
    ledger.start_attempt(run_id=run_id)
    ledger.finish_run(run_id=run_id, attempt=1, status="done", summary={"eval": {"acc": 0.9, "f1": 0.8}})
    position = ledger.note_summary(run_id=run_id, summary={"eval": {"acc": 0.95}}).position
    assert ids(ledger, position, where="summary.eval.acc = 0.95") == [run_id]
    assert ids(ledger, position, where="summary.eval.f1 is null") == [run_id]
    assert ids(ledger, position, where="summary.eval.acc = 0.9") == []


def test_metric_stats_follow_a_resumed_attempt(ledger: Ledger) -> None:
    run_id = ledger.open_run(run_key="r").run_id
    ledger.start_attempt(run_id=run_id)
    ledger.append_steps(run_id=run_id, attempt=1, steps=[1, 2, 3], metrics={"loss": [3.0, 1.0, 2.0]})
    ledger.save_checkpoint(run_id=run_id, attempt=1, step=2, backend="local", uri="file:///c/2", digest="d2")
    ledger.start_attempt(run_id=run_id, resume_from_step=2)
    position = ledger.append_steps(run_id=run_id, attempt=2, steps=[3], metrics={"loss": [4.0]}).position
    # The last value is the resumed attempt's; least and greatest count every recorded value.
    for where in ("metrics.loss.last = 4", "metrics.loss.min = 1", "metrics.loss.max = 4"):
        assert ids(ledger, position, where=where) == [run_id], where


def test_long_strings_compare_by_their_indexed_prefix(ledger: Ledger) -> None:
    long = "p" * 300
    run_id = ledger.open_run(run_key="r", spec={"prompt": long}).run_id
    position = ledger.open_run(run_key="s", spec={"prompt": "p" * 254}).position
    assert ids(ledger, position, where=f"spec.prompt > '{'p' * 254}'") == [run_id]
    assert ids(ledger, position, where="spec.prompt like 'ppp%'", order_by="name") != []


def test_a_refused_query_is_refused_before_anything_is_read(ledger: Ledger) -> None:
    # A position the views never reach: a query refused waits for nothing.
    for where, reason in [("spec.lr >", Reason.INVALID_QUERY), ("not " * 40 + "attempts = 1", Reason.QUERY_TOO_LARGE)]:
        with pytest.raises(Invalid) as raised:
            ledger.search_runs(where=where, min_position=10**9, timeout_s=30.0)
        assert raised.value.reason == reason
    with pytest.raises(Invalid) as raised:
        ledger.search_runs(where="", order_by="colour", min_position=10**9, timeout_s=30.0)
    assert (raised.value.reason, raised.value.metadata["position"]) == (Reason.INVALID_QUERY, "1")


def test_a_dollar_amount_past_64_bit_micro_dollars_is_refused(ledger: Ledger) -> None:
    """A number within the bounds of the language whose micro-dollars are not: refused as the
    query's, never an overflow of the database's integer."""
    position = ledger.open_run(run_key="r", cap_usd_micro=1_000_000).position
    for field in ("cap_usd", "spend_committed_usd"):
        for amount in ("1e18", "-9223372036854.775808", "9300000000000"):
            with pytest.raises(Invalid) as raised:
                ledger.search_runs(where=f"{field} > {amount}", min_position=10**9, timeout_s=1.0)
            assert (raised.value.reason, raised.value.metadata["position"]) == (
                Reason.INVALID_QUERY,
                str(len(field) + 4),
            ), (field, amount)
    found = ledger.search_runs(where="cap_usd < 9223372036854.775807", min_position=position).runs
    assert [run.cap_usd_micro for run in found] == [1_000_000]


def test_a_string_holding_nul_is_refused(ledger: Ledger) -> None:
    """No text the ledger holds has a NUL (a write refuses it); SQLite's LIKE ends a pattern at one,
    so `like '%<NUL>x'` matched every run there and none on PostgreSQL."""
    position = ledger.open_run(run_key="r", name="plain").position
    for where in ("name like '%\x00x'", 'name = "\x00"', "spec.s in ('a', 'b\x00')"):
        with pytest.raises(Invalid) as raised:
            ledger.search_runs(where=where, min_position=position)
        assert raised.value.reason == Reason.INVALID_QUERY, where
        assert int(raised.value.metadata["position"]) == where.index("\x00") + 1, where


def test_page_size_and_offset_are_bounded(ledger: Ledger) -> None:
    for arguments in ({"limit": 0}, {"limit": 10_001}, {"offset": -1}, {"offset": 100_001}):
        with pytest.raises(Invalid) as raised:
            ledger.search_runs(where="", **arguments)
        assert raised.value.reason == Reason.OUT_OF_RANGE, arguments


def test_a_ledger_written_before_the_search_view_builds_it_when_opened(tmp_path: Path) -> None:
    copy = tmp_path / "ledger.db"
    shutil.copyfile(CORPUS / "ledger.sqlite", copy)
    run_id = json.loads((CORPUS / "manifest.json").read_text())["sqlite"]["run_id"]
    ledger = Ledger.open(str(copy))
    try:
        # The 0.1.0 corpus run: spec {"lr": 0.0001}, summary eval_loss 0.25, a loss metric.
        where = "spec.lr = 0.0001 and summary.eval_loss < 0.3 and metrics.loss.min is not null"
        assert ids(ledger, ledger.head(), where=where, include_retracted=True) == [run_id]
    finally:
        ledger.close()


def test_tags_are_searched_by_key_quoted_when_odd_and_forgotten_when_removed(ledger: Ledger) -> None:
    tagged = ledger.open_run(run_key="tagged").run_id
    other = ledger.open_run(run_key="other").run_id
    ledger.set_tags(run_id=tagged, tags={"sweep/lr": "3e-4", "stage.name": "warm", "team": "vision"})
    position = ledger.set_tags(run_id=other, tags={"team": "audio", "stage.name": "cold"}).position
    assert ids(ledger, position, where="tags.`sweep/lr` = '3e-4'") == [tagged]
    assert ids(ledger, position, where="tags.`stage.name` = 'warm'") == [tagged]
    assert ids(ledger, position, where="tags.team in ('vision', 'audio')", order_by="tags.team") == [other, tagged]
    position = ledger.set_tags(run_id=tagged, tags={"team": "audio"}, remove=["sweep/lr"]).position
    assert ids(ledger, position, where="tags.`sweep/lr` is not null") == []
    assert ids(ledger, position, where="tags.team = 'vision'") == []
    assert sorted(ids(ledger, position, where="tags.team = 'audio'")) == sorted([tagged, other])
    ledger.projector.rebuild()
    assert sorted(ids(ledger, position, where="tags.team = 'audio'")) == sorted([tagged, other])


def test_every_status_a_run_can_have_is_searched_lost_too(ledger: Ledger, clock: FakeClock) -> None:
    """A run whose attempt's lease lapsed reads `lost` (ListRuns says so): the search finds it by
    that status, as by each other, and refuses only a status no run can have."""
    lost = ledger.open_run(run_key="lost").run_id
    ledger.start_attempt(run_id=lost, lease_s=60)
    running = ledger.open_run(run_key="running").run_id
    ledger.start_attempt(run_id=running, lease_s=600)
    clock.advance(seconds=61)
    assert ledger.sweep_leases() == 1
    position = ledger.head()
    assert [run.status for run in ledger.list_runs(limit=10, min_position=position).runs] == ["running", "lost"]
    assert ids(ledger, position, where="status = 'lost'") == [lost]
    assert ids(ledger, position, where="status in ('lost', 'running')") == [running, lost]
    assert ids(ledger, position, where="status != 'lost'") == [running]
    with pytest.raises(Invalid) as raised:
        ledger.search_runs(where="status = 'missing'", min_position=position)
    assert raised.value.reason == Reason.INVALID_QUERY
    assert "lost" in raised.value.metadata["expected"]
