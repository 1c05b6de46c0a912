"""The chart reads of the ledger (ledger.views.series.charts) on a real ledger of each backend: a run of
200,001 live steps (and 19,999 superseded ones) charted at raw and rollup resolution against values
computed here from the formulas that wrote them; exact metric stats across a resume; every
checkpoint with its flag; spend by hour; the account tree; refused arguments; and a ledger file made
before the chart view existed, which projects it when opened.

One ledger per backend is built once for the module (the long run takes a few seconds to record).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger
from ledger.domain.errors import Invalid, NotFound
from ledger.domain.reasons import Reason
from ledger.views.models import Chart, ChartSeries
from tests.conftest import BACKENDS, POSTGRES_URL, _drop_schema
from tests.ledger.conftest import FakeClock, dump_views

BATCH = 10_000
RESUME = 100_000  # attempt 2 resumes here; attempt 1 went on to 119,999
EVAL_EVERY = 500


def loss_1(step: int) -> float:
    """Attempt 1's loss: a saw with a slow trend, so minima and maxima sit at odd steps."""
    return ((step * 7919) % 10_007) / 10_007 - step / 400_000


def loss_2(step: int) -> float:
    """Attempt 2's loss: lower than attempt 1's, its own saw."""
    return ((step * 104_729) % 9_973) / 9_973 - step / 200_000 - 1.0


def eval_1(step: int) -> float:
    return 3.0 - step / 100_000


def eval_2(step: int) -> float:
    return 2.5 - step / 100_000


def _batches(attempt: int, first: int, last: int) -> Iterator[tuple[list[int], dict[str, Any]]]:
    loss, evaluate = (loss_1, eval_1) if attempt == 1 else (loss_2, eval_2)
    for start in range(first, last + 1, BATCH):
        steps = list(range(start, min(start + BATCH, last + 1)))
        index = [at for at, step in enumerate(steps) if step % EVAL_EVERY == 0]
        yield (
            steps,
            {
                "loss": [loss(step) for step in steps],
                "eval_loss": {"values": [evaluate(steps[at]) for at in index], "index": index},
            },
        )


class Built:
    def __init__(self, ledger: Ledger, run_id: str, position: int) -> None:
        self.ledger, self.run_id, self.position = ledger, run_id, position

    def chart(self, **kwargs: Any) -> Chart:
        return self.ledger.chart(self.run_id, min_position=self.position, **kwargs)


def _url(kind: str, tmp: Path) -> tuple[str, str]:
    if kind == "sqlite":
        return str(tmp / "ledger.db"), ""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    separator = "&" if "?" in POSTGRES_URL else "?"
    return f"{POSTGRES_URL}{separator}schema={schema}", schema


@pytest.fixture(scope="module", params=BACKENDS)
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    url, schema = _url(request.param, tmp_path_factory.mktemp("charts"))
    clock = FakeClock()
    ledger = Ledger.open(url, clock=clock)
    try:
        run_id = ledger.open_run(run_key="long", name="long", spec={}).run_id
        ledger.start_attempt(run_id=run_id, label="a1")
        for steps, metrics in _batches(1, 0, RESUME + 19_999):
            ledger.append_steps(run_id=run_id, attempt=1, steps=steps, metrics=metrics)
        for step in (50_000, RESUME, 110_000):
            ledger.save_checkpoint(run_id=run_id, attempt=1, step=step, backend="local", uri=f"file:///c/{step}")
        ledger.start_attempt(run_id=run_id, label="a2", resume_from_step=RESUME)
        position = 0
        for steps, metrics in _batches(2, RESUME + 1, 200_000):
            position = ledger.append_steps(run_id=run_id, attempt=2, steps=steps, metrics=metrics).position
        position = ledger.save_checkpoint(
            run_id=run_id, attempt=2, step=150_000, backend="local", uri="file:///c/150000"
        ).position
        yield Built(ledger, run_id, position)
    finally:
        ledger.close()
        if schema:
            _drop_schema(schema)


def _series(chart: Chart, metric: str) -> dict[tuple[int, bool], ChartSeries]:
    (found,) = [m for m in chart.metrics if m.name == metric]
    return {(s.attempt, s.superseded): s for s in found.series}


# What each series holds, written out: (attempt, superseded) -> (first step, last step, every).
LOSS_LINES = {
    (1, False): (0, RESUME, 1),
    (1, True): (RESUME + 1, RESUME + 19_999, 1),
    (2, False): (RESUME + 1, 200_000, 1),
}
EVAL_LINES = {
    (1, False): (0, RESUME, EVAL_EVERY),
    (1, True): (RESUME + EVAL_EVERY, RESUME + 19_500, EVAL_EVERY),
    (2, False): (RESUME + EVAL_EVERY, 200_000, EVAL_EVERY),
}


