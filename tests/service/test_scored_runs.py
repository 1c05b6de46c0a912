"""A run's plan and objective, scored checkpoints and the best of them, datasets, retraction and
checkpoint retention, over the wire: each RPC's answer, each refusal by status and ErrorInfo
reason, duplicates answered with the first position. Expected values are written out here."""

from __future__ import annotations

import math
import time
from typing import Any

import grpc
import pytest

from ledger.domain.limits import DOCUMENT_REQUEST_BYTES_MAX
from tests.service.support import Stubs, batch, error_info, key, open_run
from trainledger.v1 import common_pb2, registry_pb2, runs_pb2, spend_pb2

Code = grpc.StatusCode
DIGEST = "sha256:" + "ab" * 32
OTHER_DIGEST = "sha256:" + "cd" * 32
MIN_LOSS = runs_pb2.Objective(metric="eval_loss", mode=runs_pb2.OBJECTIVE_MODE_MIN)


def refusal(call: Any, request: Any) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    """(status, ErrorInfo reason, metadata) of a call that must be refused."""
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=10)
    info = error_info(caught.value)
    assert info.domain == "trainledger"
    return caught.value.code(), info.reason, dict(info.metadata)


def state(stubs: Stubs, run_id: str, min_position: int = 0) -> runs_pb2.RunState:
    request = runs_pb2.GetRunStateRequest(run_id=run_id, min_position=min_position)
    return stubs.runs.GetRunState(request, timeout=10).state


def save(
    stubs: Stubs, run_id: str, step: int, scores: dict[str, float] | None = None, *, attempt: int = 1, digest: str = ""
) -> runs_pb2.SaveCheckpointResponse:
    request = runs_pb2.SaveCheckpointRequest(
        run_id=run_id,
        attempt=attempt,
        step=step,
        handle=common_pb2.StateHandle(backend="local", uri=f"file:///ckpt/{attempt}/{step}", fidelity="weights"),
        digest=digest,
        scores=scores or {},
    )
    return stubs.runs.SaveCheckpoint(request, timeout=10)


def scored_run(stubs: Stubs, losses: dict[int, float], **fields: Any) -> str:
    """A run with the objective min eval_loss and a checkpoint at each step with its loss."""
    run_id = open_run(stubs, objective=MIN_LOSS, **fields).state.run.run_id
    position = 0
    for step, loss in losses.items():
        stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(step, step + 1))), timeout=10)
        position = save(stubs, run_id, step, {"eval_loss": loss, "accuracy": 1 - loss}).position
    # The reads that follow ask for no position: the views hold every save first.
    stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id, min_position=position), timeout=10)
    return run_id


def dataset(**fields: Any) -> runs_pb2.Dataset:
    values: dict[str, Any] = {"role": runs_pb2.DATASET_ROLE_TRAIN, "digest": DIGEST, "format": "sft", "rows": 1_200}
    return runs_pb2.Dataset(**{**values, **fields})


# OpenRun and StartAttempt: the plan and the objective.


def test_open_run_records_the_plan_and_objective_and_a_new_plan_on_reopen(stubs: Stubs) -> None:
    request = runs_pb2.OpenRunRequest(run_key=key(), max_steps=1_000, objective=MIN_LOSS)
    opened = stubs.runs.OpenRun(request, timeout=10)
    assert opened.state.run.objective == MIN_LOSS
    assert opened.state.progress.max_steps == 1_000
    assert not opened.state.progress.HasField("step") and not opened.state.progress.HasField("eta")
    # Opened again with the same plan and no objective: nothing changes.
    again = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=request.run_key, max_steps=1_000), timeout=10)
    assert again.state.run.objective == MIN_LOSS and again.state.progress.max_steps == 1_000
    replanned = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=request.run_key, max_steps=2_000), timeout=10)
    assert replanned.state.progress.max_steps == 2_000


