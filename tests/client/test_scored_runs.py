"""The client's methods for a run's plan and objective, scored checkpoints, datasets, retraction and
retention, against a real server: values in, typed results out, refusals as their error classes;
the asyncio client the same, and RunRecorder passing each through."""

from __future__ import annotations

import asyncio
import math
import time
import uuid

import pytest

from clients import (
    AsyncLedgerClient,
    CheckpointProtected,
    FailedPrecondition,
    InvalidArgument,
    LedgerClient,
    NotFound,
    RunRecorder,
    RunRetracted,
    SourceCheckpoint,
    run_key,
)
from clients.models import (
    BestCheckpoint,
    DatasetReceipt,
    DeleteCheckpointReceipt,
    Objective,
    PruneEntry,
    RetractReceipt,
)
from tests.client.server_thread import ServerThread

DIGEST = "sha256:" + "12" * 32
OTHER_DIGEST = "sha256:" + "34" * 32


def scored_run(client: LedgerClient, losses: dict[int, float]) -> tuple[str, int]:
    """A run with objective (eval_loss, min), max_steps 100, and a checkpoint per step with its loss."""
    opened = client.open_run(
        run_key=run_key({"test": str(uuid.uuid4())}), name="scored", max_steps=100, objective=("eval_loss", "min")
    )
    run_id = opened.state.run.run_id
    attempt = client.start_attempt(run_id=run_id).attempt
    for step, loss in losses.items():
        client.append_steps(run_id=run_id, attempt=attempt, steps=[step], metrics={"loss": [loss]})
        client.save_checkpoint(
            run_id=run_id,
            attempt=attempt,
            step=step,
            uri=f"file:///ckpt/{step}",
            backend="local",
            digest=DIGEST if step == 20 else "",
            scores={"eval_loss": loss},
        )
    return run_id, attempt


def test_plan_objective_scores_and_best_checkpoint(client: LedgerClient) -> None:
    run_id, _ = scored_run(client, {10: 0.5, 20: 0.25, 30: 0.375})
    state = client.get_run_state(run_id=run_id)
    assert state.run.objective == Objective(metric="eval_loss", mode="min")
    assert (state.progress.max_steps, state.progress.step, state.progress.fraction) == (100, 30, 0.3)
    assert state.best_checkpoint is not None and state.best_checkpoint.scores == {"eval_loss": 0.25}
    assert state.checkpoint is not None and (state.checkpoint.step, state.checkpoint.expired) == (30, False)
    best = client.best_checkpoint(run_id=run_id)
    assert isinstance(best, BestCheckpoint)
    assert (best.checkpoint.step, best.score, best.metric, best.mode) == (20, 0.25, "eval_loss", "min")
    worst = client.best_checkpoint(run_id=run_id, metric="eval_loss", mode="max")
    assert (worst.checkpoint.step, worst.score, worst.mode) == (10, 0.5, "max")
    with pytest.raises(NotFound) as missing:
        client.best_checkpoint(run_id=run_id, metric="bleu", mode="max")
    assert missing.value.reason == "NO_SCORED_CHECKPOINT"
    with pytest.raises(InvalidArgument) as no_mode:
        client.best_checkpoint(run_id=run_id, metric="eval_loss")
    assert no_mode.value.reason == "INVALID_FIELD"
    with pytest.raises(ValueError, match="'lowest'"):
        client.best_checkpoint(run_id=run_id, metric="eval_loss", mode="lowest")


def test_progress_with_an_eta_in_the_state_and_the_list(server: ServerThread, client: LedgerClient) -> None:
    opened = client.open_run(run_key=run_key({"test": str(uuid.uuid4())}), max_steps=1_000)
    run_id = opened.state.run.run_id
    attempt = client.start_attempt(run_id=run_id).attempt
    started = time.time()
    client.append_steps(run_id=run_id, attempt=attempt, steps=list(range(1, 11)))
    time.sleep(0.5)
    appended = client.append_steps(run_id=run_id, attempt=attempt, steps=list(range(11, 111)))
    ended = time.time()
    progress = client.get_run_state(run_id=run_id, min_position=appended.position).progress
    assert (progress.max_steps, progress.step, progress.fraction) == (1_000, 110, pytest.approx(0.11))
    # 100 steps in at least the half second slept and at most the time the two calls took.
    assert progress.steps_per_second is not None and 100 / (ended - started) <= progress.steps_per_second <= 200
    assert progress.eta is not None and progress.eta.tzinfo is not None
    assert progress.eta.timestamp() >= ended + 890 / 200 - 1
    [summary] = client.list_runs(run_id_prefix=run_id, min_position=appended.position).runs
    assert (summary.progress.step, summary.progress.steps_per_second) == (110, progress.steps_per_second)
    assert summary.progress.eta is not None

    async def read() -> None:
        async with AsyncLedgerClient(server.address, principal="tests", timeout_s=10.0) as aio:
            state = await aio.get_run_state(run_id=run_id, min_position=appended.position)
            assert state.progress.steps_per_second == progress.steps_per_second
            assert state.progress.eta is not None
            page = await aio.list_runs(run_id_prefix=run_id, min_position=appended.position)
            assert [run.progress.step for run in page.runs] == [110]

    asyncio.run(read())


