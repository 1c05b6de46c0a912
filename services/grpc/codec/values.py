"""Values: Struct, Timestamp, Duration, RunStatus, CostBasis and StepBatch; a run's Objective
(with its ObjectiveMode) and a Dataset (with its DatasetRole).

Decoding turns messages into the keyword arguments of Ledger commands (validation stays in the
ledger). Struct numbers travel as doubles, so integral values come back as ints (by
trainledger.structs.number, the rule the client reads them by too) and a document round-trips.
A document is turned into plain values only when the ledger command reads it, in its worker
thread, and checked against the document limits on the message as it is read, before anything is
built from an oversized map or list. The enums are the ledger's words ("min", "max"; "train",
"eval"): an unspecified one where a word is required, or a number no value is named for, is
refused here (MISSING_FIELD, INVALID_FIELD), since the ledger never sees the number.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf import struct_pb2, timestamp_pb2

from ledger.domain.errors import Invalid
from ledger.domain.limits import DOCUMENT_DEPTH_MAX, MAP_ENTRIES_MAX
from ledger.domain.reasons import Reason
from trainledger import structs
from trainledger.v1 import common_pb2, runs_pb2, spend_pb2

__all__ = [
    "Document",
    "document",
    "struct",
    "timestamp",
    "moment",
    "duration",
    "status_name",
    "status_enum",
    "basis",
    "basis_message",
    "batch_kwargs",
    "batch_message",
    "optional",
    "objective",
    "objective_message",
    "dataset_kwargs",
    "dataset_role_enum",
]

_STATUS_ENUMS: dict[str, common_pb2.RunStatus] = {
    "running": common_pb2.RUN_STATUS_RUNNING,
    "done": common_pb2.RUN_STATUS_DONE,
    "failed": common_pb2.RUN_STATUS_FAILED,
    "stopped": common_pb2.RUN_STATUS_STOPPED,
    "lost": common_pb2.RUN_STATUS_LOST,
}
_STATUS_NAMES: dict[int, str] = {value: name for name, value in _STATUS_ENUMS.items()}
_MODE_ENUMS: dict[str, runs_pb2.ObjectiveMode] = {
    "min": runs_pb2.OBJECTIVE_MODE_MIN,
    "max": runs_pb2.OBJECTIVE_MODE_MAX,
}
_MODE_NAMES: dict[int, str] = {value: name for name, value in _MODE_ENUMS.items()}
_ROLE_ENUMS: dict[str, runs_pb2.DatasetRole] = {
    "train": runs_pb2.DATASET_ROLE_TRAIN,
    "eval": runs_pb2.DATASET_ROLE_EVAL,
}
_ROLE_NAMES: dict[int, str] = {value: name for name, value in _ROLE_ENUMS.items()}
# The range of google.protobuf.Timestamp (years 1 to 9999) and Duration (about 10,000 years).
_TIMESTAMP_SECONDS_MIN, _TIMESTAMP_SECONDS_MAX = -62_135_596_800, 253_402_300_799
_DURATION_SECONDS_MAX = 315_576_000_000
_NANOS_MAX = 999_999_999


def _plain(value: struct_pb2.Value, field: str, depth: int) -> Any:
    """A Value as a plain value, refusing what the ledger would refuse about its shape before
    building anything: the first map or list above MAP_ENTRIES_MAX, nesting past
    DOCUMENT_DEPTH_MAX, a non-finite number."""
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return _plain_map(value.struct_value, field, depth)
    if kind == "list_value":
        items = value.list_value.values
        _check_shape(len(items), field, depth)
        return [_plain(item, field, depth + 1) for item in items]
    if kind == "number_value":
        number = value.number_value
        if not math.isfinite(number):
            raise Invalid(f"{field} holds a non-finite number", reason=Reason.NON_FINITE_VALUE, field=field)
        return structs.number(number)
    if kind in ("string_value", "bool_value"):
        return getattr(value, kind)
    return None  # null_value, or no kind at all.


def _plain_map(message: struct_pb2.Struct, field: str, depth: int) -> dict[str, Any]:
    fields = message.fields
    _check_shape(len(fields), field, depth)
    return {key: _plain(item, field, depth + 1) for key, item in fields.items()}


def _check_shape(entries: int, field: str, depth: int) -> None:
    # The same depth count as ledger.domain.limits.check_document: the document itself is depth 0.
    if depth >= DOCUMENT_DEPTH_MAX and entries:
        raise Invalid(
            f"{field} is nested too deeply", reason=Reason.DOCUMENT_TOO_DEEP, field=field, limit=DOCUMENT_DEPTH_MAX
        )
    if entries > MAP_ENTRIES_MAX:
        raise Invalid(
            f"{field} has more than {MAP_ENTRIES_MAX} entries",
            reason=Reason.MAP_TOO_LARGE,
            field=field,
            limit=MAP_ENTRIES_MAX,
        )


class Document(Mapping[str, Any]):
    """A Struct of a request as the plain dict a ledger command takes, converted the first time it
    is read. A servicer hands it to a ledger command, which reads it in its worker thread, so a
    document is never converted on the event loop. Reading it raises Invalid for a
    shape the ledger refuses (MAP_TOO_LARGE, DOCUMENT_TOO_DEEP, NON_FINITE_VALUE)."""

    __slots__ = ("_message", "_field", "_value", "_lock")

    def __init__(self, message: struct_pb2.Struct, field: str) -> None:
        self._message, self._field = message, field
        self._value: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def _plain(self) -> dict[str, Any]:
        with self._lock:
            if self._value is None:
                self._value = _plain_map(self._message, self._field, 0)
            return self._value

    def __getitem__(self, key: str) -> Any:
        return self._plain()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._plain())

    def __len__(self) -> int:
        return len(self._plain())

    def __repr__(self) -> str:
        return f"Document({self._field})"


def document(message: struct_pb2.Struct, field: str = "document") -> Document:
    """A Struct as a document (a Mapping, integral numbers as ints), converted when it is read.
    Its size was bounded before it was decoded (services.grpc.codec.wire)."""
    return Document(message, field)


def struct(value: Mapping[str, Any] | None) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    if value:
        message.update(value)
    return message


def timestamp(value: datetime | None) -> timestamp_pb2.Timestamp | None:
    if value is None:
        return None
    message = timestamp_pb2.Timestamp()
    message.FromDatetime(value)
    return message


def moment(message: Any, field: str) -> datetime | None:
    """The aware UTC datetime of a Timestamp field, or None when it is unset. Raises
    Invalid(INVALID_TIMESTAMP) outside years 1 to 9999 or for nanos out of range."""
    if not message.HasField(field):
        return None
    value = getattr(message, field)
    if not (_TIMESTAMP_SECONDS_MIN <= value.seconds <= _TIMESTAMP_SECONDS_MAX and 0 <= value.nanos <= _NANOS_MAX):
        raise Invalid(
            f"{field} is not a time between the years 1 and 9999", reason=Reason.INVALID_TIMESTAMP, field=field
        )
    moment_: datetime = value.ToDatetime(tzinfo=UTC)
    return moment_


def duration(message: Any, field: str, *, reason: Reason = Reason.INVALID_DURATION) -> timedelta | None:
    """The timedelta of a Duration field, or None when it is unset. Raises
    Invalid(`reason`) for a Duration outside protobuf's range (about 10,000 years) or
    whose seconds and nanos differ in sign."""
    if not message.HasField(field):
        return None
    value = getattr(message, field)
    seconds, nanos = value.seconds, value.nanos
    if abs(seconds) > _DURATION_SECONDS_MAX or abs(nanos) > _NANOS_MAX or seconds * nanos < 0:
        raise Invalid(f"{field} is not a valid duration", reason=reason, field=field)
    delta: timedelta = value.ToTimedelta()
    return delta


def optional(message: Any, field: str) -> Any:
    """An optional scalar field's value, or None when it is absent."""
    return getattr(message, field) if message.HasField(field) else None


