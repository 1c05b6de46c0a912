"""Messages built from the ledger's read models (ledger.views.models) and events.

The read models carry the messages' field names (tests/unit/test_codec.py holds each to its
message), so a message is encoded generically (`encode`): each field of the message takes the
model's field of the same name with the wire's own type, a datetime as a Timestamp, a document as
a Struct, a nested read model as its message (each repeated one too), a value or a map as it is.
What does not follow from the names is explicit: RULES, per message, for the enums (RunStatus,
DatasetRole, ObjectiveMode), the cost bases, a RunState's reports and a verification's broken_at;
and the builders below for the messages whose fields are not the model's (BestCheckpointResponse,
GetSeriesResponse, Event).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

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
    "encode",
    "RULES",
    "run_state",
    "run_summary",
    "metric_stats",
    "checkpoint",
    "best_checkpoint",
    "prune_entry",
    "series",
    "account",
    "plan_hold",
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

M = TypeVar("M", bound=Message)
Rule = Callable[[Any], Any]  # The read model -> the value of one field of its message.

_json = msgspec.json.Encoder()


def _objective(run: models.RunInfo) -> runs_pb2.Objective | None:
    objective = run.objective
    return None if objective is None else objective_message(objective.metric, objective.mode)


# Per message, the fields whose value does not follow from the model's field of the same name.
RULES: dict[type[Message], dict[str, Rule]] = {
    runs_pb2.RunInfo: {"status": lambda run: status_enum(run.status), "objective": _objective},
    runs_pb2.RunSummary: {"status": lambda run: status_enum(run.status)},
    runs_pb2.Dataset: {"role": lambda dataset: dataset_role_enum(dataset.role)},
    runs_pb2.RunState: {"reports": lambda state: struct(state.reports) if state.reports else None},
    spend_pb2.Reservation: {
        "basis": lambda held: basis_message(held.basis),
        "actual_basis": lambda held: None if held.actual_basis is None else basis_message(held.actual_basis),
    },
    events_pb2.VerifyResponse: {"broken_at": lambda checked: None if checked.ok else checked.broken_at},
}

_TIMESTAMP, _STRUCT = "google.protobuf.Timestamp", "google.protobuf.Struct"
_plans: dict[type[Message], tuple[tuple[str, Rule], ...]] = {}


def encode(value: msgspec.Struct, message: type[M], /, **given: Any) -> M:
    """The `message` of a read model: each of its fields from the model's field of the same name
    (RULES for those that do not follow), except those `given`."""
    plan = _plans.get(message) or _plan(message)
    fields = {name: rule(value) for name, rule in plan if name not in given}
    return message(**fields, **given)


def _plan(message: type[Message]) -> tuple[tuple[str, Rule], ...]:
    rules = RULES.get(message, {})
    fields = message.DESCRIPTOR.fields
    plan = _plans[message] = tuple((f.name, rules.get(f.name) or _rule(f)) for f in fields)
    return plan


def _rule(field: Any) -> Rule:
    """How a field (a FieldDescriptor) follows from the model's field of the same name."""
    get = operator.attrgetter(field.name)
    kind = field.message_type
    if kind is None or kind.GetOptions().map_entry:
        if field.enum_type is not None:
            raise TypeError(f"{field.full_name} is an enum: give it a rule (messages.RULES)")
        return get
    if kind.full_name == _TIMESTAMP:
        return lambda value: timestamp(get(value))
    if kind.full_name == _STRUCT:
        return lambda value: struct(get(value))
    nested = GetMessageClass(kind)
    if field.is_repeated:
        return lambda value: [encode(item, nested) for item in get(value)]
    return lambda value: None if (inner := get(value)) is None else encode(inner, nested)


def run_state(state: models.RunState) -> runs_pb2.RunState:
    return encode(state, runs_pb2.RunState)


def run_summary(run: models.RunSummary) -> runs_pb2.RunSummary:
    return encode(run, runs_pb2.RunSummary)


def metric_stats(stats: models.MetricStats) -> runs_pb2.MetricStats:
    return encode(stats, runs_pb2.MetricStats)


def checkpoint(value: models.Checkpoint) -> runs_pb2.Checkpoint:
    return encode(value, runs_pb2.Checkpoint)


def best_checkpoint(value: models.BestCheckpoint) -> runs_pb2.BestCheckpointResponse:
    return runs_pb2.BestCheckpointResponse(
        checkpoint=checkpoint(value.checkpoint),
        score=value.score,
        objective=objective_message(value.metric, value.mode),
    )


def prune_entry(value: models.PruneEntry) -> runs_pb2.PruneEntry:
    return encode(value, runs_pb2.PruneEntry)


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
    return encode(value, spend_pb2.Account)


def plan_hold(value: models.PlanHold | None) -> common_pb2.PlanHold | None:
    return None if value is None else encode(value, common_pb2.PlanHold)


def bill_totals(value: models.BillTotals | None) -> common_pb2.BillTotals | None:
    return None if value is None else encode(value, common_pb2.BillTotals)


def reconcile(report: models.ReconcileReport, next_page_token: str) -> spend_pb2.ReconcileResponse:
    return encode(report, spend_pb2.ReconcileResponse, next_page_token=next_page_token)


def reservation(value: models.Reservation) -> spend_pb2.Reservation:
    return encode(value, spend_pb2.Reservation)


def model_version(value: models.ModelVersion) -> registry_pb2.ModelVersion:
    return encode(value, registry_pb2.ModelVersion)


def verdict(value: models.GateVerdict | None) -> registry_pb2.GateVerdict | None:
    return None if value is None else encode(value, registry_pb2.GateVerdict)


def alias(value: models.Alias) -> registry_pb2.Alias:
    return encode(value, registry_pb2.Alias)


def retirement(value: models.Retirement | None) -> registry_pb2.Retirement | None:
    return None if value is None else encode(value, registry_pb2.Retirement)


def promotion(value: models.Promotion) -> registry_pb2.Promotion:
    return encode(value, registry_pb2.Promotion)


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
    return encode(value, events_pb2.VerifyResponse)
