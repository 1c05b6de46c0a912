"""What several runs differ in (services.render.diff): the rows `runs diff` prints and the compare
page shows, checked against values written out by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ledger.views.models import Checkpoint, Objective, Resume, RunInfo, RunState, SpendTotals, StateHandle
from services.render.diff import diff_text, run_diff, run_labels

OPENED = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def _state(
    run_id: str,
    name: str,
    spec: dict[str, Any],
    summary: dict[str, Any] | None = None,
    committed_usd_micro: int = 0,
    presumed_usd_micro: int = 0,
    best: tuple[int, dict[str, float]] | None = None,
    objective: str = "eval_loss",
) -> RunState:
    checkpoint = None
    if best is not None:
        checkpoint = Checkpoint(
            attempt=1,
            step=best[0],
            handle=StateHandle(backend="file", uri=f"file:///ckpt/{best[0]}", fidelity="full"),
            sampler_uri="",
            final=False,
            saved_at=OPENED,
            expires_at=None,
            digest="sha256:00",
            scores=best[1],
        )
    return RunState(
        run=RunInfo(
            run_id=run_id,
            run_key=name,
            name=name,
            status="running",
            spec=spec,
            summary=summary or {},
            error="",
            opened_at=OPENED,
            finished_at=None,
            objective=Objective(metric=objective, mode="min") if objective else None,
        ),
        attempts=(),
        current_attempt=1,
        checkpoint=checkpoint,
        expired_checkpoints=(),
        expired_checkpoint_count=0,
        resume=Resume(available=False, from_step=0, handle=None, sampler_uri="", spend_committed_usd_micro=0),
        last_step=None,
        spend=SpendTotals(
            cap_usd_micro=None,
            committed_usd_micro=committed_usd_micro,
            pending_usd_micro=0,
            remaining_usd_micro=None,
            overrun_usd_micro=0,
            presumed_usd_micro=presumed_usd_micro,
        ),
        position=1,
        best_checkpoint=checkpoint,
    )


A = "aaaaaaaa-0000-4000-8000-000000000001"
B = "bbbbbbbb-0000-4000-8000-000000000002"
C = "cccccccc-0000-4000-8000-000000000003"


def test_rows_that_differ_are_shown_and_identical_ones_folded() -> None:
    first = _state(
        A,
        "sweep",
        {"lr": 0.001, "optimizer": {"name": "adamw", "beta2": 0.95}, "seed": 1},
        {"eval_loss": 0.52},
        committed_usd_micro=12_500_000,
        best=(400, {"eval_loss": 0.51}),
    )
    second = _state(
        B,
        "sweep",
        {"lr": 0.0003, "optimizer": {"name": "adamw", "beta2": 0.999}, "seed": 1, "warmup": 100},
        {"eval_loss": 0.48},
        committed_usd_micro=9_000_000,
        presumed_usd_micro=250_000,
        best=(600, {"eval_loss": 0.47}),
    )
    diff = run_diff([first, second])
    assert diff.labels == ("sweep aaaaaaaa", "sweep bbbbbbbb")
    assert [(row.key, row.values) for row in diff.shown()] == [
        ("spec.lr", ("0.001", "0.0003")),
        ("spec.optimizer.beta2", ("0.95", "0.999")),
        ("spec.warmup", ("-", "100")),
        ("summary.eval_loss", ("0.52", "0.48")),
        ("spend", ("$12.50", "$9.25")),
        ("best checkpoint", ("step 400 (eval_loss=0.51)", "step 600 (eval_loss=0.47)")),
    ]
    assert diff.identical == 2  # spec.optimizer.name and spec.seed
    everything = [(row.key, row.differs) for row in diff.shown(everything=True)]
    assert ("spec.optimizer.name", False) in everything and ("spec.seed", False) in everything
    assert len(everything) == 8


def test_absent_differs_from_any_value_and_a_string_from_a_number() -> None:
    diff = run_diff([_state(A, "one", {"seed": 1, "note": None}), _state(B, "two", {"seed": "1"})])
    rows = {row.key: (row.values, row.differs) for row in diff.rows}
    assert rows["spec.seed"] == (("1", "1"), True)
    assert rows["spec.note"] == (("null", "-"), True)
    assert diff.labels == ("one", "two")


def test_spend_and_best_checkpoint_are_shown_even_when_the_same() -> None:
    diff = run_diff([_state(A, "x", {"lr": 1}), _state(B, "y", {"lr": 1}, objective="")])
    assert [(row.key, row.values, row.differs) for row in diff.shown()] == [
        ("spend", ("$0.00", "$0.00"), False),
        ("best checkpoint", ("-", "-"), False),
    ]
    assert diff.identical == 1


def test_best_checkpoint_without_its_objectives_score_names_the_step() -> None:
    diff = run_diff([_state(A, "x", {}, best=(10, {"accuracy": 0.9}))])
    assert diff.rows[-1].values == ("step 10",)


def test_labels_tell_runs_of_the_same_name_apart_and_name_a_nameless_run_by_its_id() -> None:
    assert run_labels([(A, "base"), (B, "base"), (C, "")]) == ["base aaaaaaaa", "base bbbbbbbb", "cccccccc"]
    assert run_labels([(A, "base"), (B, "tuned")]) == ["base", "tuned"]


def test_the_terminal_text_folds_identical_keys_and_all_shows_them() -> None:
    diff = run_diff([_state(A, "base", {"lr": 0.1, "seed": 3}), _state(B, "tuned", {"lr": 0.2, "seed": 3})])
    text = diff_text(diff)
    lines = text.splitlines()
    assert lines[0] == f"base: {A}"
    assert lines[1] == f"tuned: {B}"
    assert lines[3].split() == ["KEY", "base", "tuned"]
    assert set(lines[4]) == {"-", " "}  # the line under the headers
    assert lines[5].split() == ["spec.lr", "0.1", "0.2"]
    assert "seed" not in text
    assert lines[-1] == "(1 identical key folded away: --all shows them)"
    whole = diff_text(diff, everything=True)
    assert ["spec.seed", "3", "3", "="] in [line.split() for line in whole.splitlines()]
    assert "folded away" not in whole