def status_name(value: int) -> str:
    """A RunStatus as the ledger's name; unspecified is the empty string (any status)."""
    return _STATUS_NAMES.get(value, "")


def status_enum(name: str) -> common_pb2.RunStatus:
    return _STATUS_ENUMS.get(name, common_pb2.RUN_STATUS_UNSPECIFIED)


def _word(value: int, names: dict[int, str], field: str) -> str:
    """The ledger's word for a required enum: MISSING_FIELD when unspecified, INVALID_FIELD for a
    number no value is named for."""
    if value == 0:
        raise Invalid(f"{field} is required", reason=Reason.MISSING_FIELD, field=field)
    name = names.get(value)
    if name is None:
        raise Invalid(f"{field} is not a value this server knows: {value}", reason=Reason.INVALID_FIELD, field=field)
    return name


def objective(message: Any, field: str = "objective") -> tuple[str, str] | None:
    """An Objective field as (metric, mode), mode "min" or "max"; None when it is unset or empty
    (the run's own, or no change). A metric without a mode is INVALID_FIELD (the direction is
    what ranks the checkpoints); the metric's name is the ledger's to check."""
    if not message.HasField(field):
        return None
    value: runs_pb2.Objective = getattr(message, field)
    if not value.metric and value.mode == runs_pb2.OBJECTIVE_MODE_UNSPECIFIED:
        return None
    if value.mode == runs_pb2.OBJECTIVE_MODE_UNSPECIFIED:
        raise Invalid(
            f"{field}.mode must be min or max with a metric", reason=Reason.INVALID_FIELD, field=f"{field}.mode"
        )
    return value.metric, _word(value.mode, _MODE_NAMES, f"{field}.mode")