def test_bad_input_is_refused_with_its_reason_and_records_nothing(client: LedgerClient) -> None:
    run_id, attempt = scored_run(client, {10: 0.5, 20: 0.25})
    before = client.get_run_state(run_id=run_id)
    with pytest.raises(InvalidArgument) as non_finite:
        client.save_checkpoint(
            run_id=run_id,
            attempt=attempt,
            step=30,
            uri="file:///ckpt/30",
            backend="local",
            scores={"eval_loss": math.inf},
        )
    assert non_finite.value.reason == "NON_FINITE_METRIC"
    with pytest.raises(InvalidArgument) as below:
        client.open_run(run_key=before.run.run_key, max_steps=19)
    assert (below.value.reason, below.value.metadata["last_step"]) == ("MAX_STEPS_BELOW_LAST_STEP", "20")
    with pytest.raises(FailedPrecondition) as differs:
        client.open_run(run_key=before.run.run_key, objective=("eval_loss", "max"))
    assert differs.value.reason == "OBJECTIVE_DIFFERS"
    oversized = {f"k{n}": "x" * 1_000 for n in range(80)}
    with pytest.raises(InvalidArgument) as too_large:
        client.record_dataset(run_id=run_id, role="train", digest=DIGEST, format="sft", rows=1, report=oversized)
    assert too_large.value.reason == "DOCUMENT_TOO_LARGE"
    family = f"family-{uuid.uuid4().hex[:8]}"
    mismatch = SourceCheckpoint(run_id=run_id, step=20, checkpoint_digest=OTHER_DIGEST)
    with pytest.raises(FailedPrecondition) as wrong_digest:
        client.register(family=family, artifact_uri="s3://m/20", digest=DIGEST, source_checkpoint=mismatch)
    assert (wrong_digest.value.reason, wrong_digest.value.metadata["checkpoint_digest"]) == (
        "CHECKPOINT_DIGEST_MISMATCH",
        DIGEST,
    )
    unknown = SourceCheckpoint(run_id=run_id, step=15, checkpoint_digest=DIGEST)
    with pytest.raises(NotFound) as missing:
        client.register(family=family, artifact_uri="s3://m/15", digest=DIGEST, source_checkpoint=unknown)
    assert missing.value.reason == "CHECKPOINT_NOT_FOUND"
    # Nothing was recorded: the run's state is as it was, and the family was never made.
    marker = client.note_summary(run_id=run_id, summary={"checked": True})
    after = client.get_run_state(run_id=run_id, min_position=marker.position)
    assert [c.step for c in client.list_checkpoints(run_id=run_id).checkpoints] == [10, 20]
    assert (after.progress.max_steps, after.run.objective, after.datasets) == (100, before.run.objective, [])
    with pytest.raises(NotFound):
        client.list_versions(family=family, min_position=marker.position)


def test_datasets_are_recorded_and_listed(client: LedgerClient) -> None:
    run_id, _ = scored_run(client, {})
    report = {"rows": 1_000, "rows_dropped": {"empty": 2}, "loss_mask_coverage": 0.5}
    first = client.record_dataset(
        run_id=run_id, role="train", digest=DIGEST, format="chat", rows=998, tokens=41_000, report=report
    )
    again = client.record_dataset(
        run_id=run_id, role="train", digest=DIGEST, format="chat", rows=998, tokens=41_000, report=report
    )
    assert isinstance(first, DatasetReceipt) and (again.duplicate, again.position) == (True, first.position)
    client.record_dataset(run_id=run_id, role="eval", digest=OTHER_DIGEST, format="chat", rows=50)
    datasets = client.get_run_state(run_id=run_id).datasets
    assert [(d.role, d.digest, d.rows, d.tokens) for d in datasets] == [
        ("train", DIGEST, 998, 41_000),
        ("eval", OTHER_DIGEST, 50, None),
    ]
    assert datasets[0].report == report and datasets[1].report == {} and datasets[0].recorded_at is not None


