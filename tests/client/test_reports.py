"""The reports on whether training worked: the delta computed on the client (against values
worked out by hand), and holdout, delta and notes recorded over the wire: their shape refused with
a reason, recorded after the run finished with its status kept, and a retry a duplicate."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from clients import AsyncLedgerClient, InvalidArgument, LedgerClient, RunRecorder, run_key
from clients.reports import delta_report, holdout_report
from tests.client.conftest import new_run

BEFORE = [
    {"task": "a", "pass": 1, "length": 10, "safe": 1, "reward": 0.1},
    {"task": "a", "pass": 0, "length": 12, "safe": 1, "reward": 0.2},
    {"task": "b", "pass": 1, "length": 14, "safe": True, "reward": 0.1},
    {"task": "b", "pass": 0, "safe": 1, "reward": 0.2},
]
AFTER = [
    {"task": "a", "pass": 1, "length": 8, "safe": 0, "reward": 0.9},
    {"task": "a", "pass": 1, "length": 10, "safe": 0, "reward": 1.0},
    {"task": "b", "pass": 1, "length": 12, "safe": False, "reward": 0.9},
    {"task": "b", "pass": 0, "safe": 0, "reward": 1.0},
]


def _delta() -> dict[str, Any]:
    return delta_report(BEFORE, AFTER, target="pass", must_not_regress=["length", "safe"], by="task", proxy="reward")


def test_the_target_change_is_a_difference_of_proportions_with_a_wald_interval() -> None:
    target = _delta()["target"]
    # 0.5 -> 0.75 over 4 and 4: se = sqrt(.25/4 + .1875/4) = 0.330719; 1.96 se = 0.648209.
    assert (target["key"], target["n_before"], target["n_after"]) == ("pass", 4, 4)
    assert (target["before"], target["after"], target["diff"]) == (0.5, 0.75, 0.25)
    assert target["ci"] == pytest.approx([0.25 - 0.648209, 0.25 + 0.648209], abs=1e-4)


def test_markers_regress_only_when_their_whole_interval_is_below_zero() -> None:
    length, safe = _delta()["markers"]
    # length 12 -> 10 over 3 and 3 (a row lacks it), s² = 4 each: 1.96 sqrt(8/3) = 3.200667.
    assert (length["n_before"], length["n_after"], length["diff"]) == (3, 3, -2.0)
    assert length["ci"] == pytest.approx([-2 - 3.200667, -2 + 3.200667], abs=1e-4)
    assert length["regressed"] is False
    # safe 1 -> 0 everywhere: no spread, the interval is the point, wholly below zero.
    assert (safe["diff"], safe["ci"], safe["regressed"]) == (-1.0, [-1.0, -1.0], True)


def test_groups_and_the_over_optimization_flag() -> None:
    report = _delta()
    assert report["by"] == "task"
    assert report["groups"] == [
        {"group": "a", "n_before": 2, "n_after": 2, "before": 0.5, "after": 1.0, "diff": 0.5},
        {"group": "b", "n_before": 2, "n_after": 2, "before": 0.5, "after": 0.5, "diff": 0.0},
    ]
    # reward 0.15 -> 0.95, s² = 0.01/3 each: 1.96 sqrt(2 (0.01/3) / 4) = 0.080017, wholly above 0,
    # while the target's interval holds 0: the proxy moved and the target did not.
    assert report["proxy"]["ci"] == pytest.approx([0.8 - 0.080017, 0.8 + 0.080017], abs=1e-4)
    assert report["over_optimized"] is True


def test_bad_holdouts_and_rows_are_refused_before_sending() -> None:
    assert holdout_report(0.25, 0.5, "pass_rate") == {"metric": "pass_rate", "before": 0.25, "after": 0.5}
    for before, after, metric in [(0.2, 1.5, "pass_rate"), (0.1, float("nan"), "loss"), (0.1, 0.2, "accuracy")]:
        with pytest.raises(ValueError):
            holdout_report(before, after, metric)
    with pytest.raises(ValueError, match="at least one value"):
        delta_report(BEFORE, [], target="pass")


def test_reports_recorded_after_finish_keep_the_status_and_a_retry_is_a_duplicate(client: LedgerClient) -> None:
    recorder = RunRecorder.open(client, run_key=run_key({"t": "reports"}), name="reports")
    recorder.finish("done")
    first = recorder.holdout(0.31, 0.47, "pass_rate")
    assert recorder.holdout(0.31, 0.47, "pass_rate").position == first.position
    recorder.delta(BEFORE, AFTER, target="pass", must_not_regress=["safe"], by="task", proxy="reward")
    recorder.note(dataset="gsm8k", seed=7)
    corrected = recorder.holdout(0.31, 0.52, "pass_rate")  # a correction: a new write
    assert corrected.position > first.position
    last = recorder.note(judge="v2")
    state = client.get_run_state(run_id=recorder.run_id, min_position=last.position)
    assert state.run.status == "done"
    assert state.reports["holdout"] == {"metric": "pass_rate", "before": 0.31, "after": 0.52}
    assert state.reports["notes"] == {"dataset": "gsm8k", "seed": 7, "judge": "v2"}
    delta = state.reports["delta"]
    assert delta["target"]["n_before"] == 4 and delta["markers"][0]["regressed"] is True
    assert [g["group"] for g in delta["groups"]] == ["a", "b"] and delta["over_optimized"] is True


@pytest.mark.parametrize(
    ("kind", "report", "field"),
    [
        ("verdict", {}, "kind"),
        ("holdout", {"metric": "pass_rate", "before": 0.2, "after": 1.2}, "after"),
        ("holdout", {"metric": "loss", "before": -1, "after": 0.5}, "before"),
        ("holdout", {"metric": "pass_rate", "before": 0.2}, "report.after"),
        ("holdout", {"metric": "bleu", "before": 0.2, "after": 0.3}, "metric"),
        ("holdout", {"metric": "loss", "before": 1, "after": 2, "extra": 1}, "report"),
        ("delta", {"method": "m", "confidence": 0.95}, "target"),
    ],
)
def test_malformed_reports_are_refused_with_the_field(
    client: LedgerClient, kind: str, report: dict[str, Any], field: str
) -> None:
    run_id, _ = new_run(client)
    with pytest.raises(InvalidArgument) as caught:
        client.record_report(run_id=run_id, kind=kind, report=report)
    assert caught.value.reason in {"INVALID_FIELD", "MISSING_FIELD"}
    assert caught.value.metadata["field"] == field


def test_delta_bounds_are_refused(client: LedgerClient) -> None:
    run_id, _ = new_run(client)
    report = _delta()
    too_many = {**report, "markers": [report["markers"][0]] * 33}
    long_key = {**report, "target": {**report["target"], "key": "k" * 129}}
    no_n = {**report, "target": {**report["target"], "n_after": 0}}
    inverted = {**report, "target": {**report["target"], "ci": [1.0, -1.0]}}
    for bad, field, reason in [
        (too_many, "markers", "INVALID_FIELD"),
        (long_key, "target.key", "STRING_TOO_LONG"),
        (no_n, "target.n_after", "INVALID_FIELD"),
        (inverted, "target.ci", "INVALID_FIELD"),
    ]:
        with pytest.raises(InvalidArgument) as caught:
            client.record_report(run_id=run_id, kind="delta", report=bad)
        assert (caught.value.reason, caught.value.metadata["field"]) == (reason, field)
    half = {f"a{i}": "x" * 4_000 for i in range(10)}
    kept = client.record_report(run_id=run_id, kind="notes", report=half)
    with pytest.raises(InvalidArgument) as caught:  # each fits; merged, the notes would not
        client.record_report(run_id=run_id, kind="notes", report={f"b{i}": "x" * 4_000 for i in range(10)})
    assert (caught.value.reason, caught.value.metadata["field"]) == ("DOCUMENT_TOO_LARGE", "notes")
    assert client.get_run_state(run_id=run_id, min_position=kept.position).reports == {"notes": half}


def test_the_async_client_records_a_report(server) -> None:
    async def scenario() -> dict[str, Any]:
        async with AsyncLedgerClient(server.address, principal="tests") as client:
            opened = await client.open_run(run_key="async-report", name="a")
            run_id = opened.state.run.run_id
            receipt = await client.record_report(
                run_id=run_id, kind="holdout", report=holdout_report(2.5, 1.75, "loss")
            )
            state = await client.get_run_state(run_id=run_id, min_position=receipt.position)
            return state.reports

    assert asyncio.run(scenario()) == {"holdout": {"metric": "loss", "before": 2.5, "after": 1.75}}
