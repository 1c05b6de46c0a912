"""Values: Struct, Timestamp, Duration, RunStatus, CostBasis and StepBatch.

Decoding turns messages into the keyword arguments of Ledger commands (validation stays in the
ledger). Struct numbers travel as doubles, so integral values come back as ints and a document
round-trips.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from google.protobuf import json_format, struct_pb2, timestamp_pb2

from ledger.errors import InvalidArgumentError
from trainledger.v1 import common_pb2

__all__ = [
    "document", "struct", "timestamp", "moment", "duration", "status_name", "status_enum", "basis",
    "basis_message", "batch_kwargs", "batch_message", "optional",
]

_STATUS_NAMES = {common_pb2.RUN_STATUS_RUNNING: "running", common_pb2.RUN_STATUS_DONE: "done",
                 common_pb2.RUN_STATUS_FAILED: "failed", common_pb2.RUN_STATUS_STOPPED: "stopped"}
_STATUS_ENUMS = {name: value for value, name in _STATUS_NAMES.items()}


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral(item) for item in value]
    return value


def document(message: struct_pb2.Struct) -> dict[str, Any]:
    """A Struct as a dict, integral numbers as ints."""
    return _integral(json_format.MessageToDict(message)) if message.fields else {}


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
    """The aware UTC datetime of a Timestamp field, or None when it is unset."""
    return getattr(message, field).ToDatetime(tzinfo=timezone.utc) if message.HasField(field) else None


def duration(message: Any, field: str) -> timedelta | None:
    return getattr(message, field).ToTimedelta() if message.HasField(field) else None


def optional(message: Any, field: str) -> Any:
    """An optional scalar field's value, or None when it is absent."""
    return getattr(message, field) if message.HasField(field) else None


def status_name(value: int) -> str:
    """A RunStatus as the ledger's name; unspecified is the empty string (any status)."""
    return _STATUS_NAMES.get(value, "")


def status_enum(name: str) -> int:
    return _STATUS_ENUMS.get(name, common_pb2.RUN_STATUS_UNSPECIFIED)


def basis(message: common_pb2.CostBasis) -> dict[str, Any]:
    """A CostBasis as the ledger's basis dict (empty when nothing is set)."""
    out: dict[str, Any] = {}
    if message.price_sheet:
        out["price_sheet"] = message.price_sheet
    if message.price_source:
        out["price_source"] = message.price_source
    if message.tokens:
        out["tokens"] = [{"token_class": t.token_class, "tokens": t.tokens,
                          "usd_micro_per_million_tokens": t.usd_micro_per_million_tokens} for t in message.tokens]
    if message.HasField("gpu"):
        gpu = message.gpu
        out["gpu"] = {"gpu_milliseconds": gpu.gpu_milliseconds, "usd_micro_per_gpu_hour": gpu.usd_micro_per_gpu_hour,
                      "gpu_type": gpu.gpu_type, "gpu_count": gpu.gpu_count or 1}
    return out


def basis_message(value: Mapping[str, Any] | None) -> common_pb2.CostBasis:
    value = value or {}
    message = common_pb2.CostBasis(price_sheet=value.get("price_sheet", ""),
                                   price_source=value.get("price_source", ""))
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
            raise InvalidArgumentError(f"metric {column.name} appears twice in the batch",
                                       reason="DUPLICATE_METRIC", metric=column.name)
        metrics[column.name] = {"values": list(column.values), "index": list(column.index) or None}
    return {"run_id": message.run_id, "attempt": message.attempt, "steps": list(message.steps),
            "tokens": list(message.tokens) or None, "usd_micro": list(message.usd_micro) or None,
            "metrics": metrics}


def batch_message(run_id: str, data: Mapping[str, Any]) -> common_pb2.StepBatch:
    """A StepsRecorded event's data as a StepBatch."""
    message = common_pb2.StepBatch(run_id=run_id, attempt=data["attempt"], steps=data["steps"],
                                   tokens=data.get("tokens") or (), usd_micro=data.get("usd_micro") or ())
    for name, column in sorted((data.get("metrics") or {}).items()):
        message.metrics.add(name=name, values=column["values"], index=column.get("index") or ())
    return message
