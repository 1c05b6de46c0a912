"""The Runs RPCs as client methods (see clients.methods); each takes `timeout_s`, the per-try
deadline (the client's default when None), and answers with a typed result of clients.models.

A run's objective is given as a (metric, mode) tuple, mode "min" (lower is better) or "max"; a
dataset's role as "train" or "eval". Scores are a dict of metric name to a finite float."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from clients import codec
from clients import runs_replies as replies
from clients.methods import Doc, Transport, new_id, reply
from clients.models import (
    AppendReceipt,
    BestCheckpoint,
    CheckpointPage,
    CheckpointReceipt,
    DatasetReceipt,
    DeleteCheckpointReceipt,
    FinishReceipt,
    HeartbeatReceipt,
    LinkSessionReceipt,
    MetricStats,
    OpenRunReceipt,
    PruneEntry,
    PrunePage,
    RetractReceipt,
    RunMetrics,
    RunPage,
    RunSourceCheckpoint,
    RunState,
    SeriesPage,
    StartAttemptReceipt,
    SummaryReceipt,
    WatchUpdate,
)
from trainledger.v1 import common_pb2, runs_pb2

__all__ = ["RunsMethods"]


class RunsMethods(Transport):
    """The Runs RPCs: runs, attempts, steps, checkpoints, finish, state, series, live tail."""

    def open_run(
        self,
        *,
        run_key: str,
        name: str = "",
        spec: Doc | None = None,
        cap_usd_micro: int | None = None,
        parent_account: str = "",
        max_steps: int | None = None,
        objective: tuple[str, str] | None = None,
        timeout_s: float | None = None,
        source_checkpoint: RunSourceCheckpoint | Mapping[str, Any] | None = None,
    ) -> OpenRunReceipt:
        """Open a run by its key, or find the existing one: its state, whether it was created, the
        position. `max_steps` is the run's plan (a new value for an existing run changes it);
        `objective` (metric, "min" | "max") ranks its checkpoints and never changes (another one
        for an existing run: OBJECTIVE_DIFFERS); None leaves either as it is.
        `source_checkpoint` (RunSourceCheckpoint or {"run_id", "step", "uri"}) is the checkpoint of
        another run this one starts from (state.source; the source lists it in state.children):
        NotFound (RUN_NOT_FOUND, CHECKPOINT_NOT_FOUND) when it does not exist."""
        request = runs_pb2.OpenRunRequest(
            run_key=run_key,
            name=name,
            spec=codec.struct(spec or {}),
            cap_usd_micro=cap_usd_micro,
            parent_account=parent_account,
            max_steps=max_steps,
            objective=codec.objective(objective),
            source_checkpoint=codec.run_source_checkpoint(source_checkpoint),
        )
        return self._ask("Runs", "OpenRun", request, reply(OpenRunReceipt), timeout_s=timeout_s)

    def start_attempt(
        self,
        *,
        run_id: str,
        attempt_id: str | None = None,
        label: str = "",
        resume_from_step: int | None = None,
        max_steps: int | None = None,
        lease_s: int | None = None,
        timeout_s: float | None = None,
    ) -> StartAttemptReceipt:
        """Start a new attempt (fencing the previous one): its number, position, duplicate and the
        state. `max_steps` is the run's plan from now on (None leaves it); `lease_s` the attempt's
        lease (None: the server's default, 60 s), renewed by its writes and by `heartbeat`."""
        request = runs_pb2.StartAttemptRequest(
            run_id=run_id,
            attempt_id=attempt_id or new_id(),
            label=label,
            resume_from_step=resume_from_step,
            max_steps=max_steps,
            lease_s=lease_s,
        )
        return self._ask("Runs", "StartAttempt", request, reply(StartAttemptReceipt), timeout_s=timeout_s)

    def heartbeat(self, *, run_id: str, attempt: int, timeout_s: float | None = None) -> HeartbeatReceipt:
        """Renew the lease of the run's current attempt while it writes nothing else (a lost
        attempt is running again). Refused as the attempt's writes are (ATTEMPT_SUPERSEDED ...)."""
        request = runs_pb2.HeartbeatRequest(run_id=run_id, attempt=attempt)
        return self._ask("Runs", "Heartbeat", request, reply(HeartbeatReceipt), timeout_s=timeout_s)

    def append_steps(
        self,
        *,
        run_id: str,
        attempt: int,
        steps: Sequence[int],
        tokens: Sequence[int] | None = None,
        usd_micro: Sequence[int] | None = None,
        metrics: Doc | None = None,
        timeout_s: float | None = None,
    ) -> AppendReceipt:
        """Append one column-wise batch: position, duplicate, last_step."""
        batch = codec.step_batch(
            run_id=run_id, attempt=attempt, steps=steps, tokens=tokens, usd_micro=usd_micro, metrics=metrics
        )
        return self.append_batch(batch=batch, timeout_s=timeout_s)

    def append_batch(self, *, batch: common_pb2.StepBatch, timeout_s: float | None = None) -> AppendReceipt:
        """Append a prebuilt StepBatch message (as kept in an outbox): as append_steps."""
        return self._ask(
            "Runs", "AppendSteps", runs_pb2.AppendStepsRequest(batch=batch), reply(AppendReceipt), timeout_s=timeout_s
        )

    def save_checkpoint(
        self,
        *,
        run_id: str,
        attempt: int,
        step: int,
        uri: str,
        backend: str,
        fidelity: str = "weights",
        sampler_uri: str = "",
        final: bool = False,
        expires_at: datetime | None = None,
        digest: str = "",
        scores: Mapping[str, float] | None = None,
        timeout_s: float | None = None,
    ) -> CheckpointReceipt:
        """Record a durable checkpoint: position, duplicate. `scores` are the evaluation scores
        measured at it (name -> finite value), part of what a retry must repeat."""
        request = runs_pb2.SaveCheckpointRequest(
            run_id=run_id,
            attempt=attempt,
            step=step,
            sampler_uri=sampler_uri,
            final=final,
            digest=digest,
            handle={"backend": backend, "uri": uri, "fidelity": fidelity},
            expires_at=codec.timestamp(expires_at),
            scores=scores or {},
        )
        return self._ask("Runs", "SaveCheckpoint", request, reply(CheckpointReceipt), timeout_s=timeout_s)

    def finish_run(
        self,
        *,
        run_id: str,
        attempt: int,
        status: str = "done",
        summary: Doc | None = None,
        error: str = "",
        timeout_s: float | None = None,
    ) -> FinishReceipt:
        """Finish the run with "done" | "failed" | "stopped": the position."""
        request = runs_pb2.FinishRunRequest(
            run_id=run_id,
            attempt=attempt,
            status=codec.status(status),
            summary=codec.struct(summary or {}),
            error=error,
        )
        return self._ask("Runs", "FinishRun", request, reply(FinishReceipt), timeout_s=timeout_s)

    def note_summary(self, *, run_id: str, summary: Doc, timeout_s: float | None = None) -> SummaryReceipt:
        """Merge `summary` into the run's summary: the position."""
        request = runs_pb2.NoteSummaryRequest(run_id=run_id, summary=codec.struct(summary))
        return self._ask("Runs", "NoteSummary", request, reply(SummaryReceipt), timeout_s=timeout_s)

    def record_report(self, *, run_id: str, kind: str, report: Doc, timeout_s: float | None = None) -> SummaryReceipt:
        """Record a "holdout", "delta" or "notes" report on the run (clients.reports makes them):
        the position. Also after the run finished; the same report again is a duplicate."""
        request = runs_pb2.RecordReportRequest(run_id=run_id, kind=kind, report=codec.struct(report))
        return self._ask("Runs", "RecordReport", request, reply(SummaryReceipt), timeout_s=timeout_s)

    def link_session(
        self, *, run_id: str, provider: str, session_id: str, attempt: int = 0, timeout_s: float | None = None
    ) -> LinkSessionReceipt:
        """Link the run to a provider's session, so the provider's bill lines for that session are
        the run's even when they carry no run id. Linking again is a duplicate."""
        request = runs_pb2.LinkSessionRequest(run_id=run_id, provider=provider, session_id=session_id, attempt=attempt)
        return self._ask("Runs", "LinkSession", request, reply(LinkSessionReceipt), timeout_s=timeout_s)

    def get_run_state(self, *, run_id: str, min_position: int = 0, timeout_s: float | None = None) -> RunState:
        """The RunState (run, attempts, current_attempt, checkpoint, resume, last_step, spend ...)."""
        request = runs_pb2.GetRunStateRequest(run_id=run_id, min_position=min_position)
        return self._ask("Runs", "GetRunState", request, replies.run_state, timeout_s=timeout_s)

    def list_runs(
        self,
        *,
        page_size: int = 0,
        page_token: str = "",
        status: str = "",
        name_contains: str = "",
        run_id_prefix: str = "",
        account: str = "",
        include_retracted: bool = False,
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> RunPage:
        """A page of runs, newest first; pass next_page_token back for the next page. Filters:
        status, a part of the name (case-insensitive), an id prefix, an account the runs' spend
        accounts lie under. Retracted runs are left out unless `include_retracted`."""
        request = runs_pb2.ListRunsRequest(
            page_size=page_size,
            page_token=page_token,
            status=codec.status(status),
            name_contains=name_contains,
            run_id_prefix=run_id_prefix,
            account=account,
            include_retracted=include_retracted,
            min_position=min_position,
        )
        return self._ask("Runs", "ListRuns", request, reply(RunPage), timeout_s=timeout_s)

    def get_metrics(self, *, run_id: str, min_position: int = 0, timeout_s: float | None = None) -> list[MetricStats]:
        """Every metric of the run's live line of steps, by name: count, first and last step, the
        last value, min and max (read a page at a time, each within the deadline)."""
        request = runs_pb2.GetMetricsRequest(run_id=run_id, min_position=min_position)
        return self._all_pages(
            "Runs", "GetMetrics", request, reply(RunMetrics), replies.metrics_of_page, timeout_s=timeout_s
        )

    def list_checkpoints(
        self,
        *,
        run_id: str,
        page_size: int = 0,
        page_token: str = "",
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> CheckpointPage:
        """A page of the run's checkpoints in (step, attempt) order, superseded ones (of an
        attempt that a later one resumed before them) and expired ones included; pass
        next_page_token back for the next page."""
        request = runs_pb2.ListCheckpointsRequest(
            run_id=run_id, page_size=page_size, page_token=page_token, min_position=min_position
        )
        return self._ask("Runs", "ListCheckpoints", request, reply(CheckpointPage), timeout_s=timeout_s)

    def best_checkpoint(
        self,
        *,
        run_id: str,
        metric: str = "",
        mode: str = "",
        include_superseded: bool = False,
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> BestCheckpoint:
        """The usable checkpoint (live, not deleted, not expired) that scores best on `metric`
        ("min" or "max" is better), across every attempt: checkpoint, score, metric, mode. No
        metric means the run's own objective. Superseded checkpoints count with
        `include_superseded`. Raises NotFound (NO_SCORED_CHECKPOINT) when none has the score."""
        request = runs_pb2.BestCheckpointRequest(
            run_id=run_id,
            objective=codec.objective((metric, mode)) if metric or mode else None,
            include_superseded=include_superseded,
            min_position=min_position,
        )
        return self._ask("Runs", "BestCheckpoint", request, replies.best_checkpoint, timeout_s=timeout_s)

    def retract_run(self, *, run_id: str, reason: str, timeout_s: float | None = None) -> RetractReceipt:
        """Retract a run (operators): left out of lists, refused every further write (RunRetracted),
        its history kept. Retracting again with the same reason is a duplicate."""
        request = runs_pb2.RetractRunRequest(run_id=run_id, reason=reason)
        return self._ask("Runs", "RetractRun", request, reply(RetractReceipt), timeout_s=timeout_s)

    def record_dataset(
        self,
        *,
        run_id: str,
        role: str,
        digest: str,
        format: str,
        rows: int,
        tokens: int | None = None,
        source_uri: str = "",
        report: Doc | None = None,
        timeout_s: float | None = None,
    ) -> DatasetReceipt:
        """Record a dataset the run trains ("train") or evaluates ("eval") on: the digest of its
        rows ("sha256:" + 64 hex), its format ("sft", "dpo", "chat" ...), row and token counts,
        where it came from and the export report (at most 64 KiB as JSON). The same role and
        digest again is a duplicate."""
        request = runs_pb2.RecordDatasetRequest(
            run_id=run_id,
            dataset=runs_pb2.Dataset(
                role=codec.dataset_role(role),
                digest=digest,
                format=format,
                rows=rows,
                tokens=tokens,
                source_uri=source_uri,
                report=codec.struct(report),
            ),
        )
        return self._ask("Runs", "RecordDataset", request, reply(DatasetReceipt), timeout_s=timeout_s)

    def plan_prune(
        self,
        *,
        run_id: str,
        keep_last: int = 0,
        min_position: int = 0,
        page_size: int = 0,
        timeout_s: float | None = None,
    ) -> list[PruneEntry]:
        """What checkpoint retention would do with each of the run's checkpoints, in (step,
        attempt) order: delete it, or why it is kept (the live resume point, the best on the run's
        objective, a registered version's source, within the newest `keep_last`, already deleted,
        expired). Every page is read, each within the deadline (`page_size` entries a page; 0:
        the server's 1,000)."""
        request = runs_pb2.PlanPruneRequest(
            run_id=run_id, keep_last=keep_last, min_position=min_position, page_size=page_size
        )
        return self._all_pages(
            "Runs", "PlanPrune", request, reply(PrunePage), replies.entries_of_page, timeout_s=timeout_s
        )

    def delete_checkpoint(
        self, *, run_id: str, attempt: int, step: int, reason: str = "", timeout_s: float | None = None
    ) -> DeleteCheckpointReceipt:
        """Record that a checkpoint's state was deleted from its storage (after deleting it): it
        is never offered for resume again. Raises CheckpointProtected for a protected checkpoint
        (`metadata["protected_by"]`); deleting it again is a duplicate."""
        request = runs_pb2.DeleteCheckpointRequest(run_id=run_id, attempt=attempt, step=step, reason=reason)
        return self._ask("Runs", "DeleteCheckpoint", request, reply(DeleteCheckpointReceipt), timeout_s=timeout_s)

    def get_series(
        self,
        *,
        run_id: str,
        from_step: int = 0,
        page_size: int = 0,
        metrics: Sequence[str] = (),
        include_superseded: bool = False,
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> SeriesPage:
        """One page of the step series, column-wise; `next_from_step` is None on the last page."""
        request = runs_pb2.GetSeriesRequest(
            run_id=run_id,
            from_step=from_step,
            page_size=page_size,
            metrics=metrics,
            include_superseded=include_superseded,
            min_position=min_position,
        )
        return self._ask("Runs", "GetSeries", request, reply(SeriesPage), timeout_s=timeout_s)

    def watch_run(
        self, *, run_id: str, from_position: int = 0, timeout_s: float | None = None
    ) -> Iterator[WatchUpdate]:
        """A live tail of the run's events; no deadline unless `timeout_s` is given. Each item is a
        WatchUpdate (position, event_type, steps, state): the first ("state") holds the run's state,
        the later ones the event with the whole state as it stands after it (the server sends only
        what changed; the spec is left out: get_run_state has it). A watcher that falls too far
        behind is dropped with LedgerClientError reason WATCHER_TOO_SLOW, whose
        metadata["next_position"] is where to watch again from."""
        request = runs_pb2.WatchRunRequest(run_id=run_id, from_position=from_position)
        return self._stream("Runs", "WatchRun", request, replies.WatchedState().apply, timeout_s=timeout_s)
