"""A property test of the chart reads against a brute-force model: random histories of small runs
(batches with gaps and strides, a sparse metric on some steps, checkpoints, attempts that resume
from any live checkpoint or start fresh) recorded through a real ledger, then

- metric_stats equals the model's count, first and last step, last value, least and greatest over
  the live line (the steps no later attempt superseded);
- every point of a chart, full range or zoomed, at raw or rollup resolution, is a real (step, value)
  of its attempt, flagged superseded exactly when the model says so, each series ascending and at
  most `width` points; the least and the greatest value of the live line in the range are among
  the chart's live points.

Each example is a new run in one ledger per backend, shared by the module.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ledger import Ledger
from ledger.views.models import Chart
from tests.conftest import BACKENDS, POSTGRES_URL, _drop_schema

VALUES = st.sampled_from([-2.0, -0.5, 0.0, 0.25, 1.0, 3.5, 7.0])


@pytest.fixture(scope="module", params=BACKENDS)
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    schema = ""
    if request.param == "sqlite":
        url = str(Path(tmp_path_factory.mktemp("chart-property")) / "ledger.db")
    else:
        schema = f"t_{uuid.uuid4().hex[:12]}"
        url = f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={schema}"
    ledger = Ledger.open(url)
    try:
        yield ledger
    finally:
        ledger.close()
        if schema:
            _drop_schema(schema)


class Model:
    """What was recorded: (attempt, step) -> {metric: value}, and each attempt's resume point."""

    def __init__(self) -> None:
        self.records: dict[tuple[int, int], dict[str, float]] = {}
        self.resumed: dict[int, int | None] = {}

    def floor(self, attempt: int) -> int | None:
        """The lowest resume point of the attempts after `attempt` (-1: started fresh); None if
        none came after it."""
        later = [-1 if resumed is None else resumed for number, resumed in self.resumed.items() if number > attempt]
        return min(later) if later else None

    def superseded(self, attempt: int, step: int) -> bool:
        floor = self.floor(attempt)
        return floor is not None and step > floor

    def live(self, metric: str) -> dict[int, float]:
        return {
            step: values[metric]
            for (attempt, step), values in self.records.items()
            if metric in values and not self.superseded(attempt, step)
        }


def _record(ledger: Ledger, data: st.DataObject) -> tuple[str, Model, int]:
    model = Model()
    run_id = ledger.open_run(run_key=uuid.uuid4().hex, name="p", spec={}).run_id
    checkpoints: list[int] = []  # live checkpoints' steps
    position = 0
    for attempt in range(1, data.draw(st.integers(1, 4), label="attempts") + 1):
        resume: int | None = None
        if attempt > 1 and checkpoints and data.draw(st.booleans(), label="resume"):
            resume = data.draw(st.sampled_from(checkpoints), label="from")
        ledger.start_attempt(run_id=run_id, label=f"a{attempt}", resume_from_step=resume)
        model.resumed[attempt] = resume
        floor = -1 if resume is None else resume
        checkpoints = [step for step in checkpoints if step <= floor]
        step = (resume + 1 if resume is not None else 0) + data.draw(st.integers(0, 3000), label="start")
        for _ in range(data.draw(st.integers(1, 4), label="batches")):
            count = data.draw(st.integers(1, 60), label="count")
            stride = data.draw(st.integers(1, 300), label="stride")
            steps = list(range(step, step + count * stride, stride))
            loss = data.draw(st.lists(VALUES, min_size=count, max_size=count), label="loss")
            index = sorted(data.draw(st.sets(st.integers(0, count - 1), max_size=count), label="eval index"))
            evals = data.draw(st.lists(VALUES, min_size=len(index), max_size=len(index)), label="eval")
            metrics: dict[str, Any] = {"loss": loss}
            if index:
                metrics["eval_loss"] = {"values": evals, "index": index}
            position = ledger.append_steps(run_id=run_id, attempt=attempt, steps=steps, metrics=metrics).position
            for at, one in enumerate(steps):
                model.records[(attempt, one)] = {"loss": loss[at]}
            for at, value in zip(index, evals, strict=True):
                model.records[(attempt, steps[at])]["eval_loss"] = value
            if data.draw(st.booleans(), label="checkpoint"):
                saved = data.draw(st.sampled_from(steps), label="checkpoint step")
                if saved not in checkpoints:
                    ledger.save_checkpoint(run_id=run_id, attempt=attempt, step=saved, backend="local", uri="u")
                    checkpoints.append(saved)
            step = steps[-1] + 1 + data.draw(st.integers(0, 5000), label="gap")
    return run_id, model, position


def _check_chart(chart: Chart, model: Model, low: int, high: int) -> None:
    for metric in chart.metrics:
        live_points: dict[int, float] = {}
        for series in metric.series:
            assert 0 < len(series.steps) <= chart.width
            assert list(series.steps) == sorted(set(series.steps))
            for step, value in zip(series.steps, series.values, strict=True):
                assert low <= step <= high
                assert model.records[(series.attempt, step)][metric.name] == value
                assert model.superseded(series.attempt, step) == series.superseded
                if not series.superseded:
                    live_points[step] = value
        live = {step: value for step, value in model.live(metric.name).items() if low <= step <= high}
        if live:
            assert min(live.values()) == min(live_points.values())
            assert max(live.values()) == max(live_points.values())
        else:
            assert not live_points


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_metric_stats_and_charts_match_the_model(shared: Ledger, data: st.DataObject) -> None:
    run_id, model, position = _record(shared, data)
    stats = {s.name: s for s in shared.metric_stats(run_id, min_position=position)}
    expected = {}
    for metric in ("loss", "eval_loss"):
        live = model.live(metric)
        if live:
            last = max(live)
            expected[metric] = (len(live), min(live), last, live[last], min(live.values()), max(live.values()))
    assert {name: (s.count, s.first_step, s.last_step, s.last, s.min, s.max) for name, s in stats.items()} == expected

    width = data.draw(st.integers(16, 40), label="width")
    chart = shared.chart(run_id, width=width, min_position=position)
    event(f"full range resolution {chart.resolution}")
    steps = sorted(step for _, step in model.records)
    assert (chart.from_step, chart.to_step) == (steps[0], steps[-1])
    _check_chart(chart, model, steps[0], steps[-1])

    low = data.draw(st.integers(0, steps[-1]), label="low")
    high = data.draw(st.integers(low, steps[-1] + 100), label="high")
    zoomed = shared.chart(run_id, metrics=["loss", "eval_loss"], from_step=low, to_step=high, width=width)
    event(f"zoomed resolution {zoomed.resolution}")
    _check_chart(zoomed, model, low, high)
