"""Run, as unit tests: given events, when a command, then new events or an error. No I/O."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ledger.domain import run_attempts, run_checkpoints, run_notes, run_steps
from ledger.domain.base import Audit, ledger_id
from ledger.domain.batches import StepBatch
from ledger.domain.errors import Conflict, Invalid, NotFound, Refused
from ledger.domain.runs import Run

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def audit(now: datetime = NOW) -> Audit:
    return Audit("tester", "request-1", now)


def opened(key: str = "run-key") -> Run:
    """Given: a run that was opened (its Opened event already collected)."""
    run = Run._create(Run.Opened, id=ledger_id("run", key), run_key=key, name=key, spec={"lr": 0.1}, **audit().fields())
    run.collect_events()
    return run


def started(
    run: Run, *, resume_from_step: int | None = None, attempt_id: str = "", label: str = "", now: datetime = NOW
) -> Run:
    assert (
        run_attempts.start_attempt(
            run, audit(now), attempt_id=attempt_id, label=label, resume_from_step=resume_from_step
        )
        is None
    )
    run.collect_events()
    return run


def batch(attempt: int, steps: list[int], loss: float = 1.0, **columns: Any) -> StepBatch:
    return StepBatch.build(attempt=attempt, steps=steps, metrics={"loss": [loss] * len(steps)}, **columns)


def recorded(run: Run, attempt: int, steps: list[int], loss: float = 1.0) -> Run:
    assert run_steps.record_steps(run, audit(), batch(attempt, steps, loss)) is None
    run.collect_events()
    return run


def checkpoint(step: int, *, expires_at: datetime | None = None, uri: str = "") -> dict[str, Any]:
    return {
        "step": step,
        "backend": "hf",
        "uri": uri or f"file:///ckpt/{step}",
        "fidelity": "weights+optimizer",
        "sampler_uri": "",
        "final": False,
        "expires_at": expires_at,
        "digest": "",
    }


def saved(run: Run, attempt: int, step: int, **fields: Any) -> Run:
    assert run_checkpoints.save_checkpoint(run, audit(), attempt=attempt, checkpoint=checkpoint(step, **fields)) is None
    run.collect_events()
    return run


def refused(error: type[Exception], reason: str, run: Run, act: Any) -> pytest.ExceptionInfo:
    """Then: `act` raises `error` with `reason` and records nothing."""
    version = run.version
    with pytest.raises(error) as caught:
        act()
    assert caught.value.reason == reason
    assert run.collect_events() == []
    assert run.version == version
    return caught


class TestOpen:
    def test_the_run_id_is_a_uuid5_of_the_key_so_opening_again_finds_the_run(self) -> None:
        assert ledger_id("run", "k") == ledger_id("run", "k")
        assert ledger_id("run", "k") != ledger_id("run", "other")
        assert ledger_id("run", "k") != ledger_id("account", "k")

    def test_opened_run_is_running_with_no_attempt(self) -> None:
        run = Run._create(
            Run.Opened, id=ledger_id("run", "k"), run_key="k", name="n", spec={"a": 1}, **audit().fields()
        )
        [event] = run.collect_events()
        assert isinstance(event, Run.Opened)
        assert (event.run_key, event.name, event.spec, event.principal, event.request_id) == (
            "k",
            "n",
            {"a": 1},
            "tester",
            "request-1",
        )
        assert event.timestamp == NOW
        assert (run.status, run.current_attempt, run.last_step, run.summary) == ("running", 0, None, {})


class TestAttempts:
    def test_start_attempt_records_the_next_number(self) -> None:
        run = opened()
        assert run_attempts.start_attempt(run, audit(), attempt_id="a1", label="host-1", resume_from_step=None) is None
        [event] = run.collect_events()
        assert isinstance(event, Run.AttemptStarted)
        assert (event.attempt, event.attempt_id, event.label, event.resumed_from_step) == (1, "a1", "host-1", None)
        run_attempts.start_attempt(run, audit(), attempt_id="a2", label="", resume_from_step=None)
        [event] = run.collect_events()
        assert event.attempt == 2
        assert [a["ended"] for a in run.attempts] == [True, False]

    def test_start_attempt_retry_with_same_id_is_a_no_op(self) -> None:
        run = started(opened(), attempt_id="a1", label="x")
        first = run.attempts[0]["version"]
        assert run_attempts.start_attempt(run, audit(), attempt_id="a1", label="x", resume_from_step=None) == first
        assert run.collect_events() == []

    def test_start_attempt_same_id_other_payload_is_refused(self) -> None:
        run = started(opened(), attempt_id="a1", label="x")
        refused(
            Conflict,
            "EXISTS_WITH_DIFFERENT_PAYLOAD",
            run,
            lambda: run_attempts.start_attempt(run, audit(), attempt_id="a1", label="y", resume_from_step=None),
        )

    @pytest.mark.parametrize("act", ["steps", "checkpoint", "finish"])
    def test_a_superseded_attempt_is_fenced(self, act: str) -> None:
        run = recorded(started(started(opened())), 2, [1, 2])
        commands = {
            "steps": lambda: run_steps.record_steps(run, audit(), batch(1, [3])),
            "checkpoint": lambda: run_checkpoints.save_checkpoint(run, audit(), attempt=1, checkpoint=checkpoint(9)),
            "finish": lambda: run_attempts.finish(run, audit(), attempt=1, status="done", summary={}, error=""),
        }
        caught = refused(Refused, "ATTEMPT_SUPERSEDED", run, commands[act])
        assert caught.value.metadata == {"attempt": "1", "current_attempt": "2"}

    def test_a_superseded_attempt_retrying_an_identical_batch_gets_the_first_answer(self) -> None:
        # An identical retry is a no-op that answers with the first position, fenced or not;
        # anything new from a superseded attempt is refused.
        run = recorded(started(opened()), 1, [1, 2])
        first_version = run.version
        started(run)
        version = run.version
        assert run_steps.record_steps(run, audit(), batch(1, [1, 2])) == first_version
        assert run.version == version and not run.pending_events
        refused(Refused, "ATTEMPT_SUPERSEDED", run, lambda: run_steps.record_steps(run, audit(), batch(1, [3])))

    @pytest.mark.parametrize("attempt", [2, 7])
    def test_an_attempt_never_started_is_not_found(self, attempt: int) -> None:
        run = started(opened())
        refused(NotFound, "ATTEMPT_NOT_FOUND", run, lambda: run_steps.record_steps(run, audit(), batch(attempt, [1])))
        refused(
            NotFound,
            "ATTEMPT_NOT_FOUND",
            run,
            lambda: run_checkpoints.save_checkpoint(run, audit(), attempt=attempt, checkpoint=checkpoint(1)),
        )

    def test_no_attempt_started_means_no_writer(self) -> None:
        run = opened()
        refused(NotFound, "ATTEMPT_NOT_FOUND", run, lambda: run_steps.record_steps(run, audit(), batch(1, [1])))


class TestSteps:
    def test_a_batch_is_one_event_column_wise(self) -> None:
        run = started(opened())
        steps = list(range(1, 1001))
        assert (
            run_steps.record_steps(
                run, audit(), StepBatch.build(attempt=1, steps=steps, tokens=[7] * 1000, metrics={"loss": [0.5] * 1000})
            )
            is None
        )
        [event] = run.collect_events()
        assert isinstance(event, Run.StepsRecorded)
        assert event.steps == steps
        assert event.tokens == [7] * 1000
        assert event.usd_micro is None
        assert event.metrics == {"loss": {"values": [0.5] * 1000, "index": None}}
        assert event.attempt == 1
        assert run.last_step == 1000

    def test_same_steps_same_payload_is_a_no_op_answering_the_first_version(self) -> None:
        run = recorded(started(opened()), 1, [1, 2, 3])
        first = run.version
        recorded(run, 1, [4, 5])
        assert run_steps.record_steps(run, audit(), batch(1, [1, 2, 3])) == first
        assert run.collect_events() == []
        assert run.last_step == 5

    @pytest.mark.parametrize("steps", [[1, 2, 3], [2], [3, 4], [2, 3]])
    def test_same_step_other_payload_is_refused(self, steps: list[int]) -> None:
        run = recorded(started(opened()), 1, [1, 2, 3])
        refused(
            Conflict,
            "EXISTS_WITH_DIFFERENT_PAYLOAD",
            run,
            lambda: run_steps.record_steps(run, audit(), batch(1, steps, loss=2.0)),
        )

    def test_steps_strictly_increase_within_a_batch(self) -> None:
        for steps in ([3, 2], [1, 1], [1, 3, 2]):
            with pytest.raises(Invalid) as caught:
                batch(1, steps)
            assert caught.value.reason == "STEPS_NOT_INCREASING"

    def test_steps_strictly_increase_across_batches_of_an_attempt(self) -> None:
        run = recorded(recorded(started(opened()), 1, [1, 2, 3]), 1, [5, 6])
        refused(Invalid, "STEPS_NOT_INCREASING", run, lambda: run_steps.record_steps(run, audit(), batch(1, [4])))

    def test_a_step_below_every_recorded_one_is_not_increasing_either(self) -> None:
        run = recorded(started(opened()), 1, [1, 2, 3])
        refused(Invalid, "STEPS_NOT_INCREASING", run, lambda: run_steps.record_steps(run, audit(), batch(1, [0])))

    def test_a_new_attempt_without_resume_starts_from_scratch(self) -> None:
        run = started(recorded(started(opened()), 1, [1, 2, 3]))
        assert run.last_step is None
        assert run_steps.record_steps(run, audit(), batch(2, [1, 2])) is None
        assert [type(e) for e in run.collect_events()] == [Run.StepsRecorded]


class TestCheckpointsAndResume:
    def test_save_checkpoint_records_the_handle(self) -> None:
        run = recorded(started(opened()), 1, [1, 2, 3])
        expires = NOW + timedelta(days=1)
        assert (
            run_checkpoints.save_checkpoint(run, audit(), attempt=1, checkpoint=checkpoint(3, expires_at=expires))
            is None
        )
        [event] = run.collect_events()
        assert isinstance(event, Run.CheckpointSaved)
        assert (event.attempt, event.step, event.backend, event.uri, event.fidelity, event.expires_at) == (
            1,
            3,
            "hf",
            "file:///ckpt/3",
            "weights+optimizer",
            expires,
        )

    def test_save_checkpoint_retry_is_a_no_op_and_other_payload_is_refused(self) -> None:
        run = saved(started(opened()), 1, 3)
        first = run.version
        assert run_checkpoints.save_checkpoint(run, audit(), attempt=1, checkpoint=checkpoint(3)) == first
        assert run.collect_events() == []
        refused(
            Conflict,
            "EXISTS_WITH_DIFFERENT_PAYLOAD",
            run,
            lambda: run_checkpoints.save_checkpoint(
                run, audit(), attempt=1, checkpoint=checkpoint(3, uri="file:///other")
            ),
        )

    def test_resume_supersedes_what_lies_above_the_resume_point(self) -> None:
        run = started(opened())
        recorded(run, 1, list(range(1, 11)))
        saved(run, 1, 5)
        saved(run, 1, 8)
        assert run_attempts.start_attempt(run, audit(), attempt_id="", label="", resume_from_step=5) is None
        [event] = run.collect_events()
        assert (event.attempt, event.resumed_from_step) == (2, 5)
        assert [(c["step"], c["superseded"]) for c in run.checkpoints] == [(5, False), (8, True)]
        assert run.last_step == 5
        # The resumed attempt records from the step after the checkpoint, not at or below it.
        refused(Invalid, "STEP_BEFORE_RESUME", run, lambda: run_steps.record_steps(run, audit(), batch(2, [5])))
        refused(
            Invalid,
            "STEP_BEFORE_RESUME",
            run,
            lambda: run_checkpoints.save_checkpoint(run, audit(), attempt=2, checkpoint=checkpoint(4)),
        )
        recorded(run, 2, [6, 7])
        # A superseded checkpoint cannot be resumed from.
        refused(
            NotFound,
            "CHECKPOINT_NOT_FOUND",
            run,
            lambda: run_attempts.start_attempt(run, audit(), attempt_id="", label="", resume_from_step=8),
        )

    def test_resume_needs_a_checkpoint_at_that_step(self) -> None:
        run = saved(recorded(started(opened()), 1, [1, 2, 3]), 1, 3)
        refused(
            NotFound,
            "CHECKPOINT_NOT_FOUND",
            run,
            lambda: run_attempts.start_attempt(run, audit(), attempt_id="", label="", resume_from_step=2),
        )

    def test_resume_from_an_expired_checkpoint_is_refused(self) -> None:
        run = saved(recorded(started(opened()), 1, [1, 2, 3]), 1, 3, expires_at=NOW + timedelta(hours=1))
        later = NOW + timedelta(hours=2)
        refused(
            Refused,
            "CHECKPOINT_EXPIRED",
            run,
            lambda: run_attempts.start_attempt(run, audit(later), attempt_id="", label="", resume_from_step=3),
        )
        assert run_attempts.start_attempt(run, audit(NOW), attempt_id="", label="", resume_from_step=3) is None


class TestFinishAndSummary:
    @pytest.mark.parametrize("status", ["done", "failed", "stopped"])
    def test_finish_records_the_status(self, status: str) -> None:
        run = started(opened())
        assert run_attempts.finish(run, audit(), attempt=1, status=status, summary={"loss": 0.1}, error="boom") is None
        [event] = run.collect_events()
        assert isinstance(event, Run.Finished)
        assert (event.status, event.summary, event.error) == (status, {"loss": 0.1}, "boom")
        assert run.status == status
        assert all(a["ended"] for a in run.attempts)
        refused(Refused, "RUN_FINISHED", run, lambda: run_steps.record_steps(run, audit(), batch(1, [1])))

    def test_finish_retry_is_a_no_op_and_another_finish_is_refused(self) -> None:
        run = started(opened())
        run_attempts.finish(run, audit(), attempt=1, status="failed", summary={"a": 1}, error="e")
        run.collect_events()
        first = run.version
        assert run_attempts.finish(run, audit(), attempt=1, status="failed", summary={"a": 1}, error="e") == first
        assert run.collect_events() == []
        refused(
            Refused,
            "RUN_FINISHED",
            run,
            lambda: run_attempts.finish(run, audit(), attempt=1, status="done", summary={}, error=""),
        )

    def test_a_done_run_takes_no_new_attempt_but_a_failed_one_does(self) -> None:
        done = started(opened("done"))
        run_attempts.finish(done, audit(), attempt=1, status="done", summary={}, error="")
        done.collect_events()
        refused(
            Refused,
            "RUN_FINISHED",
            done,
            lambda: run_attempts.start_attempt(done, audit(), attempt_id="", label="", resume_from_step=None),
        )
        failed = started(opened("failed"))
        run_attempts.finish(failed, audit(), attempt=1, status="failed", summary={}, error="oom")
        failed.collect_events()
        started(failed)
        assert (failed.status, failed.current_attempt) == ("running", 2)

    def test_summary_notes_merge_also_after_finish_and_keep_the_status(self) -> None:
        run = started(opened())
        run_attempts.finish(run, audit(), attempt=1, status="done", summary={"loss": 0.5, "eval": 1.0}, error="")
        run.collect_events()
        assert run_notes.note_summary(run, audit(), summary={"loss": 0.4, "note": "corrected"}) is None
        [event] = run.collect_events()
        assert isinstance(event, Run.SummaryNoted)
        assert event.summary == {"loss": 0.4, "note": "corrected"}
        assert run.summary == {"loss": 0.4, "eval": 1.0, "note": "corrected"}
        assert run.status == "done"
        # The same notes again change nothing and record nothing.
        assert run_notes.note_summary(run, audit(), summary={"note": "corrected"}) == run.version
        assert run.collect_events() == []