def _truth(metric: str, key: tuple[int, bool], low: int, high: int) -> dict[int, float]:
    """Every (step, value) the series `key` of `metric` holds in [low, high], from the formulas."""
    lines = LOSS_LINES if metric == "loss" else EVAL_LINES
    first, last, every = lines[key]
    attempt = key[0]
    if metric == "loss":
        value = loss_1 if attempt == 1 else loss_2
    else:
        value = eval_1 if attempt == 1 else eval_2
    start = max(first, low)
    start += (-start) % every
    return {step: value(step) for step in range(start, min(last, high) + 1, every)}


def _check_series(chart: Chart, metric: str, low: int, high: int) -> None:
    """Every point is a real (step, value) of its series; each series holds at most `width` points
    in ascending steps; its least and greatest values in the range are among them; a series with
    no step in the range is absent."""
    series = _series(chart, metric)
    lines = LOSS_LINES if metric == "loss" else EVAL_LINES
    expected_keys = {key for key in lines if _truth(metric, key, low, high)}
    assert set(series) == expected_keys
    for key, line in series.items():
        truth = _truth(metric, key, low, high)
        assert 0 < len(line.steps) <= chart.width
        assert list(line.steps) == sorted(set(line.steps))
        for step, value in zip(line.steps, line.values, strict=True):
            assert truth[step] == value, (key, step)
        least = min(truth, key=lambda step: (truth[step], step))
        greatest = max(truth, key=lambda step: (truth[step], -step))
        assert least in line.steps and greatest in line.steps, key


def test_full_range_comes_from_the_rollup_with_superseded_steps_apart(built: Built) -> None:
    chart = built.chart(width=800)
    assert (chart.run_id, chart.from_step, chart.to_step, chart.width) == (built.run_id, 0, 200_000, 800)
    assert chart.resolution == 64  # 200,001 steps over at most 3,200 buckets: 64-step ones give 3,126
    assert [(m.name, m.sparse) for m in chart.metrics] == [("eval_loss", True), ("loss", False)]
    _check_series(chart, "loss", 0, 200_000)
    _check_series(chart, "eval_loss", 0, 200_000)
    # Every superseded point lies above the resume point, every point of attempt 1 at or below it
    # is live.
    series = _series(chart, "loss")
    assert min(series[(1, True)].steps) > RESUME and max(series[(1, False)].steps) <= RESUME


@pytest.mark.parametrize(
    ("low", "high", "width", "resolution"),
    [
        (50_003, 149_998, 400, 64),  # 99,996 steps, 1,563 buckets of 64 <= 1,600
        (0, 2_999, 100, 64),  # 3,000 steps > 400: buckets of 64
        (90_001, 129_998, 16, 4096),  # 64 buckets at most: 4,096-step ones
        (RESUME - 500, RESUME + 1_000, 4000, 1),  # few steps: raw
        (RESUME - 1_100, RESUME + 1_100, 600, 1),  # 2,201 steps <= 2,400: raw, downsampled
        (130_000, 130_000, 16, 1),  # one step
    ],
)
def test_zoomed_ranges_keep_every_extreme(built: Built, low: int, high: int, width: int, resolution: int) -> None:
    chart = built.chart(from_step=low, to_step=high, width=width)
    assert (chart.from_step, chart.to_step, chart.resolution) == (low, high, resolution)
    _check_series(chart, "loss", low, high)
    _check_series(chart, "eval_loss", low, high)


def test_a_raw_range_holds_every_step(built: Built) -> None:
    chart = built.chart(metrics=["loss"], from_step=RESUME - 10, to_step=RESUME + 10, width=16)
    assert chart.resolution == 1 and [m.name for m in chart.metrics] == ["loss"]
    series = _series(chart, "loss")
    assert series[(1, False)].steps == tuple(range(RESUME - 10, RESUME + 1))
    assert series[(1, True)].steps == tuple(range(RESUME + 1, RESUME + 11))
    assert series[(2, False)].steps == tuple(range(RESUME + 1, RESUME + 11))
    assert series[(2, False)].values == tuple(loss_2(step) for step in range(RESUME + 1, RESUME + 11))


def test_metrics_named_and_unknown(built: Built) -> None:
    chart = built.chart(metrics=["eval_loss", "nope"], width=100)
    assert [(m.name, m.sparse, m.series) for m in chart.metrics][1] == ("nope", False, ())
    assert chart.metrics[0].name == "eval_loss" and chart.metrics[0].sparse
    # A range past the last step holds nothing.
    empty = built.chart(from_step=300_000, to_step=400_000)
    assert all(m.series == () for m in empty.metrics)


