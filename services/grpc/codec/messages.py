"""Messages built from the ledger's read models (ledger.views.models) and events.

The read models carry the messages' field names, so each message is the model's fields with the
wire's own types: RunStatus for a status name, ObjectiveMode and DatasetRole for theirs,
Timestamp for a datetime, Struct for a document, CostBasis for a basis.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ledger.views import models
from services.grpc.codec.values import (
    basis_message,
    dataset_role_enum,
    objective_message,
    status_enum,
    struct,
    timestamp,
)
from trainledger.v1 import common_pb2, events_pb2, registry_pb2, runs_pb2, spend_pb2

__all__ = [
    "run_state",
    "run_summary",
    "checkpoint",
    "best_checkpoint",
    "prune_entry",
    "series",
    "account",
    "reservation",
    "bill_totals",
    "reconcile",
    "model_version",
    "promotion",
    "verdict",
    "alias",
    "retirement",
    "event",
    "verification",
]

_json = msgspec.json.Encoder()


def _handle(value: models.StateHandle | None) -> common_pb2.StateHandle | None:
    if value is None:
        return None
    return common_pb2.StateHandle(backend=value.backend, uri=value.uri, fidelity=value.fidelity)


def _checkpoint(value: models.Checkpoint) -> runs_pb2.Checkpoint:
    return runs_pb2.Checkpoint(
        attempt=value.attempt,
        step=value.step,
        handle=_handle(value.handle),
        sampler_uri=value.sampler_uri,
        final=value.final,
        saved_at=timestamp(value.saved_at),
        expires_at=timestamp(value.expires_at),
        digest=value.digest,
        superseded=value.superseded,
        scores=value.scores,
        deleted_at=timestamp(value.deleted_at),
        expired=value.expired,
    )


def checkpoint(value: models.Checkpoint) -> runs_pb2.Checkpoint:
    return _checkpoint(value)


def best_checkpoint(value: models.BestCheckpoint) -> runs_pb2.BestCheckpointResponse:
    return runs_pb2.BestCheckpointResponse(
        checkpoint=_checkpoint(value.checkpoint),
        score=value.score,
        objective=objective_message(value.metric, value.mode),
    )


def prune_entry(value: models.PruneEntry) -> runs_pb2.PruneEntry:
    return runs_pb2.PruneEntry(
        checkpoint=_checkpoint(value.checkpoint), delete=value.delete, kept_because=value.kept_because
    )


def _progress(value: models.Progress) -> runs_pb2.Progress:
    return runs_pb2.Progress(
        max_steps=value.max_steps,
        step=value.step,
        fraction=value.fraction,
        steps_per_second=value.steps_per_second,
        eta=timestamp(value.eta),
    )


def _dataset(value: models.Dataset) -> runs_pb2.Dataset:
    return runs_pb2.Dataset(
        role=dataset_role_enum(value.role),
        digest=value.digest,
        format=value.format,
        rows=value.rows,
        tokens=value.tokens,
        source_uri=value.source_uri,
        report=struct(value.report),
        recorded_at=timestamp(value.recorded_at),
    )


def _retraction(value: models.Retraction | None) -> runs_pb2.Retraction | None:
    if value is None:
        return None
    return runs_pb2.Retraction(
        reason=value.reason, retracted_at=timestamp(value.retracted_at), principal=value.principal
    )


def _run_info(run: models.RunInfo) -> runs_pb2.RunInfo:
    objective = run.objective
    return runs_pb2.RunInfo(
        run_id=run.run_id,
        run_key=run.run_key,
        name=run.name,
        status=status_enum(run.status),
        spec=struct(run.spec),
        summary=struct(run.summary),
        error=run.error,
        opened_at=timestamp(run.opened_at),
        finished_at=timestamp(run.finished_at),
        objective=None if objective is None else objective_message(objective.metric, objective.mode),
        retraction=_retraction(run.retraction),
    )


def _attempt(value: models.Attempt) -> runs_pb2.Attempt:
    return runs_pb2.Attempt(
        number=value.number,
        attempt_id=value.attempt_id,
        label=value.label,
        started_at=timestamp(value.started_at),
        resumed_from_step=value.resumed_from_step,
        ended=value.ended,
        lease_s=value.lease_s,
        last_seen_at=timestamp(value.last_seen_at),
        lost_at=timestamp(value.lost_at),
    )


def run_state(state: models.RunState) -> runs_pb2.RunState:
    resume, spend = state.resume, state.spend
    return runs_pb2.RunState(
        run=_run_info(state.run),
        attempts=[_attempt(a) for a in state.attempts],
        current_attempt=state.current_attempt,
        checkpoint=None if state.checkpoint is None else _checkpoint(state.checkpoint),
        expired_checkpoints=[_checkpoint(c) for c in state.expired_checkpoints],
        expired_checkpoint_count=state.expired_checkpoint_count,
        resume=runs_pb2.Resume(
            available=resume.available,
            from_step=resume.from_step,
            handle=_handle(resume.handle),
            sampler_uri=resume.sampler_uri,
            spend_committed_usd_micro=resume.spend_committed_usd_micro,
        ),
        last_step=state.last_step,
        spend=runs_pb2.SpendTotals(
            cap_usd_micro=spend.cap_usd_micro,
            committed_usd_micro=spend.committed_usd_micro,
            pending_usd_micro=spend.pending_usd_micro,
            remaining_usd_micro=spend.remaining_usd_micro,
            overrun_usd_micro=spend.overrun_usd_micro,
            bill=bill_totals(spend.bill),
            plan=plan_hold(spend.plan),
            presumed_usd_micro=spend.presumed_usd_micro,
        ),
        position=state.position,
        best_checkpoint=None if state.best_checkpoint is None else _checkpoint(state.best_checkpoint),
        progress=_progress(state.progress),
        datasets=[_dataset(d) for d in state.datasets],
        reports=struct(state.reports) if state.reports else None,
    )


def run_summary(run: models.RunSummary) -> runs_pb2.RunSummary:
    return runs_pb2.RunSummary(
        run_id=run.run_id,
        name=run.name,
        status=status_enum(run.status),
        current_attempt=run.current_attempt,
        last_step=run.last_step,
        committed_usd_micro=run.committed_usd_micro,
        opened_at=timestamp(run.opened_at),
        parent_account=run.parent_account,
        cap_usd_micro=run.cap_usd_micro,
        pending_usd_micro=run.pending_usd_micro,
        progress=_progress(run.progress),
        retracted=run.retracted,
        presumed_usd_micro=run.presumed_usd_micro,
    )


def metric_stats(stats: models.MetricStats) -> runs_pb2.MetricStats:
    return runs_pb2.MetricStats(
        name=stats.name,
        count=stats.count,
        first_step=stats.first_step,
        last_step=stats.last_step,
        last=stats.last,
        min=stats.min,
        max=stats.max,
    )


def series(page: models.SeriesPage) -> runs_pb2.GetSeriesResponse:
    response = runs_pb2.GetSeriesResponse(
        steps=page.steps, attempts=page.attempts, superseded=page.superseded, next_from_step=page.next_from_step
    )
    # Columns nobody gave stay empty, as the proto says.
    if any(page.tokens):
        response.tokens.extend(page.tokens)
    if any(page.usd_micro):
        response.usd_micro.extend(page.usd_micro)
    for column in page.metrics:
        response.metrics.add(name=column.name, values=column.values, index=column.index)
    return response


def account(value: models.Account) -> spend_pb2.Account:
    return spend_pb2.Account(
        account=value.account,
        parent=value.parent,
        cap_usd_micro=value.cap_usd_micro,
        committed_usd_micro=value.committed_usd_micro,
        pending_usd_micro=value.pending_usd_micro,
        remaining_usd_micro=value.remaining_usd_micro,
        overrun_usd_micro=value.overrun_usd_micro,
        bill=bill_totals(value.bill),
        plan=plan_hold(value.plan),
        presumed_usd_micro=value.presumed_usd_micro,
    )


def plan_hold(value: models.PlanHold | None) -> common_pb2.PlanHold | None:
    if value is None:
        return None
    return common_pb2.PlanHold(
        reservation_id=value.reservation_id,
        state=value.state,
        planned_usd_micro=value.planned_usd_micro,
        drawn_usd_micro=value.drawn_usd_micro,
        held_usd_micro=value.held_usd_micro,
    )


def bill_totals(value: models.BillTotals | None) -> common_pb2.BillTotals | None:
    if value is None:
        return None
    return common_pb2.BillTotals(**msgspec.structs.asdict(value))


def _reconciliation(value: models.Reconciliation) -> spend_pb2.Reconciliation:
    return spend_pb2.Reconciliation(
        run_id=value.run_id,
        name=value.name,
        account=value.account,
        parent=value.parent,
        bill=bill_totals(value.bill),
        providers=value.providers,
        token_classes=[spend_pb2.TokenClassDrift(**msgspec.structs.asdict(t)) for t in value.token_classes],
    )


def reconcile(report: models.ReconcileReport, next_page_token: str) -> spend_pb2.ReconcileResponse:
    return spend_pb2.ReconcileResponse(
        runs=[_reconciliation(row) for row in report.runs],
        accounts=[_reconciliation(row) for row in report.accounts],
        providers=[
            spend_pb2.ProviderBill(
                provider=bill.provider,
                billed_usd_micro=bill.billed_usd_micro,
                unattributed_usd_micro=bill.unattributed_usd_micro,
                lines=bill.lines,
                unattributed_lines=bill.unattributed_lines,
                restatements=bill.restatements,
                cost_data_through=timestamp(bill.cost_data_through),
                first_interval_start=timestamp(bill.first_interval_start),
                last_interval_end=timestamp(bill.last_interval_end),
            )
            for bill in report.providers
        ],
        unattributed=[spend_pb2.UnattributedGroup(**msgspec.structs.asdict(group)) for group in report.unattributed],
        next_page_token=next_page_token,
        threshold_percent=report.threshold_percent,
        position=report.position,
    )


def reservation(value: models.Reservation) -> spend_pb2.Reservation:
    return spend_pb2.Reservation(
        reservation_id=value.reservation_id,
        kind=value.kind,
        state=value.state,
        amount_usd_micro=value.amount_usd_micro,
        actual_usd_micro=value.actual_usd_micro,
        overrun_usd_micro=value.overrun_usd_micro,
        basis=basis_message(value.basis),
        actual_basis=None if value.actual_basis is None else basis_message(value.actual_basis),
        reason=value.reason,
        attempt=value.attempt,
        reserved_at=timestamp(value.reserved_at),
        settled_at=timestamp(value.settled_at),
        expires_at=timestamp(value.expires_at),
        position=value.position,
    )


def model_version(value: models.ModelVersion) -> registry_pb2.ModelVersion:
    return registry_pb2.ModelVersion(
        family=value.family,
        version=value.version,
        artifact_uri=value.artifact_uri,
        digest=value.digest,
        source_run_id=value.source_run_id,
        source_step=value.source_step,
        metadata=struct(value.metadata),
        registered_at=timestamp(value.registered_at),
        source_checkpoint=_source_checkpoint(value.source_checkpoint),
        source_retracted=value.source_retracted,
        aliases=list(value.aliases),
    )


def _source_checkpoint(value: models.SourceCheckpoint | None) -> registry_pb2.SourceCheckpoint | None:
    if value is None:
        return None
    return registry_pb2.SourceCheckpoint(
        run_id=value.run_id, step=value.step, attempt=value.attempt, checkpoint_digest=value.checkpoint_digest
    )


def verdict(value: models.GateVerdict | None) -> registry_pb2.GateVerdict | None:
    if value is None:
        return None
    return registry_pb2.GateVerdict(
        passed=value.passed,
        reason=value.reason,
        stats=struct(value.stats),
        mode=value.mode,
        rule=value.rule,
        evidence=[
            registry_pb2.GateEvidence(
                name=e.name, value=e.value, source=e.source, run_id=e.run_id, step=e.step, position=e.position
            )
            for e in value.evidence
        ],
    )


def alias(value: models.Alias) -> registry_pb2.Alias:
    return registry_pb2.Alias(
        alias=value.alias,
        version=value.version,
        moved_at=timestamp(value.moved_at),
        principal=value.principal,
        position=value.position,
    )


def retirement(value: models.Retirement | None) -> registry_pb2.Retirement | None:
    if value is None:
        return None
    return registry_pb2.Retirement(
        reason=value.reason, at=timestamp(value.at), principal=value.principal, position=value.position
    )


def promotion(value: models.Promotion) -> registry_pb2.Promotion:
    return registry_pb2.Promotion(
        version=value.version,
        previous=value.previous,
        kind=value.kind,
        verdict=verdict(value.verdict),
        reason=value.reason,
        at=timestamp(value.at),
        principal=value.principal,
        position=value.position,
        refusal=value.refusal,
        expected_current=value.expected_current,
    )


def event(value: Mapping[str, Any]) -> events_pb2.Event:
    """An event of Ledger.read_events; its data as JSON (datetimes as RFC 3339 strings)."""
    return events_pb2.Event(
        position=value["position"],
        type=value["type"],
        originator_id=value["originator_id"],
        originator_version=value["originator_version"],
        recorded_at=timestamp(value["timestamp"]),
        principal=value["principal"] or "",
        request_id=value["request_id"] or "",
        data_json=_json.encode(value["data"]),
        digest=value.get("digest", ""),
    )


def verification(value: models.Verification) -> events_pb2.VerifyResponse:
    """A verification of the hash chain; broken_at is absent when the log verified."""
    return events_pb2.VerifyResponse(
        ok=value.ok,
        head=events_pb2.ChainHead(position=value.head.position, digest=value.head.digest),
        checked=value.checked,
        broken_at=None if value.ok else value.broken_at,
        problem=value.problem,
        detail=value.detail,
    )
