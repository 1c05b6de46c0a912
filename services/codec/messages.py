"""Messages built from the ledger's read models (the dicts of ledger.views.queries) and events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from services.codec.values import basis_message, status_enum, struct, timestamp
from trainledger.v1 import common_pb2, events_pb2, registry_pb2, runs_pb2, spend_pb2

__all__ = ["run_state", "run_summary", "series", "account", "reservation", "model_version", "promotion", "event"]

_json = msgspec.json.Encoder()


def _handle(value: Mapping[str, Any] | None) -> common_pb2.StateHandle | None:
    return None if value is None else common_pb2.StateHandle(**value)


def _checkpoint(value: Mapping[str, Any]) -> runs_pb2.Checkpoint:
    return runs_pb2.Checkpoint(
        attempt=value["attempt"], step=value["step"], handle=_handle(value["handle"]), sampler_uri=value["sampler_uri"],
        final=value["final"], saved_at=timestamp(value["saved_at"]), expires_at=timestamp(value["expires_at"]),
        digest=value["digest"])


def run_state(state: Mapping[str, Any]) -> runs_pb2.RunState:
    run, resume, spend = state["run"], state["resume"], state["spend"]
    return runs_pb2.RunState(
        run=runs_pb2.RunInfo(
            run_id=run["run_id"], run_key=run["run_key"], name=run["name"], status=status_enum(run["status"]),
            spec=struct(run["spec"]), summary=struct(run["summary"]), error=run["error"] or "",
            opened_at=timestamp(run["opened_at"]), finished_at=timestamp(run["finished_at"])),
        attempts=[runs_pb2.Attempt(number=a["number"], attempt_id=a["attempt_id"] or "", label=a["label"] or "",
                                   started_at=timestamp(a["started_at"]), resumed_from_step=a["resumed_from_step"],
                                   ended=a["ended"]) for a in state["attempts"]],
        current_attempt=state["current_attempt"] or 0,
        checkpoint=None if state["checkpoint"] is None else _checkpoint(state["checkpoint"]),
        expired_checkpoints=[_checkpoint(c) for c in state["expired_checkpoints"]],
        expired_checkpoint_count=state["expired_checkpoint_count"],
        resume=runs_pb2.Resume(available=resume["available"], from_step=resume["from_step"],
                               handle=_handle(resume["handle"]), sampler_uri=resume["sampler_uri"] or "",
                               spend_committed_usd_micro=resume["spend_committed_usd_micro"]),
        last_step=state["last_step"],
        spend=runs_pb2.SpendTotals(cap_usd_micro=spend["cap"], committed_usd_micro=spend["committed"],
                                   pending_usd_micro=spend["pending"], remaining_usd_micro=spend["remaining"],
                                   overrun_usd_micro=spend["overrun"]),
        position=state["position"])


def run_summary(row: Mapping[str, Any]) -> runs_pb2.RunSummary:
    return runs_pb2.RunSummary(
        run_id=row["run_id"], name=row["name"], status=status_enum(row["status"]),
        current_attempt=row["current_attempt"] or 0, last_step=row["last_step"], committed_usd_micro=row["committed"],
        opened_at=timestamp(row["opened_at"]))


def series(page: Mapping[str, Any]) -> runs_pb2.GetSeriesResponse:
    response = runs_pb2.GetSeriesResponse(
        steps=page["steps"], attempts=page["attempts"], superseded=page["superseded"],
        next_from_step=page["next_from_step"])
    # Columns nobody gave stay empty, as the proto says.
    if any(page["tokens"]):
        response.tokens.extend(page["tokens"])
    if any(page["usd_micro"]):
        response.usd_micro.extend(page["usd_micro"])
    for name, column in sorted(page["metrics"].items()):
        response.metrics.add(name=name, values=column["values"], index=column["index"] or ())
    return response


def account(value: Mapping[str, Any]) -> spend_pb2.Account:
    return spend_pb2.Account(
        account=value["account"], parent=value["parent"] or "", cap_usd_micro=value["cap"],
        committed_usd_micro=value["committed"], pending_usd_micro=value["pending"],
        remaining_usd_micro=value["remaining"], overrun_usd_micro=value["overrun"])


def reservation(value: Mapping[str, Any]) -> spend_pb2.Reservation:
    return spend_pb2.Reservation(
        reservation_id=value["reservation_id"], kind=value["kind"], state=value["state"],
        amount_usd_micro=value["amount"] or 0, actual_usd_micro=value["actual"] or 0,
        overrun_usd_micro=value["overrun"] or 0, basis=basis_message(value["basis"]),
        actual_basis=basis_message(value["actual_basis"]) if value["actual_basis"] else None,
        reason=value["reason"] or "", attempt=value["attempt"] or 0, reserved_at=timestamp(value["reserved_at"]),
        settled_at=timestamp(value["settled_at"]), expires_at=timestamp(value["expires_at"]),
        position=value["position"])


def model_version(value: Mapping[str, Any]) -> registry_pb2.ModelVersion:
    return registry_pb2.ModelVersion(
        family=value["family"], version=value["version"], artifact_uri=value["artifact_uri"], digest=value["digest"],
        source_run_id=value["source_run_id"] or "", source_step=value["source_step"] or 0,
        metadata=struct(value["metadata"]), registered_at=timestamp(value["registered_at"]))


def promotion(value: Mapping[str, Any]) -> registry_pb2.Promotion:
    verdict = value["verdict"]
    return registry_pb2.Promotion(
        version=value["version"], previous=value["previous"] or 0, kind=value["kind"],
        verdict=None if not verdict else registry_pb2.GateVerdict(
            passed=bool(verdict.get("passed")), reason=str(verdict.get("reason", "")),
            stats=struct(verdict.get("stats") or {})),
        reason=value["reason"] or "", at=timestamp(value["at"]), principal=value["principal"] or "",
        position=value["position"])


def event(value: Mapping[str, Any]) -> events_pb2.Event:
    """An event of Ledger.read_events; its data as JSON (datetimes as RFC 3339 strings)."""
    return events_pb2.Event(
        position=value["position"], type=value["type"], originator_id=value["originator_id"],
        originator_version=value["originator_version"], recorded_at=timestamp(value["timestamp"]),
        principal=value["principal"] or "", request_id=value["request_id"] or "", data_json=_json.encode(value["data"]))