def test_metric_stats_are_exact_over_the_live_line(built: Built) -> None:
    live_loss = {step: loss_1(step) for step in range(RESUME + 1)} | {
        step: loss_2(step) for step in range(RESUME + 1, 200_001)
    }
    live_eval = {step: eval_1(step) for step in range(0, RESUME + 1, EVAL_EVERY)} | {
        step: eval_2(step) for step in range(RESUME + EVAL_EVERY, 200_001, EVAL_EVERY)
    }
    stats = {s.name: s for s in built.ledger.metric_stats(built.run_id, min_position=built.position)}
    assert set(stats) == {"loss", "eval_loss"}
    for name, live in (("loss", live_loss), ("eval_loss", live_eval)):
        got = stats[name]
        assert (got.count, got.first_step, got.last_step) == (len(live), 0, 200_000), name
        assert (got.last, got.min, got.max) == (live[200_000], min(live.values()), max(live.values())), name
    assert stats["loss"].count == 200_001 and stats["eval_loss"].count == 401


def test_checkpoints_in_step_order_superseded_marked(built: Built) -> None:
    checkpoints = built.ledger.checkpoints(built.run_id, min_position=built.position)
    assert [(c.attempt, c.step, c.superseded, c.handle.uri) for c in checkpoints] == [
        (1, 50_000, False, "file:///c/50000"),
        (1, RESUME, False, "file:///c/100000"),
        (1, 110_000, True, "file:///c/110000"),
        (2, 150_000, False, "file:///c/150000"),
    ]
    assert [c.step for c in built.ledger.checkpoints(built.run_id, limit=2)] == [50_000, RESUME]


@pytest.mark.parametrize(
    ("kwargs", "field", "reason"),
    [
        ({"width": 15}, "width", Reason.OUT_OF_RANGE),
        ({"width": 4001}, "width", Reason.OUT_OF_RANGE),
        ({"width": 800.0}, "width", Reason.INVALID_FIELD),
        ({"from_step": 10, "to_step": 9}, "from_step", Reason.OUT_OF_RANGE),
        ({"from_step": -1}, "from_step", Reason.OUT_OF_RANGE),
        ({"to_step": "9"}, "to_step", Reason.INVALID_FIELD),
        ({"metrics": [""]}, "metric name", Reason.MISSING_FIELD),
        ({"metrics": "loss"}, "metrics", Reason.INVALID_FIELD),
    ],
)
def test_bad_chart_arguments_are_refused(built: Built, kwargs: dict[str, Any], field: str, reason: Reason) -> None:
    with pytest.raises(Invalid) as refused:
        built.ledger.chart(built.run_id, **kwargs)
    assert refused.value.reason == reason and refused.value.metadata.get("field") == field


def test_unknown_runs_and_accounts_are_not_found(built: Built) -> None:
    unknown = str(uuid.uuid4())
    for read in (built.ledger.chart, built.ledger.metric_stats, built.ledger.checkpoints):
        with pytest.raises(NotFound) as missing:
            read(unknown)
        assert missing.value.reason == Reason.RUN_NOT_FOUND
    with pytest.raises(NotFound) as missing:
        built.ledger.spend_hours("no-such-account")
    assert missing.value.reason == Reason.ACCOUNT_NOT_FOUND
    with pytest.raises(Invalid):
        built.ledger.checkpoints(built.run_id, limit=0)


def test_spend_hours_and_the_account_tree(database: str, clock: FakeClock) -> None:
    ledger = Ledger.open(database, clock=clock)
    try:
        ledger.open_account(account="org", cap_usd_micro=100_000_000)
        ledger.open_account(account="team-b", parent="org", cap_usd_micro=20_000_000)
        ledger.open_account(account="team-a", parent="org")
        ledger.open_account(account="lab")
        run_id = ledger.open_run(run_key="spender", name="s", cap_usd_micro=5_000_000, parent_account="team-a").run_id
        spent = [(0, 1_000_000, 700_000), (10, 500_000, 500_000), (70, 2_000_000, 1_250_000)]
        start = clock.now
        position = 0
        for at, (minutes, hold, actual) in enumerate(spent):
            clock.now = start + timedelta(minutes=minutes)
            ledger.reserve(account=run_id, reservation_id=f"r{at}", amount_usd_micro=hold)
            position = ledger.commit(account=run_id, reservation_id=f"r{at}", actual_usd_micro=actual).position
        ledger.reserve(account=run_id, reservation_id="held", amount_usd_micro=300_000)
        hours = ledger.spend_hours(run_id, min_position=position)
        assert [(h.hour, h.committed_usd_micro) for h in hours] == [
            (datetime(2025, 1, 1, 0, tzinfo=UTC), 1_200_000),
            (datetime(2025, 1, 1, 1, tzinfo=UTC), 1_250_000),
        ]
        assert ledger.spend_hours("lab") == ()
        tree = ledger.account_tree(min_position=ledger.head())
        assert [(a.account, a.parent, a.cap_usd_micro) for a in tree] == [
            ("lab", "", None),
            ("org", "", 100_000_000),
            ("team-a", "org", None),
            ("team-b", "org", 20_000_000),
        ]
        team_a = tree[2]
        assert team_a == ledger.account("team-a")
        assert (team_a.committed_usd_micro, team_a.pending_usd_micro) == (2_450_000, 300_000)
        assert [a.account for a in ledger.account_tree(limit=2)] == ["lab", "org"]
    finally:
        ledger.close()