def objective_message(metric: str, mode: str) -> runs_pb2.Objective:
    return runs_pb2.Objective(metric=metric, mode=_MODE_ENUMS.get(mode, runs_pb2.OBJECTIVE_MODE_UNSPECIFIED))


def dataset_role_enum(role: str) -> runs_pb2.DatasetRole:
    return _ROLE_ENUMS.get(role, runs_pb2.DATASET_ROLE_UNSPECIFIED)


def dataset_kwargs(message: runs_pb2.Dataset) -> dict[str, Any]:
    """A Dataset as the keyword arguments of Ledger.record_dataset (recorded_at is the server's)."""
    return {
        "role": _word(message.role, _ROLE_NAMES, "dataset.role"),
        "digest": message.digest,
        "format": message.format,
        "rows": message.rows,
        "tokens": optional(message, "tokens"),
        "source_uri": message.source_uri,
        "report": document(message.report, "report"),
    }


def basis(message: common_pb2.CostBasis) -> dict[str, Any]:
    """A CostBasis as the ledger's basis dict (empty when nothing is set)."""
    out: dict[str, Any] = {}
    if message.price_sheet:
        out["price_sheet"] = message.price_sheet
    if message.price_source:
        out["price_source"] = message.price_source
    if message.tokens:
        out["tokens"] = [
            {
                "token_class": t.token_class,
                "tokens": t.tokens,
                "usd_micro_per_million_tokens": t.usd_micro_per_million_tokens,
            }
            for t in message.tokens
        ]
    if message.HasField("gpu"):
        gpu = message.gpu
        out["gpu"] = {
            "gpu_milliseconds": gpu.gpu_milliseconds,
            "usd_micro_per_gpu_hour": gpu.usd_micro_per_gpu_hour,
            "gpu_type": gpu.gpu_type,
            "gpu_count": gpu.gpu_count or 1,
        }
    return out