def test_an_objective_never_changes(stubs: Stubs) -> None:
    request = runs_pb2.OpenRunRequest(run_key=key(), objective=MIN_LOSS)
    stubs.runs.OpenRun(request, timeout=10)
    other = runs_pb2.OpenRunRequest(
        run_key=request.run_key, objective=runs_pb2.Objective(metric="eval_loss", mode=runs_pb2.OBJECTIVE_MODE_MAX)
    )
    code, reason, metadata = refusal(stubs.runs.OpenRun, other)
    assert (code, reason) == (Code.FAILED_PRECONDITION, "OBJECTIVE_DIFFERS")
    assert (metadata["metric"], metadata["mode"]) == ("eval_loss", "min")


@pytest.mark.parametrize("mode", [runs_pb2.OBJECTIVE_MODE_UNSPECIFIED, 9])
def test_an_objective_needs_a_mode_the_server_knows(stubs: Stubs, mode: int) -> None:
    request = runs_pb2.OpenRunRequest(run_key=key(), objective=runs_pb2.Objective(metric="eval_loss", mode=mode))
    code, reason, metadata = refusal(stubs.runs.OpenRun, request)
    assert (code, reason, metadata["field"]) == (Code.INVALID_ARGUMENT, "INVALID_FIELD", "objective.mode")
    best = runs_pb2.BestCheckpointRequest(run_id=scored_run(stubs, {}), objective=request.objective)
    code, reason, metadata = refusal(stubs.runs.BestCheckpoint, best)
    assert (code, reason, metadata["field"]) == (Code.INVALID_ARGUMENT, "INVALID_FIELD", "objective.mode")


def test_max_steps_may_not_fall_below_the_resume_point(stubs: Stubs) -> None:
    run_id = scored_run(stubs, {10: 0.5})
    request = runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2", resume_from_step=10, max_steps=9)
    code, reason, _ = refusal(stubs.runs.StartAttempt, request)
    assert (code, reason) == (Code.INVALID_ARGUMENT, "MAX_STEPS_BELOW_LAST_STEP")
    request.max_steps = 40
    started = stubs.runs.StartAttempt(request, timeout=10)
    assert started.attempt == 2 and started.state.progress.max_steps == 40
    assert started.state.progress.step == 10 and math.isclose(started.state.progress.fraction, 0.25)
    reopened = runs_pb2.OpenRunRequest(run_key=started.state.run.run_key, max_steps=5)
    code, reason, _ = refusal(stubs.runs.OpenRun, reopened)
    assert (code, reason) == (Code.INVALID_ARGUMENT, "MAX_STEPS_BELOW_LAST_STEP")


def test_run_state_and_list_runs_show_progress_with_an_eta_from_the_recent_step_rate(stubs: Stubs) -> None:
    run_id = open_run(stubs, max_steps=1_000).state.run.run_id
    before_first = time.time()
    stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(1, 11))), timeout=10)
    after_first = time.time()
    time.sleep(0.5)
    before_second = time.time()
    appended = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(11, 111))), timeout=10)
    after_second = time.time()
    progress = state(stubs, run_id, appended.position).progress
    read_at = time.time()
    assert (progress.max_steps, progress.step) == (1_000, 110)
    assert math.isclose(progress.fraction, 0.11)
    # 100 steps between the two batches, in the time the server took between them.
    slowest, fastest = 100 / (after_second - before_first), 100 / (before_second - after_first)
    assert slowest <= progress.steps_per_second <= fastest
    # The 890 steps left at that rate, from the time of the read.
    eta = progress.eta.seconds + progress.eta.nanos / 1e9
    assert before_second + 890 / fastest - 1 <= eta <= read_at + 890 / slowest + 1
    listed = stubs.runs.ListRuns(
        runs_pb2.ListRunsRequest(run_id_prefix=run_id, min_position=appended.position), timeout=10
    ).runs
    assert [run.run_id for run in listed] == [run_id]
    summary = listed[0].progress
    assert (summary.max_steps, summary.step, summary.fraction) == (1_000, 110, progress.fraction)
    assert summary.steps_per_second == progress.steps_per_second and summary.HasField("eta")
    # A finished run has no ETA.
    finish = runs_pb2.FinishRunRequest(run_id=run_id, attempt=1, status=common_pb2.RUN_STATUS_DONE)
    finished = state(stubs, run_id, stubs.runs.FinishRun(finish, timeout=10).position).progress
    assert (finished.step, finished.steps_per_second) == (110, progress.steps_per_second)
    assert not finished.HasField("eta")