def test_a_ledger_made_before_the_chart_view_projects_it_when_opened(sqlite_database: str) -> None:
    ledger = Ledger.open(sqlite_database)
    try:
        run_id = ledger.open_run(run_key="old", name="old", spec={}).run_id
        ledger.start_attempt(run_id=run_id, label="a1")
        steps = list(range(0, 5_000, 5))
        ledger.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": [1.0 / (1 + s) for s in steps]})
        ledger.wait(ledger.head())
    finally:
        ledger.close()
    # What a file from before the chart view holds: no rollup table and no tracking row for it.
    with sqlite3.connect(sqlite_database) as connection:
        connection.execute("DROP TABLE view_series_rollup")
        connection.execute("DELETE FROM view_tracking WHERE view = 'chart'")
    ledger = Ledger.open(sqlite_database)
    try:
        head = ledger.head()
        (stats,) = ledger.metric_stats(run_id, min_position=head)
        assert (stats.name, stats.count, stats.first_step, stats.last_step) == ("loss", 1_000, 0, 4_995)
        assert (stats.min, stats.max, stats.last) == (1.0 / 4_996, 1.0, 1.0 / 4_996)
        chart = ledger.chart(run_id, width=100, min_position=head)
        assert chart.resolution == 64 and _points(chart) <= 100
    finally:
        ledger.close()


def _points(chart: Chart) -> int:
    return max(len(series.steps) for metric in chart.metrics for series in metric.series)


def test_the_chart_view_rebuilds_alone_to_the_same_rows(ledger: Ledger) -> None:
    run_id = ledger.open_run(run_key="rebuilt", name="r", spec={}).run_id
    ledger.start_attempt(run_id=run_id, label="a1")
    for steps, metrics in _batches(1, 0, 25_000):
        ledger.append_steps(run_id=run_id, attempt=1, steps=steps, metrics=metrics)
    ledger.save_checkpoint(run_id=run_id, attempt=1, step=12_000, backend="local", uri="file:///c")
    ledger.start_attempt(run_id=run_id, label="a2", resume_from_step=12_000)
    for steps, metrics in _batches(2, 12_001, 30_000):
        ledger.append_steps(run_id=run_id, attempt=2, steps=steps, metrics=metrics)
    ledger.wait(ledger.head())
    before = dump_views(ledger)
    # One row per metric, bucket width, bucket and attempt (buckets that two batches share, as
    # 9,984..10,047 of attempt 1, merged into one), and one per 32,768 steps counting the steps.
    lines = {1: range(0, 25_001), 2: range(12_001, 30_001)}
    expected = 0
    for steps in lines.values():
        evals = [step for step in steps if step % EVAL_EVERY == 0]
        expected += sum(
            len({step >> shift for step in metric}) for metric in (steps, evals) for shift in (6, 9, 12, 15)
        )
        expected += len({step >> 15 for step in steps})
    assert len(before["view_series_rollup"]) == expected
    stats = ledger.metric_stats(run_id)
    ledger.projector.rebuild(("chart",))
    assert dump_views(ledger) == before
    assert ledger.metric_stats(run_id) == stats
    (loss,) = [s for s in stats if s.name == "loss"]
    assert (loss.count, loss.first_step, loss.last_step) == (30_001, 0, 30_000)


def test_a_run_with_many_metrics_is_read_a_page_at_a_time(ledger: Ledger) -> None:
    run_id = ledger.open_run(run_key="many-metrics", name="m", spec={}).run_id
    ledger.start_attempt(run_id=run_id, label="a1")
    names = [f"m{index:03d}" for index in range(70)]
    ledger.append_steps(run_id=run_id, attempt=1, steps=[0, 1], metrics={name: [1.0, 2.0] for name in names})
    ledger.wait(ledger.head())
    first = ledger.metric_stats(run_id, limit=50)
    rest = ledger.metric_stats(run_id, after=first[-1].name, limit=50)
    assert [s.name for s in first] == names[:50] and [s.name for s in rest] == names[50:]
    assert {(s.count, s.min, s.max, s.last) for s in (*first, *rest)} == {(2, 1.0, 2.0, 2.0)}
    # A chart that names no metric draws the first 64 by name.
    assert [m.name for m in ledger.chart(run_id).metrics] == names[:64]