def test_retraction_through_the_client(client: LedgerClient) -> None:
    run_id, attempt = scored_run(client, {10: 0.5})
    first = client.retract_run(run_id=run_id, reason="license withdrawn")
    again = client.retract_run(run_id=run_id, reason="license withdrawn")
    assert isinstance(first, RetractReceipt) and (again.duplicate, again.position) == (True, first.position)
    with pytest.raises(RunRetracted) as refused:
        client.append_steps(run_id=run_id, attempt=attempt, steps=[11])
    assert refused.value.reason == "RUN_RETRACTED"
    state = client.get_run_state(run_id=run_id)
    assert state.run.retraction is not None and state.run.retraction.reason == "license withdrawn"
    assert run_id not in [r.run_id for r in client.list_runs(page_size=1_000).runs]
    listed = {r.run_id: r for r in client.list_runs(page_size=1_000, include_retracted=True).runs}
    assert listed[run_id].retracted and listed[run_id].progress.max_steps == 100


def test_plan_prune_reads_every_page_and_delete_checkpoint(client: LedgerClient) -> None:
    run_id, _ = scored_run(client, {10: 0.5, 20: 0.25, 30: 0.375, 40: 0.45, 50: 0.5})
    entries = client.plan_prune(run_id=run_id, keep_last=1, page_size=2)
    assert all(isinstance(entry, PruneEntry) for entry in entries)
    assert [(e.checkpoint.step, e.delete, e.kept_because) for e in entries] == [
        (10, True, []),
        (20, False, ["best"]),
        (30, True, []),
        (40, True, []),
        (50, False, ["resume", "recent"]),
    ]
    deleted = client.delete_checkpoint(run_id=run_id, attempt=1, step=30, reason="pruned")
    assert isinstance(deleted, DeleteCheckpointReceipt) and not deleted.duplicate
    assert client.delete_checkpoint(run_id=run_id, attempt=1, step=30).position == deleted.position
    with pytest.raises(CheckpointProtected) as protected:
        client.delete_checkpoint(run_id=run_id, attempt=1, step=50)
    assert protected.value.metadata["protected_by"] == "resume"
    listed = client.list_checkpoints(run_id=run_id).checkpoints
    assert [c.step for c in listed if c.deleted_at is not None] == [30]
    assert [e.kept_because for e in client.plan_prune(run_id=run_id) if e.checkpoint.step == 30] == [["deleted"]]


def test_register_from_a_source_checkpoint(client: LedgerClient) -> None:
    run_id, _ = scored_run(client, {10: 0.5, 20: 0.25})
    family = f"family-{uuid.uuid4().hex[:8]}"
    source = SourceCheckpoint(run_id=run_id, step=20, checkpoint_digest=DIGEST)
    registered = client.register(family=family, artifact_uri="s3://m/20", digest=DIGEST, source_checkpoint=source)
    client.promote(
        family=family, version=registered.version, expected_current=0, verdict={"passed": True, "reason": "checked"}
    )
    current = client.get_current(family=family)
    assert current is not None and (current.source_run_id, current.source_step) == (run_id, 20)
    # Attempt 0 named the usable checkpoint at step 20: the version records the attempt that saved it.
    assert current.source_checkpoint == SourceCheckpoint(run_id=run_id, step=20, attempt=1, checkpoint_digest=DIGEST)
    assert current.source_retracted is False
    client.retract_run(run_id=run_id, reason="bad labels")
    flagged = client.list_versions(family=family).versions
    assert [v.source_retracted for v in flagged] == [True]