def basis_message(value: Mapping[str, Any] | None) -> common_pb2.CostBasis:
    value = value or {}
    message = common_pb2.CostBasis(price_sheet=value.get("price_sheet", ""), price_source=value.get("price_source", ""))
    for line in value.get("tokens") or ():
        message.tokens.add(**line)
    if value.get("gpu"):
        message.gpu.CopyFrom(common_pb2.GpuCost(**value["gpu"]))
    return message


def batch_kwargs(message: common_pb2.StepBatch) -> dict[str, Any]:
    """A StepBatch as the keyword arguments of Ledger.append_steps."""
    metrics: dict[str, dict[str, Any]] = {}
    for column in message.metrics:
        if column.name in metrics:
            raise Invalid(
                f"metric {column.name} appears twice in the batch", reason=Reason.DUPLICATE_METRIC, metric=column.name
            )
        metrics[column.name] = {"values": list(column.values), "index": list(column.index) or None}
    return {
        "run_id": message.run_id,
        "attempt": message.attempt,
        "steps": list(message.steps),
        "tokens": list(message.tokens) or None,
        "usd_micro": list(message.usd_micro) or None,
        "metrics": metrics,
    }


def batch_message(run_id: str, data: Mapping[str, Any]) -> common_pb2.StepBatch:
    """A StepsRecorded event's data as a StepBatch."""
    message = common_pb2.StepBatch(
        run_id=run_id,
        attempt=data["attempt"],
        steps=data["steps"],
        tokens=data.get("tokens") or (),
        usd_micro=data.get("usd_micro") or (),
    )
    for name, column in sorted((data.get("metrics") or {}).items()):
        message.metrics.add(name=name, values=column["values"], index=column.get("index") or ())
    return message


def billed_lines(request: spend_pb2.RecordBilledUsageRequest) -> list[dict[str, Any]]:
    """The lines of a RecordBilledUsage request as the ledger takes them (ledger.domain.bills)."""
    lines = []
    moments: dict[tuple[int, int], datetime] = {}  # A request's lines share few times: each decoded once.
    for index, line in enumerate(request.lines):
        # A map read key by key: dict() of one goes through Mapping.keys() in Python, twice as slow.
        quantities, tags = line.quantities, line.tags
        lines.append(
            {
                "line_id": line.line_id,
                "interval_start": _line_moment(line, "interval_start", index, moments),
                "interval_end": _line_moment(line, "interval_end", index, moments),
                "amount_usd_micro": line.amount_usd_micro if line.HasField("amount_usd_micro") else None,
                "amount_text": line.amount_text,
                "currency": line.currency,
                "quantities": {unit: quantities[unit] for unit in quantities} if quantities else {},
                "run_id": line.run_id,
                "account": line.account,
                "session_id": line.session_id,
                "tags": {key: tags[key] for key in tags} if tags else {},
                "description": line.description,
            }
        )
    return lines


def _line_moment(
    line: spend_pb2.BilledLine, field: str, index: int, moments: dict[tuple[int, int], datetime]
) -> datetime | None:
    if not line.HasField(field):
        return None
    value = getattr(line, field)
    key = (value.seconds, value.nanos)
    found = moments.get(key)
    if found is None:
        try:
            found = moment(line, field)
        except Invalid as error:
            raise Invalid(
                f"lines[{index}].{field} is not a time between the years 1 and 9999",
                reason=error.reason,
                line=str(index),
            ) from None
        assert found is not None, "a Timestamp field that is set has a moment"
        moments[key] = found
    return found


def source_checkpoint(request: runs_pb2.OpenRunRequest) -> dict[str, Any] | None:
    """OpenRunRequest.source_checkpoint as the ledger takes it; None when unset."""
    if not request.HasField("source_checkpoint"):
        return None
    source = request.source_checkpoint
    return {"run_id": source.run_id, "step": source.step, "uri": source.uri}
