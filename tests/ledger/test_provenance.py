"""Scored checkpoints and the best checkpoint, a run's plan and progress, retraction, datasets,
checkpoint deletion and registration from a source checkpoint: each command's happy path,
duplicate, conflict and refusals (a refusal records nothing: the log's head does not move), and
what the views show. On each backend."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from ledger import Conflict, Invalid, Ledger, LedgerError, NotFound, Refused
from tests.ledger.conftest import DIGEST_A, DIGEST_B, FakeClock

DATA_DIGEST = "sha256:" + "d" * 64
CKPT_DIGEST = "sha256:" + "e" * 64


def refused(
    ledger: Ledger, kind: type[LedgerError], reason: str, call: Callable[[], Any], **metadata: str
) -> LedgerError:
    """Asserts that `call` raises `kind` with `reason` (and metadata) and records nothing."""
    head = ledger.head()
    with pytest.raises(kind) as caught:
        call()
    assert caught.value.reason == reason, caught.value
    for key, value in metadata.items():
        assert caught.value.metadata.get(key) == value
    assert ledger.head() == head
    return caught.value


def opened(ledger: Ledger, key: str = "run", **fields: Any) -> str:
    run_id = ledger.open_run(run_key=key, **fields).run_id
    ledger.start_attempt(run_id=run_id)
    return run_id


def save(ledger: Ledger, run_id: str, step: int, attempt: int = 1, **fields: Any) -> int:
    return ledger.save_checkpoint(
        run_id=run_id, attempt=attempt, step=step, backend="local", uri=f"file:///c/{attempt}/{step}", **fields
    ).position


# The plan and the objective.


def test_a_run_is_opened_with_its_plan_and_objective(ledger: Ledger) -> None:
    receipt = ledger.open_run(run_key="run", max_steps=1000, objective=("eval_loss", "min"))
    state = ledger.run_state(receipt.run_id, min_position=receipt.position)
    assert state.run.objective is not None
    assert (state.run.objective.metric, state.run.objective.mode) == ("eval_loss", "min")
    assert state.progress.max_steps == 1000
    assert state.progress.step is None
    assert state.progress.fraction is None
    assert state.run.retraction is None
    assert state.best_checkpoint is None
    assert state.datasets == ()


def test_reopening_with_another_objective_is_refused_and_an_absent_one_changes_nothing(ledger: Ledger) -> None:
    run_id = ledger.open_run(run_key="run", objective=("eval_loss", "min")).run_id
    refused(
        ledger,
        Refused,
        "OBJECTIVE_DIFFERS",
        lambda: ledger.open_run(run_key="run", objective=("eval_loss", "max")),
        metric="eval_loss",
        mode="min",
    )
    refused(ledger, Refused, "OBJECTIVE_DIFFERS", lambda: ledger.open_run(run_key="run", objective=("acc", "min")))
    again = ledger.open_run(run_key="run")
    assert again.duplicate
    same = ledger.open_run(run_key="run", objective=("eval_loss", "min"))
    assert same.duplicate
    state = ledger.run_state(run_id, min_position=same.position)
    assert state.run.objective is not None and state.run.objective.mode == "min"
    # A run opened without one never takes one later.
    ledger.open_run(run_key="plain")
    refused(ledger, Refused, "OBJECTIVE_DIFFERS", lambda: ledger.open_run(run_key="plain", objective=("l", "min")))


@pytest.mark.parametrize(
    ("objective", "reason"),
    [(("loss", "lowest"), "INVALID_FIELD"), (("", "min"), "MISSING_FIELD"), ("loss", "INVALID_FIELD")],
)
def test_a_malformed_objective_is_refused(ledger: Ledger, objective: Any, reason: str) -> None:
    refused(ledger, Invalid, reason, lambda: ledger.open_run(run_key="run", objective=objective))


def test_another_max_steps_on_reopen_changes_the_plan_but_never_below_the_last_step(ledger: Ledger) -> None:
    run_id = opened(ledger, max_steps=100)
    ledger.append_steps(run_id=run_id, attempt=1, steps=[1, 2, 50])
    head = ledger.head()
    receipt = ledger.open_run(run_key="run", max_steps=200)
    assert receipt.position > head
    assert ledger.run_state(run_id, min_position=receipt.position).progress.max_steps == 200
    assert ledger.open_run(run_key="run", max_steps=200).position == receipt.position
    refused(
        ledger,
        Invalid,
        "MAX_STEPS_BELOW_LAST_STEP",
        lambda: ledger.open_run(run_key="run", max_steps=49),
        max_steps="49",
        last_step="50",
    )
    refused(ledger, Invalid, "OUT_OF_RANGE", lambda: ledger.open_run(run_key="run", max_steps=0))
    state = ledger.run_state(run_id, min_position=receipt.position)
    assert state.progress.max_steps == 200
    assert state.progress.step == 50
    assert state.progress.fraction == 0.25


def test_start_attempt_takes_max_steps_never_below_its_resume_point(ledger: Ledger) -> None:
    run_id = opened(ledger, max_steps=100)
    ledger.append_steps(run_id=run_id, attempt=1, steps=[1, 2, 3, 4])
    save(ledger, run_id, 4)
    refused(
        ledger,
        Invalid,
        "MAX_STEPS_BELOW_LAST_STEP",
        lambda: ledger.start_attempt(run_id=run_id, resume_from_step=4, max_steps=3),
    )
    receipt = ledger.start_attempt(run_id=run_id, resume_from_step=4, max_steps=40)
    assert receipt.attempt == 2
    assert ledger.run_state(run_id, min_position=receipt.position).progress.max_steps == 40
    unchanged = ledger.start_attempt(run_id=run_id, resume_from_step=4)
    assert ledger.run_state(run_id, min_position=unchanged.position).progress.max_steps == 40


# Progress and the ETA, on the ledger's clock.


def test_progress_rate_and_eta_follow_the_recent_batches_of_the_current_attempt(
    ledger: Ledger, clock: FakeClock
) -> None:
    run_id = opened(ledger, max_steps=1000)
    ledger.append_steps(run_id=run_id, attempt=1, steps=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    clock.advance(seconds=10)
    receipt = ledger.append_steps(run_id=run_id, attempt=1, steps=list(range(11, 111)))
    progress = ledger.run_state(run_id, min_position=receipt.position).progress
    # From (t0, step 10) to (t0 + 10 s, step 110): 10 steps a second; 890 steps left: 89 s.
    assert progress.steps_per_second == 10.0
    assert progress.step == 110
    assert progress.fraction == 0.11
    assert progress.eta == clock.now + timedelta(seconds=89)
    # Two minutes later, at 1 step a second: the older anchor moves on, so the rate follows.
    for last in range(110, 230, 10):
        clock.advance(seconds=10)
        receipt = ledger.append_steps(run_id=run_id, attempt=1, steps=list(range(last + 1, last + 11)))
    progress = ledger.run_state(run_id, min_position=receipt.position).progress
    assert progress.step == 230
    assert progress.steps_per_second is not None and progress.steps_per_second < 1.5
    # The summary in a list says the same.
    [summary] = ledger.list_runs(min_position=receipt.position).runs
    assert summary.progress == progress
    finished = ledger.finish_run(run_id=run_id, attempt=1, status="done")
    assert ledger.run_state(run_id, min_position=finished.position).progress.eta is None


def test_a_new_attempt_measures_its_own_rate(ledger: Ledger, clock: FakeClock) -> None:
    run_id = opened(ledger, max_steps=100)
    ledger.append_steps(run_id=run_id, attempt=1, steps=[1])
    clock.advance(seconds=1)
    ledger.append_steps(run_id=run_id, attempt=1, steps=[2, 3])
    save(ledger, run_id, 3)
    clock.advance(seconds=100)
    started = ledger.start_attempt(run_id=run_id, resume_from_step=3)
    progress = ledger.run_state(run_id, min_position=started.position).progress
    assert progress.steps_per_second is None
    assert progress.eta is None
    assert progress.step == 3
    ledger.append_steps(run_id=run_id, attempt=2, steps=[4])
    clock.advance(seconds=4)
    receipt = ledger.append_steps(run_id=run_id, attempt=2, steps=[5, 6])
    progress = ledger.run_state(run_id, min_position=receipt.position).progress
    assert progress.steps_per_second == 0.5
    assert progress.eta == clock.now + timedelta(seconds=188)


# Scores and the best checkpoint.


def test_scores_are_part_of_a_checkpoints_identity(ledger: Ledger) -> None:
    run_id = opened(ledger)
    first = ledger.save_checkpoint(
        run_id=run_id, attempt=1, step=10, backend="local", uri="file:///c/10", scores={"eval_loss": 0.5, "acc": 1}
    )
    again = ledger.save_checkpoint(
        run_id=run_id, attempt=1, step=10, backend="local", uri="file:///c/10", scores={"acc": 1.0, "eval_loss": 0.5}
    )
    assert again.duplicate and again.position == first.position
    refused(
        ledger,
        Conflict,
        "EXISTS_WITH_DIFFERENT_PAYLOAD",
        lambda: ledger.save_checkpoint(
            run_id=run_id, attempt=1, step=10, backend="local", uri="file:///c/10", scores={"eval_loss": 0.4}
        ),
    )
    refused(
        ledger,
        Conflict,
        "EXISTS_WITH_DIFFERENT_PAYLOAD",
        lambda: ledger.save_checkpoint(run_id=run_id, attempt=1, step=10, backend="local", uri="file:///c/10"),
    )
    unscored = ledger.save_checkpoint(run_id=run_id, attempt=1, step=20, backend="local", uri="file:///c/20")
    assert ledger.save_checkpoint(
        run_id=run_id, attempt=1, step=20, backend="local", uri="file:///c/20", scores={}
    ).duplicate
    [ten, twenty] = ledger.checkpoints(run_id, min_position=unscored.position)
    assert ten.scores == {"eval_loss": 0.5, "acc": 1.0}
    assert twenty.scores == {}


@pytest.mark.parametrize(
    ("scores", "kind", "reason"),
    [
        ({"eval_loss": float("nan")}, Invalid, "NON_FINITE_METRIC"),
        ({"eval_loss": float("inf")}, Invalid, "NON_FINITE_METRIC"),
        ({"eval_loss": "low"}, Invalid, "INVALID_FIELD"),
        ({"eval_loss": True}, Invalid, "INVALID_FIELD"),
        ({"": 1.0}, Invalid, "MISSING_FIELD"),
        ({"bad\nname": 1.0}, Invalid, "INVALID_TEXT"),
        ({f"s{i}": 1.0 for i in range(65)}, Invalid, "MAP_TOO_LARGE"),
    ],
)
def test_bad_scores_are_refused(ledger: Ledger, scores: dict[str, Any], kind: type[LedgerError], reason: str) -> None:
    run_id = opened(ledger)
    refused(
        ledger,
        kind,
        reason,
        lambda: ledger.save_checkpoint(run_id=run_id, attempt=1, step=1, backend="local", uri="u", scores=scores),
    )


def test_sixty_four_scores_are_taken(ledger: Ledger) -> None:
    run_id = opened(ledger)
    receipt = ledger.save_checkpoint(
        run_id=run_id, attempt=1, step=1, backend="local", uri="u", scores={f"s{i}": float(i) for i in range(64)}
    )
    assert len(ledger.checkpoints(run_id, min_position=receipt.position)[0].scores) == 64


def test_the_best_checkpoint_across_attempts(ledger: Ledger) -> None:
    run_id = opened(ledger, objective=("eval_loss", "min"))
    ledger.append_steps(run_id=run_id, attempt=1, steps=[10, 20, 30])
    save(ledger, run_id, 10, scores={"eval_loss": 0.9, "acc": 0.5})
    save(ledger, run_id, 20, scores={"eval_loss": 0.4, "acc": 0.7})
    save(ledger, run_id, 30, scores={"eval_loss": 0.6, "acc": 0.9})
    # Attempt 2 resumes from step 10: 20 and 30 are superseded.
    ledger.start_attempt(run_id=run_id, resume_from_step=10)
    ledger.append_steps(run_id=run_id, attempt=2, steps=[20, 30])
    save(ledger, run_id, 20, attempt=2, scores={"eval_loss": 0.5, "acc": 0.6})
    last = save(ledger, run_id, 30, attempt=2, scores={"eval_loss": 0.7, "acc": 0.8})

    best = ledger.best_checkpoint(run_id, min_position=last)
    assert (best.checkpoint.attempt, best.checkpoint.step, best.score) == (2, 20, 0.5)
    assert (best.metric, best.mode) == ("eval_loss", "min")
    superseded = ledger.best_checkpoint(run_id, include_superseded=True)
    assert (superseded.checkpoint.attempt, superseded.checkpoint.step, superseded.score) == (1, 20, 0.4)
    assert superseded.checkpoint.superseded
    by_acc = ledger.best_checkpoint(run_id, metric="acc", mode="max")
    assert (by_acc.checkpoint.attempt, by_acc.checkpoint.step, by_acc.score) == (2, 30, 0.8)
    by_acc_all = ledger.best_checkpoint(run_id, metric="acc", mode="max", include_superseded=True)
    assert (by_acc_all.checkpoint.attempt, by_acc_all.checkpoint.step) == (1, 30)
    state = ledger.run_state(run_id)
    assert state.best_checkpoint is not None
    assert (state.best_checkpoint.attempt, state.best_checkpoint.step) == (2, 20)
    assert state.best_checkpoint.scores == {"eval_loss": 0.5, "acc": 0.6}
    with pytest.raises(NotFound) as caught:
        ledger.best_checkpoint(run_id, metric="bleu", mode="max")
    assert caught.value.reason == "NO_SCORED_CHECKPOINT"
    with pytest.raises(Invalid):
        ledger.best_checkpoint(run_id, metric="acc", mode="up")


def test_no_objective_and_none_given_is_no_scored_checkpoint(ledger: Ledger) -> None:
    run_id = opened(ledger)
    receipt = ledger.save_checkpoint(run_id=run_id, attempt=1, step=1, backend="l", uri="u", scores={"loss": 1.0})
    with pytest.raises(NotFound) as caught:
        ledger.best_checkpoint(run_id, min_position=receipt.position)
    assert caught.value.reason == "NO_SCORED_CHECKPOINT"
    assert ledger.run_state(run_id).best_checkpoint is None
    with pytest.raises(NotFound) as unknown:
        ledger.best_checkpoint("00000000-0000-5000-8000-000000000000")
    assert unknown.value.reason == "RUN_NOT_FOUND"


def test_expired_and_deleted_checkpoints_are_never_best(ledger: Ledger, clock: FakeClock) -> None:
    run_id = opened(ledger, objective=("eval_loss", "min"))
    save(ledger, run_id, 1, scores={"eval_loss": 0.1}, expires_at=clock.now + timedelta(hours=1))
    save(ledger, run_id, 2, scores={"eval_loss": 0.2})
    save(ledger, run_id, 3, scores={"eval_loss": 0.3})
    last = save(ledger, run_id, 4, scores={"eval_loss": 0.4})
    assert ledger.best_checkpoint(run_id, min_position=last).checkpoint.step == 1
    clock.advance(hours=2)
    assert ledger.best_checkpoint(run_id).checkpoint.step == 2
    # Step 2 is best now: protected. Step 3 is not.
    refused(
        ledger,
        Refused,
        "CHECKPOINT_PROTECTED",
        lambda: ledger.delete_checkpoint(run_id=run_id, attempt=1, step=2),
        protected_by="best",
    )
    deleted = ledger.delete_checkpoint(run_id=run_id, attempt=1, step=3, reason="space")
    assert not deleted.duplicate
    [_, _, three, _] = ledger.checkpoints(run_id, min_position=deleted.position)
    assert three.deleted_at == clock.now
    [one, *_] = ledger.checkpoints(run_id)
    assert one.expired


# Deleted checkpoints and resume.


def test_a_deleted_checkpoint_is_never_the_resume_point(ledger: Ledger, clock: FakeClock) -> None:
    run_id = opened(ledger)
    ledger.append_steps(run_id=run_id, attempt=1, steps=[1, 2, 3])
    save(ledger, run_id, 1)
    save(ledger, run_id, 2)
    last = save(ledger, run_id, 3)
    state = ledger.run_state(run_id, min_position=last)
    assert state.checkpoint is not None and state.checkpoint.step == 3
    # The resume point is protected.
    refused(
        ledger,
        Refused,
        "CHECKPOINT_PROTECTED",
        lambda: ledger.delete_checkpoint(run_id=run_id, attempt=1, step=3),
        protected_by="resume",
    )
    deleted = ledger.delete_checkpoint(run_id=run_id, attempt=0, step=2, reason="pruned")
    again = ledger.delete_checkpoint(run_id=run_id, attempt=1, step=2, reason="pruned")
    assert again.duplicate and again.position == deleted.position
    refused(
        ledger,
        Refused,
        "CHECKPOINT_DELETED",
        lambda: ledger.start_attempt(run_id=run_id, resume_from_step=2),
    )
    refused(
        ledger,
        NotFound,
        "CHECKPOINT_NOT_FOUND",
        lambda: ledger.delete_checkpoint(run_id=run_id, attempt=1, step=7),
    )
    # Once step 3 expires, step 1 is the resume point: never step 2.
    ledger.save_checkpoint(
        run_id=run_id,
        attempt=1,
        step=4,
        backend="tinker",
        uri="tinker://4",
        expires_at=clock.now + timedelta(minutes=5),
    )
    receipt = ledger.delete_checkpoint(run_id=run_id, attempt=1, step=3)
    clock.advance(minutes=10)
    state = ledger.run_state(run_id, min_position=receipt.position)
    assert state.checkpoint is not None and state.checkpoint.step == 1
    assert state.resume.from_step == 1
    started = ledger.start_attempt(run_id=run_id, resume_from_step=1)
    assert started.attempt == 2


# Datasets.


def dataset(**fields: Any) -> dict[str, Any]:
    return {
        "role": "train",
        "digest": DATA_DIGEST,
        "format": "chat",
        "rows": 1200,
        "tokens": 480_000,
        "source_uri": "hf://org/data@rev",
        "report": {"dropped": {"too_long": 4}, "loss_mask_coverage": 0.61, "gate": {"passed": True}},
        **fields,
    }


def test_datasets_are_recorded_once_by_role_and_digest(ledger: Ledger, clock: FakeClock) -> None:
    run_id = ledger.open_run(run_key="run").run_id
    # Before the first attempt.
    first = ledger.record_dataset(run_id=run_id, **dataset())
    again = ledger.record_dataset(run_id=run_id, **dataset())
    assert again.duplicate and again.position == first.position
    refused(
        ledger,
        Conflict,
        "EXISTS_WITH_DIFFERENT_PAYLOAD",
        lambda: ledger.record_dataset(run_id=run_id, **dataset(rows=1)),
    )
    ledger.start_attempt(run_id=run_id)
    ledger.finish_run(run_id=run_id, attempt=1, status="done")
    # After the finish, and the same digest in another role.
    clock.advance(seconds=5)
    last = ledger.record_dataset(
        run_id=run_id, **dataset(role="eval", rows=50, tokens=None, source_uri="", report=None)
    )
    datasets = ledger.run_state(run_id, min_position=last.position).datasets
    assert [(d.role, d.rows, d.tokens, d.format) for d in datasets] == [
        ("train", 1200, 480_000, "chat"),
        ("eval", 50, None, "chat"),
    ]
    assert datasets[0].report == {"dropped": {"too_long": 4}, "loss_mask_coverage": 0.61, "gate": {"passed": True}}
    assert datasets[0].source_uri == "hf://org/data@rev"
    assert datasets[1].report == {}
    assert datasets[1].recorded_at == clock.now


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"role": "test"}, "INVALID_FIELD"),
        ({"digest": "sha256:xyz"}, "INVALID_DIGEST"),
        ({"digest": "md5:" + "a" * 32}, "INVALID_DIGEST"),
        ({"format": "has space"}, "INVALID_FIELD"),
        ({"format": "f" * 65}, "STRING_TOO_LONG"),
        ({"rows": -1}, "OUT_OF_RANGE"),
        ({"rows": 1.5}, "INVALID_FIELD"),
        ({"tokens": -5}, "OUT_OF_RANGE"),
        ({"report": {"rows": "x" * 70_000}}, "STRING_TOO_LONG"),
        ({"report": {f"k{i}": "x" * 1000 for i in range(70)}}, "DOCUMENT_TOO_LARGE"),
        ({"report": {"x": float("nan")}}, "NON_FINITE_VALUE"),
    ],
)
def test_bad_datasets_are_refused(ledger: Ledger, fields: dict[str, Any], reason: str) -> None:
    run_id = ledger.open_run(run_key="run").run_id
    refused(ledger, Invalid, reason, lambda: ledger.record_dataset(run_id=run_id, **dataset(**fields)))


def test_at_most_sixty_four_datasets(ledger: Ledger) -> None:
    run_id = ledger.open_run(run_key="run").run_id
    for n in range(64):
        ledger.record_dataset(run_id=run_id, **dataset(digest="sha256:" + f"{n:064x}"))
    refused(
        ledger,
        Invalid,
        "MAP_TOO_LARGE",
        lambda: ledger.record_dataset(run_id=run_id, **dataset(digest="sha256:" + "f" * 64)),
    )


# Registration from a source checkpoint.


def test_register_from_a_source_checkpoint_records_it_and_protects_it(ledger: Ledger) -> None:
    run_id = opened(ledger)
    ledger.append_steps(run_id=run_id, attempt=1, steps=[1, 2, 3])
    save(ledger, run_id, 1, digest=CKPT_DIGEST)
    save(ledger, run_id, 2)
    save(ledger, run_id, 3)
    source = {"run_id": run_id, "step": 1, "attempt": 0, "checkpoint_digest": CKPT_DIGEST}
    receipt = ledger.register(family="f", artifact_uri="s3://m/1", digest=DIGEST_A, source_checkpoint=source)
    again = ledger.register(family="f", artifact_uri="s3://m/1", digest=DIGEST_A, source_checkpoint=source)
    assert again.duplicate and again.position == receipt.position
    [version] = ledger.family("f", min_position=receipt.position).versions
    assert (version.source_run_id, version.source_step) == (run_id, 1)
    assert version.source_checkpoint is not None
    assert (version.source_checkpoint.attempt, version.source_checkpoint.checkpoint_digest) == (1, CKPT_DIGEST)
    assert not version.source_retracted
    refused(
        ledger,
        Refused,
        "CHECKPOINT_PROTECTED",
        lambda: ledger.delete_checkpoint(run_id=run_id, attempt=1, step=1),
        protected_by="registered",
    )
    # A bare source step of a known run protects its checkpoint too.
    bare = ledger.register(family="f", artifact_uri="s3://m/2", digest=DIGEST_B, source_run_id=run_id, source_step=2)
    refused(
        ledger,
        Refused,
        "CHECKPOINT_PROTECTED",
        lambda: ledger.delete_checkpoint(run_id=run_id, attempt=1, step=2),
        protected_by="registered",
    )
    [_, plain] = ledger.family("f", min_position=bare.position).versions
    assert plain.source_checkpoint is None


@pytest.mark.parametrize(
    ("source", "kind", "reason"),
    [
        ({"step": 9}, NotFound, "CHECKPOINT_NOT_FOUND"),
        ({"attempt": 2}, NotFound, "CHECKPOINT_NOT_FOUND"),
        ({"checkpoint_digest": "sha256:" + "0" * 64}, Refused, "CHECKPOINT_DIGEST_MISMATCH"),
        ({"checkpoint_digest": ""}, Refused, "CHECKPOINT_DIGEST_MISMATCH"),
        ({"run_id": "00000000-0000-5000-8000-000000000000"}, NotFound, "RUN_NOT_FOUND"),
        ({"step": 2}, Refused, "CHECKPOINT_DELETED"),
        ({"colour": "red"}, Invalid, "INVALID_FIELD"),
    ],
)
def test_a_bad_source_checkpoint_is_refused(
    ledger: Ledger, source: dict[str, Any], kind: type[LedgerError], reason: str
) -> None:
    run_id = opened(ledger)
    save(ledger, run_id, 1, digest=CKPT_DIGEST)
    save(ledger, run_id, 2, digest=CKPT_DIGEST)
    save(ledger, run_id, 3, digest=CKPT_DIGEST)
    ledger.delete_checkpoint(run_id=run_id, attempt=1, step=2)
    given = {"run_id": run_id, "step": 1, "attempt": 0, "checkpoint_digest": CKPT_DIGEST, **source}
    refused(
        ledger,
        kind,
        reason,
        lambda: ledger.register(family="f", artifact_uri="s3://m/1", digest=DIGEST_A, source_checkpoint=given),
    )


def test_a_source_checkpoint_and_another_bare_source_are_refused(ledger: Ledger) -> None:
    run_id = opened(ledger)
    save(ledger, run_id, 1, digest=CKPT_DIGEST)
    source = {"run_id": run_id, "step": 1, "attempt": 0, "checkpoint_digest": CKPT_DIGEST}
    for bare in ({"source_step": 2}, {"source_run_id": "other"}):
        refused(
            ledger,
            Invalid,
            "INVALID_FIELD",
            lambda bare=bare: ledger.register(
                family="f", artifact_uri="s3://m", digest=DIGEST_A, source_checkpoint=source, **bare
            ),
        )
    same = ledger.register(
        family="f",
        artifact_uri="s3://m",
        digest=DIGEST_A,
        source_checkpoint=source,
        source_run_id=run_id,
        source_step=1,
    )
    assert not same.duplicate


# Retraction.


def test_retraction_hides_the_run_and_refuses_its_writes(ledger: Ledger) -> None:
    ledger.open_account(account="team", cap_usd_micro=10_000)
    run_id = opened(ledger, cap_usd_micro=1_000, parent_account="team")
    other = opened(ledger, key="other")
    ledger.append_steps(run_id=run_id, attempt=1, steps=[1, 2])
    save(ledger, run_id, 1)
    save(ledger, run_id, 2)
    ledger.reserve(account=run_id, reservation_id="before", amount_usd_micro=100)
    ledger.reserve(account=run_id, reservation_id="released", amount_usd_micro=50)

    receipt = ledger.retract_run(run_id=run_id, reason="trained on the eval set", principal="ops")
    assert not receipt.duplicate
    again = ledger.retract_run(run_id=run_id, reason="trained on the eval set")
    assert again.duplicate and again.position == receipt.position
    refused(ledger, Conflict, "EXISTS_WITH_DIFFERENT_PAYLOAD", lambda: ledger.retract_run(run_id=run_id, reason="x"))
    refused(ledger, Invalid, "MISSING_FIELD", lambda: ledger.retract_run(run_id=other, reason="  "))

    page = ledger.list_runs(min_position=receipt.position)
    assert [run.run_id for run in page.runs] == [other]
    shown = ledger.list_runs(include_retracted=True)
    assert {(run.run_id, run.retracted) for run in shown.runs} == {(run_id, True), (other, False)}
    state = ledger.run_state(run_id)
    assert state.run.retraction is not None
    assert (state.run.retraction.reason, state.run.retraction.principal) == ("trained on the eval set", "ops")

    writes: dict[str, Callable[[], Any]] = {
        "open_run": lambda: ledger.open_run(run_key="run"),
        "start_attempt": lambda: ledger.start_attempt(run_id=run_id),
        "append_steps": lambda: ledger.append_steps(run_id=run_id, attempt=1, steps=[3]),
        "save_checkpoint": lambda: save(ledger, run_id, 3),
        "finish_run": lambda: ledger.finish_run(run_id=run_id, attempt=1, status="done"),
        "note_summary": lambda: ledger.note_summary(run_id=run_id, summary={"note": "x"}),
        "record_dataset": lambda: ledger.record_dataset(run_id=run_id, **dataset()),
        "link_session": lambda: ledger.link_session(run_id=run_id, provider="tinker", session_id="s", attempt=1),
        "reserve": lambda: ledger.reserve(account=run_id, reservation_id="after", amount_usd_micro=1),
        "charge": lambda: ledger.charge(account=run_id, charge_id="c", amount_usd_micro=1, basis={}, reason="r"),
        "register": lambda: ledger.register(
            family="f",
            artifact_uri="s3://m",
            digest=DIGEST_A,
            source_checkpoint={"run_id": run_id, "step": 2, "attempt": 0, "checkpoint_digest": ""},
        ),
    }
    for name, write in writes.items():
        error = refused(ledger, Refused, "RUN_RETRACTED", write)
        assert error.reason == "RUN_RETRACTED", name
    # The truth about money that was spent before still goes through.
    committed = ledger.commit(account=run_id, reservation_id="before", actual_usd_micro=80)
    assert not committed.duplicate
    ledger.release(account=run_id, reservation_id="released", reason="no call")
    assert ledger.account(run_id, min_position=committed.position).committed_usd_micro == 80
    # Housekeeping too: an unprotected checkpoint is deleted.
    assert not ledger.delete_checkpoint(run_id=run_id, attempt=1, step=1).duplicate
    # The other run is untouched.
    assert ledger.append_steps(run_id=other, attempt=1, steps=[1]).position > 0


@pytest.mark.parametrize("retract_first", [True, False])
def test_versions_of_a_retracted_run_are_flagged_in_either_order(ledger: Ledger, retract_first: bool) -> None:
    run_id = opened(ledger)
    save(ledger, run_id, 1, digest=CKPT_DIGEST)
    if retract_first:
        ledger.retract_run(run_id=run_id, reason="bad data")
    # A bare source is recorded unchecked, retracted or not.
    receipt = ledger.register(family="f", artifact_uri="s3://m/1", digest=DIGEST_A, source_run_id=run_id, source_step=1)
    if not retract_first:
        receipt = ledger.retract_run(run_id=run_id, reason="bad data")
    [version] = ledger.family("f", min_position=receipt.position).versions
    assert version.source_retracted