def test_the_asyncio_client_reads_pages_and_the_new_methods(server: ServerThread, client: LedgerClient) -> None:
    run_id, attempt = scored_run(client, {10: 0.5, 20: 0.25, 30: 0.375})

    async def scenario() -> None:
        async with AsyncLedgerClient(server.address, principal="tests", timeout_s=10.0) as aio:
            best = await aio.best_checkpoint(run_id=run_id)
            assert (best.checkpoint.step, best.metric) == (20, "eval_loss")
            entries = await aio.plan_prune(run_id=run_id, page_size=1)
            assert [(e.checkpoint.step, e.kept_because) for e in entries] == [
                (10, []),
                (20, ["best"]),
                (30, ["resume"]),
            ]
            metrics = await aio.get_metrics(run_id=run_id)
            assert [(m.name, m.count) for m in metrics] == [("loss", 3)]
            recorded = await aio.record_dataset(run_id=run_id, role="eval", digest=DIGEST, format="sft", rows=5)
            assert recorded.position > 0 and not recorded.duplicate
            # The plan, the objective, scores, deletion and a version made from a checkpoint.
            opened = await aio.open_run(
                run_key=run_key({"test": str(uuid.uuid4())}), max_steps=50, objective=("accuracy", "max")
            )
            other = opened.state.run.run_id
            assert opened.state.run.objective == Objective(metric="accuracy", mode="max")
            started = await aio.start_attempt(run_id=other, max_steps=60)
            assert started.state.progress.max_steps == 60
            for step, accuracy in ((5, 0.75), (6, 0.5), (7, 0.625)):
                await aio.save_checkpoint(
                    run_id=other,
                    attempt=started.attempt,
                    step=step,
                    uri=f"file:///ckpt/{step}",
                    backend="local",
                    digest=DIGEST,
                    scores={"accuracy": accuracy},
                )
            with pytest.raises(InvalidArgument) as non_finite:
                await aio.save_checkpoint(
                    run_id=other,
                    attempt=started.attempt,
                    step=8,
                    uri="file:///ckpt/8",
                    backend="local",
                    scores={"accuracy": float("nan")},
                )
            assert non_finite.value.reason == "NON_FINITE_METRIC"
            deleted = await aio.delete_checkpoint(run_id=other, attempt=started.attempt, step=6)
            assert isinstance(deleted, DeleteCheckpointReceipt) and not deleted.duplicate
            with pytest.raises(CheckpointProtected):
                await aio.delete_checkpoint(run_id=other, attempt=started.attempt, step=5)
            family = f"family-{uuid.uuid4().hex[:8]}"
            source = SourceCheckpoint(run_id=other, step=5, checkpoint_digest=DIGEST)
            registered = await aio.register(
                family=family, artifact_uri="s3://m/5", digest=DIGEST, source_checkpoint=source
            )
            with pytest.raises(NotFound) as gone:
                await aio.register(
                    family=family,
                    artifact_uri="s3://m/6",
                    digest=OTHER_DIGEST,
                    source_checkpoint=SourceCheckpoint(run_id=other, step=9, checkpoint_digest=DIGEST),
                )
            assert gone.value.reason == "CHECKPOINT_NOT_FOUND"
            withdrawn = await aio.retract_run(run_id=other, reason="async")
            [version] = (await aio.list_versions(family=family, min_position=withdrawn.position)).versions
            assert version.version == registered.version and version.source_retracted
            assert version.source_checkpoint is not None and version.source_checkpoint.step == 5

    asyncio.run(scenario())


def test_the_recorder_passes_the_plan_objective_scores_and_datasets(client: LedgerClient, tmp_path) -> None:
    key = run_key({"test": str(uuid.uuid4())})
    with RunRecorder.open(
        client, run_key=key, name="recorded", max_steps=40, objective=("accuracy", "max"), batch_interval_s=0.01
    ) as run:
        assert run.state is not None and run.state.progress.max_steps == 40
        assert run.state.run.objective == Objective(metric="accuracy", mode="max")
        run.record_dataset(role="train", digest=DIGEST, format="sft", rows=10, source_uri="data/train.jsonl")
        for step in range(10):
            run.log(step, loss=1.0 / (step + 1))
        run.checkpoint(4, "file:///c/4", "local", scores={"accuracy": 0.75})
        run.checkpoint(9, "file:///c/9", "local", scores={"accuracy": 0.5})
        run.finish("stopped")
        run_id = run.run_id
    state = client.get_run_state(run_id=run_id)
    assert state.best_checkpoint is not None and (state.best_checkpoint.step, state.best_checkpoint.scores) == (
        4,
        {"accuracy": 0.75},
    )
    assert [(d.role, d.source_uri) for d in state.datasets] == [("train", "data/train.jsonl")]
    assert (state.progress.max_steps, state.progress.step) == (40, 9)
    # A restarted trainer with a longer plan: the open and the new attempt carry it.
    with RunRecorder.open(client, run_key=key, max_steps=80, reopen=True, resume_from_step="latest") as run:
        assert run.state is not None and run.state.progress.max_steps == 80
        run.finish("done")