# SaveCheckpoint's scores and BestCheckpoint.


def test_scores_are_saved_and_part_of_the_checkpoints_identity(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    first = save(stubs, run_id, 5, {"eval_loss": 0.75, "eval/accuracy": 0.5})
    again = save(stubs, run_id, 5, {"eval_loss": 0.75, "eval/accuracy": 0.5})
    assert (again.duplicate, again.position) == (True, first.position)
    code, reason, _ = refusal(stubs.runs.SaveCheckpoint, _save_request(run_id, 5, {"eval_loss": 0.5}))
    assert (code, reason) == (Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")
    saved = state(stubs, run_id, first.position).checkpoint
    assert dict(saved.scores) == {"eval_loss": 0.75, "eval/accuracy": 0.5}
    assert not saved.HasField("deleted_at") and not saved.expired


@pytest.mark.parametrize(
    ("scores", "reason"),
    [
        ({"eval_loss": math.nan}, "NON_FINITE_METRIC"),
        ({"eval_loss": -math.inf}, "NON_FINITE_METRIC"),
        ({f"score_{n}": 0.5 for n in range(65)}, "MAP_TOO_LARGE"),
    ],
    ids=["nan", "infinity", "65 scores"],
)
def test_bad_scores_are_refused_and_nothing_is_saved(stubs: Stubs, scores: dict[str, float], reason: str) -> None:
    run_id = open_run(stubs).state.run.run_id
    code, found, _ = refusal(stubs.runs.SaveCheckpoint, _save_request(run_id, 5, scores))
    assert (code, found) == (Code.INVALID_ARGUMENT, reason)
    assert not state(stubs, run_id).HasField("checkpoint")


def _save_request(run_id: str, step: int, scores: dict[str, float]) -> runs_pb2.SaveCheckpointRequest:
    return runs_pb2.SaveCheckpointRequest(
        run_id=run_id,
        attempt=1,
        step=step,
        handle=common_pb2.StateHandle(backend="local", uri=f"file:///ckpt/1/{step}", fidelity="weights"),
        scores=scores,
    )


def test_best_checkpoint_on_the_runs_objective_or_another(stubs: Stubs) -> None:
    run_id = scored_run(stubs, {10: 0.5, 20: 0.25, 30: 0.375})
    best = stubs.runs.BestCheckpoint(runs_pb2.BestCheckpointRequest(run_id=run_id), timeout=10)
    assert (best.checkpoint.step, best.score, best.objective) == (20, 0.25, MIN_LOSS)
    assert state(stubs, run_id).best_checkpoint.step == 20
    highest = runs_pb2.Objective(metric="eval_loss", mode=runs_pb2.OBJECTIVE_MODE_MAX)
    worst = stubs.runs.BestCheckpoint(runs_pb2.BestCheckpointRequest(run_id=run_id, objective=highest), timeout=10)
    assert (worst.checkpoint.step, worst.score, worst.objective) == (10, 0.5, highest)
    unknown = runs_pb2.Objective(metric="bleu", mode=runs_pb2.OBJECTIVE_MODE_MAX)
    code, reason, _ = refusal(
        stubs.runs.BestCheckpoint, runs_pb2.BestCheckpointRequest(run_id=run_id, objective=unknown)
    )
    assert (code, reason) == (Code.NOT_FOUND, "NO_SCORED_CHECKPOINT")


def test_best_checkpoint_leaves_superseded_ones_out_unless_asked(stubs: Stubs) -> None:
    run_id = scored_run(stubs, {10: 0.5, 20: 0.25})
    stubs.runs.StartAttempt(
        runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2", resume_from_step=10), timeout=10
    )
    live = stubs.runs.BestCheckpoint(runs_pb2.BestCheckpointRequest(run_id=run_id), timeout=10)
    assert (live.checkpoint.step, live.checkpoint.superseded) == (10, False)
    every = stubs.runs.BestCheckpoint(
        runs_pb2.BestCheckpointRequest(run_id=run_id, include_superseded=True), timeout=10
    )
    assert (every.checkpoint.step, every.checkpoint.superseded, every.score) == (20, True, 0.25)


def test_a_run_without_objective_has_no_best_checkpoint(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    save(stubs, run_id, 5, {"eval_loss": 0.75})
    assert not state(stubs, run_id).HasField("best_checkpoint")
    code, reason, _ = refusal(stubs.runs.BestCheckpoint, runs_pb2.BestCheckpointRequest(run_id=run_id))
    assert (code, reason) == (Code.NOT_FOUND, "NO_SCORED_CHECKPOINT")
    unknown = runs_pb2.BestCheckpointRequest(run_id="00000000-0000-0000-0000-000000000000")
    assert refusal(stubs.runs.BestCheckpoint, unknown)[:2] == (Code.NOT_FOUND, "RUN_NOT_FOUND")


# RecordDataset.


def test_a_dataset_is_recorded_once_and_listed_in_the_state(stubs: Stubs) -> None:
    run_id = open_run(stubs, attempt=False).state.run.run_id  # Before the first attempt.
    recorded = dataset(tokens=480_000, source_uri="hf://org/data@main")
    recorded.report.update({"rows_dropped": {"too_long": 3}, "gate": "passed"})
    first = stubs.runs.RecordDataset(runs_pb2.RecordDatasetRequest(run_id=run_id, dataset=recorded), timeout=10)
    again = stubs.runs.RecordDataset(runs_pb2.RecordDatasetRequest(run_id=run_id, dataset=recorded), timeout=10)
    assert (first.duplicate, again.duplicate, again.position) == (False, True, first.position)
    other = dataset(rows=7)
    code, reason, _ = refusal(stubs.runs.RecordDataset, runs_pb2.RecordDatasetRequest(run_id=run_id, dataset=other))
    assert (code, reason) == (Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")
    evaluation = dataset(role=runs_pb2.DATASET_ROLE_EVAL, rows=300)  # The same rows in another role.
    stubs.runs.RecordDataset(runs_pb2.RecordDatasetRequest(run_id=run_id, dataset=evaluation), timeout=10)
    listed = state(stubs, run_id, first.position + 1).datasets
    assert [(d.role, d.digest, d.format, d.rows) for d in listed] == [
        (runs_pb2.DATASET_ROLE_TRAIN, DIGEST, "sft", 1_200),
        (runs_pb2.DATASET_ROLE_EVAL, DIGEST, "sft", 300),
    ]
    assert listed[0].tokens == 480_000 and not listed[1].HasField("tokens")
    assert listed[0].source_uri == "hf://org/data@main" and listed[0].HasField("recorded_at")
    assert listed[0].report["gate"] == "passed" and listed[0].report["rows_dropped"]["too_long"] == 3


@pytest.mark.parametrize(
    ("fields", "code", "reason"),
    [
        ({"role": runs_pb2.DATASET_ROLE_UNSPECIFIED}, Code.INVALID_ARGUMENT, "MISSING_FIELD"),
        ({"role": 5}, Code.INVALID_ARGUMENT, "INVALID_FIELD"),
        ({"digest": "sha256:abc"}, Code.INVALID_ARGUMENT, "INVALID_DIGEST"),
        ({"format": "s f t"}, Code.INVALID_ARGUMENT, "INVALID_FIELD"),
        ({"rows": -1}, Code.INVALID_ARGUMENT, "OUT_OF_RANGE"),
        ({"tokens": -1}, Code.INVALID_ARGUMENT, "OUT_OF_RANGE"),
    ],
    ids=["no role", "unknown role", "bad digest", "bad format", "negative rows", "negative tokens"],
)
def test_bad_datasets_are_refused_and_nothing_is_recorded(
    stubs: Stubs, fields: dict[str, Any], code: grpc.StatusCode, reason: str
) -> None:
    run_id = open_run(stubs).state.run.run_id
    request = runs_pb2.RecordDatasetRequest(run_id=run_id, dataset=dataset(**fields))
    assert refusal(stubs.runs.RecordDataset, request)[:2] == (code, reason)
    assert list(state(stubs, run_id).datasets) == []


def test_a_dataset_without_its_message_names_the_missing_role(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    code, reason, metadata = refusal(stubs.runs.RecordDataset, runs_pb2.RecordDatasetRequest(run_id=run_id))
    assert (code, reason, metadata["field"]) == (Code.INVALID_ARGUMENT, "MISSING_FIELD", "dataset.role")


@pytest.mark.parametrize("report_bytes", [80 * 1024, DOCUMENT_REQUEST_BYTES_MAX + 1_024])
def test_a_report_over_its_limit_is_refused(stubs: Stubs, report_bytes: int) -> None:
    """Over 64 KiB as JSON the ledger refuses it; over the request limit of a document-carrying
    request, the server refuses it before decoding it. Either way DOCUMENT_TOO_LARGE."""
    run_id = open_run(stubs).state.run.run_id
    recorded = dataset()
    recorded.report.update({f"k{n}": "x" * 1_000 for n in range(report_bytes // 1_000)})
    request = runs_pb2.RecordDatasetRequest(run_id=run_id, dataset=recorded)
    assert refusal(stubs.runs.RecordDataset, request)[:2] == (Code.INVALID_ARGUMENT, "DOCUMENT_TOO_LARGE")


# RetractRun.


def test_retraction_hides_the_run_refuses_writes_and_keeps_its_history(stubs: Stubs) -> None:
    name = f"retracted-{key()}"
    run_id = open_run(stubs, cap=10_000, name=name).state.run.run_id
    stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(3))), timeout=10)
    held = spend_pb2.ReserveRequest(account=run_id, reservation_id="before", amount_usd_micro=100)
    held.basis.price_sheet = "sheet"
    stubs.spend.Reserve(held, timeout=10)
    code, reason, metadata = refusal(stubs.runs.RetractRun, runs_pb2.RetractRunRequest(run_id=run_id))
    assert (code, reason, metadata["field"]) == (Code.INVALID_ARGUMENT, "MISSING_FIELD", "reason")

    request = runs_pb2.RetractRunRequest(run_id=run_id, reason="trained on the eval split")
    first = stubs.runs.RetractRun(request, timeout=10)
    again = stubs.runs.RetractRun(request, timeout=10)
    assert (first.duplicate, again.duplicate, again.position) == (False, True, first.position)
    other = runs_pb2.RetractRunRequest(run_id=run_id, reason="another reason")
    assert refusal(stubs.runs.RetractRun, other)[:2] == (Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")

    shown = state(stubs, run_id, first.position)
    assert shown.run.retraction.reason == "trained on the eval split" and shown.run.retraction.HasField("retracted_at")
    assert shown.last_step == 2  # Its history stays.
    refused_writes = [
        (stubs.runs.AppendSteps, runs_pb2.AppendStepsRequest(batch=batch(run_id, range(3, 5)))),
        (stubs.runs.SaveCheckpoint, _save_request(run_id, 4, {})),
        (stubs.runs.RecordDataset, runs_pb2.RecordDatasetRequest(run_id=run_id, dataset=dataset())),
        (stubs.runs.StartAttempt, runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2")),
        (stubs.spend.Reserve, spend_pb2.ReserveRequest(account=run_id, reservation_id="after", amount_usd_micro=1)),
    ]
    for call, write in refused_writes:
        assert refusal(call, write)[:2] == (Code.FAILED_PRECONDITION, "RUN_RETRACTED"), call
    # A hold taken before is still settled: truth is never refused.
    committed = stubs.spend.Commit(
        spend_pb2.CommitRequest(account=run_id, reservation_id="before", actual_usd_micro=80), timeout=10
    )
    assert committed.account.committed_usd_micro == 80

    listed = runs_pb2.ListRunsRequest(name_contains=name, min_position=committed.position)
    assert [r.run_id for r in stubs.runs.ListRuns(listed, timeout=10).runs] == []
    listed.include_retracted = True
    summaries = stubs.runs.ListRuns(listed, timeout=10).runs
    assert [(r.run_id, r.retracted, r.last_step) for r in summaries] == [(run_id, True, 2)]


def test_an_unknown_run_cannot_be_retracted(stubs: Stubs) -> None:
    request = runs_pb2.RetractRunRequest(run_id="00000000-0000-0000-0000-000000000000", reason="r")
    assert refusal(stubs.runs.RetractRun, request)[:2] == (Code.NOT_FOUND, "RUN_NOT_FOUND")


# PlanPrune and DeleteCheckpoint.


def prune_pages(stubs: Stubs, run_id: str, *, keep_last: int = 0, page_size: int = 0) -> list[list[Any]]:
    """Every page of the run's retention plan, each as [(step, attempt, delete, kept_because)]."""
    pages, token = [], ""
    while True:
        request = runs_pb2.PlanPruneRequest(run_id=run_id, keep_last=keep_last, page_size=page_size, page_token=token)
        page = stubs.runs.PlanPrune(request, timeout=10)
        pages.append([(e.checkpoint.step, e.checkpoint.attempt, e.delete, list(e.kept_because)) for e in page.entries])
        token = page.next_page_token
        if not token:
            return pages


def test_plan_prune_pages_keep_what_matters(stubs: Stubs) -> None:
    run_id = scored_run(stubs, {10: 0.5, 20: 0.25, 30: 0.375, 40: 0.45, 50: 0.5})
    assert prune_pages(stubs, run_id, keep_last=1, page_size=2) == [
        [(10, 1, True, []), (20, 1, False, ["best"])],
        [(30, 1, True, []), (40, 1, True, [])],
        [(50, 1, False, ["resume", "recent"])],
    ]
    assert prune_pages(stubs, run_id, keep_last=3) == [
        [
            (10, 1, True, []),
            (20, 1, False, ["best"]),
            (30, 1, False, ["recent"]),
            (40, 1, False, ["recent"]),
            (50, 1, False, ["resume", "recent"]),
        ]
    ]


def test_plan_prune_refusals(stubs: Stubs) -> None:
    run_id = scored_run(stubs, {10: 0.5})
    bad_token = runs_pb2.PlanPruneRequest(run_id=run_id, page_token="bm90IGEgdG9rZW4=")
    assert refusal(stubs.runs.PlanPrune, bad_token)[:2] == (Code.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN")
    negative = runs_pb2.PlanPruneRequest(run_id=run_id, keep_last=-1)
    assert refusal(stubs.runs.PlanPrune, negative)[:2] == (Code.INVALID_ARGUMENT, "OUT_OF_RANGE")
    too_large = runs_pb2.PlanPruneRequest(run_id=run_id, page_size=10_001)
    assert refusal(stubs.runs.PlanPrune, too_large)[:2] == (Code.INVALID_ARGUMENT, "PAGE_SIZE_TOO_LARGE")
    unknown = runs_pb2.PlanPruneRequest(run_id="00000000-0000-0000-0000-000000000000")
    assert refusal(stubs.runs.PlanPrune, unknown)[:2] == (Code.NOT_FOUND, "RUN_NOT_FOUND")


def test_delete_checkpoint_refuses_protected_ones_and_records_the_rest_once(stubs: Stubs) -> None:
    run_id = scored_run(stubs, {10: 0.5, 20: 0.25, 30: 0.375})
    resume = runs_pb2.DeleteCheckpointRequest(run_id=run_id, attempt=1, step=30, reason="space")
    code, reason, metadata = refusal(stubs.runs.DeleteCheckpoint, resume)
    assert (code, reason, metadata["protected_by"]) == (Code.FAILED_PRECONDITION, "CHECKPOINT_PROTECTED", "resume")
    best = runs_pb2.DeleteCheckpointRequest(run_id=run_id, attempt=1, step=20)
    assert refusal(stubs.runs.DeleteCheckpoint, best)[2]["protected_by"] == "best"
    missing = runs_pb2.DeleteCheckpointRequest(run_id=run_id, attempt=1, step=11)
    assert refusal(stubs.runs.DeleteCheckpoint, missing)[:2] == (Code.NOT_FOUND, "CHECKPOINT_NOT_FOUND")

    request = runs_pb2.DeleteCheckpointRequest(run_id=run_id, attempt=1, step=10, reason="space")
    first = stubs.runs.DeleteCheckpoint(request, timeout=10)
    again = stubs.runs.DeleteCheckpoint(request, timeout=10)
    assert (first.duplicate, again.duplicate, again.position) == (False, True, first.position)
    listed = stubs.runs.ListCheckpoints(
        runs_pb2.ListCheckpointsRequest(run_id=run_id, min_position=first.position), timeout=10
    ).checkpoints
    assert [(c.step, c.HasField("deleted_at")) for c in listed] == [(10, True), (20, False), (30, False)]
    assert prune_pages(stubs, run_id)[0][0] == (10, 1, False, ["deleted"])
    # A deleted checkpoint is never a resume point.
    resumed = runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2", resume_from_step=10)
    assert refusal(stubs.runs.StartAttempt, resumed)[:2] == (Code.FAILED_PRECONDITION, "CHECKPOINT_DELETED")


# Register with a source checkpoint.


def test_register_from_a_checkpoint_checks_it_records_it_and_protects_it(stubs: Stubs) -> None:
    run_id = open_run(stubs, objective=MIN_LOSS).state.run.run_id
    save(stubs, run_id, 10, {"eval_loss": 0.25}, digest=DIGEST)
    save(stubs, run_id, 20, {"eval_loss": 0.5}, digest=OTHER_DIGEST)
    save(stubs, run_id, 30, {"eval_loss": 0.75})
    family = f"family-{key()}"

    def register(source: registry_pb2.SourceCheckpoint, **fields: Any) -> registry_pb2.RegisterRequest:
        return registry_pb2.RegisterRequest(
            family=family, artifact_uri="s3://models/m", digest=DIGEST, source_checkpoint=source, **fields
        )

    wrong = registry_pb2.SourceCheckpoint(run_id=run_id, step=20, checkpoint_digest=DIGEST)
    code, reason, metadata = refusal(stubs.registry.Register, register(wrong))
    assert (code, reason, metadata["checkpoint_digest"]) == (
        Code.FAILED_PRECONDITION,
        "CHECKPOINT_DIGEST_MISMATCH",
        OTHER_DIGEST,
    )
    missing = registry_pb2.SourceCheckpoint(run_id=run_id, step=15, checkpoint_digest=DIGEST)
    assert refusal(stubs.registry.Register, register(missing))[:2] == (Code.NOT_FOUND, "CHECKPOINT_NOT_FOUND")
    source = registry_pb2.SourceCheckpoint(run_id=run_id, step=20, attempt=1, checkpoint_digest=OTHER_DIGEST)
    elsewhere = register(source, source_run_id=run_id, source_step=10)
    code, reason, _ = refusal(stubs.registry.Register, elsewhere)
    assert (code, reason) == (Code.INVALID_ARGUMENT, "INVALID_FIELD")

    first = stubs.registry.Register(register(source), timeout=10)
    again = stubs.registry.Register(register(source), timeout=10)
    assert (again.duplicate, again.position, again.version) == (True, first.position, first.version)
    version = stubs.registry.ListVersions(
        registry_pb2.ListVersionsRequest(family=family, min_position=first.position), timeout=10
    ).versions[0]
    assert (version.source_run_id, version.source_step) == (run_id, 20)
    assert version.source_checkpoint == source and not version.source_retracted
    assert prune_pages(stubs, run_id) == [
        [(10, 1, False, ["best"]), (20, 1, False, ["registered"]), (30, 1, False, ["resume"])]
    ]
    protected = runs_pb2.DeleteCheckpointRequest(run_id=run_id, attempt=1, step=20)
    assert refusal(stubs.runs.DeleteCheckpoint, protected)[2]["protected_by"] == "registered"

    retracted = stubs.runs.RetractRun(runs_pb2.RetractRunRequest(run_id=run_id, reason="bad data"), timeout=10)
    flagged = stubs.registry.ListVersions(
        registry_pb2.ListVersionsRequest(family=family, min_position=retracted.position), timeout=10
    ).versions[0]
    assert flagged.source_retracted
    later = register(registry_pb2.SourceCheckpoint(run_id=run_id, step=10, checkpoint_digest=DIGEST))
    later.digest = OTHER_DIGEST
    assert refusal(stubs.registry.Register, later)[:2] == (Code.FAILED_PRECONDITION, "RUN_RETRACTED")


# WatchRun: each of them is a state update.


def test_watch_run_carries_datasets_plans_deletions_and_the_retraction(stubs: Stubs) -> None:
    run_id = scored_run(stubs, {10: 0.5, 20: 0.25, 30: 0.375})
    run_key = state(stubs, run_id).run.run_key
    call = stubs.runs.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), timeout=10)
    updates = iter(call)
    first = next(updates)
    assert first.event_type == "state" and first.state.best_checkpoint.step == 20

    def next_change() -> tuple[str, list[str], runs_pb2.RunState]:
        update = next(updates)
        return update.event_type, sorted(update.state_mask.paths), update.state

    stubs.runs.RecordDataset(runs_pb2.RecordDatasetRequest(run_id=run_id, dataset=dataset()), timeout=10)
    event_type, paths, changed = next_change()
    assert event_type.endswith("DatasetRecorded")
    assert "datasets" in paths and [d.digest for d in changed.datasets] == [DIGEST]
    stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=run_key, max_steps=500), timeout=10)
    event_type, paths, changed = next_change()
    assert event_type.endswith("PlanChanged") and "progress" in paths and changed.progress.max_steps == 500
    stubs.runs.DeleteCheckpoint(runs_pb2.DeleteCheckpointRequest(run_id=run_id, attempt=1, step=10), timeout=10)
    event_type, paths, _ = next_change()
    # The deleted checkpoint is neither the resume point nor the best: those fields stay as they were.
    assert event_type.endswith("CheckpointDeleted") and "checkpoint" not in paths and "best_checkpoint" not in paths
    stubs.runs.RetractRun(runs_pb2.RetractRunRequest(run_id=run_id, reason="done with it"), timeout=10)
    event_type, paths, changed = next_change()
    assert (
        event_type.endswith("Retracted")
        and "run.retraction" in paths
        and changed.run.retraction.reason == "done with it"
    )
    call.cancel()
