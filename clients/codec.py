"""Python values <-> trainledger.v1 messages, shared by the sync and asyncio clients.

In: plain values (ints, str, dicts, datetimes, lists); money is int micro-dollars. Out: the typed
results of clients.models, decoded generically by `decode` from `to_dict`: dicts keyed by the
proto field names, with Timestamps as aware datetimes, unset optional fields and unset messages as
None, Structs as dicts (whole numbers as ints, by trainledger.structs, the rule the server shares),
maps as dicts, and the enums as the words they name: RunStatus as "running" | "done" | "failed" |
"stopped", ObjectiveMode as "min" | "max", DatasetRole as "train" | "eval" ("" when unspecified;
`status`, `objective_mode` and `dataset_role` encode them, refusing any other word with ValueError).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

import msgspec
from google.protobuf import duration_pb2, json_format, struct_pb2, timestamp_pb2
from google.protobuf.message import Message

from trainledger.structs import integral
from trainledger.v1 import common_pb2, registry_pb2, runs_pb2

__all__ = [
    "to_dict",
    "decode",
    "struct",
    "timestamp",
    "duration",
    "status",
    "objective_mode",
    "objective",
    "dataset_role",
    "source_checkpoint",
    "run_source_checkpoint",
    "basis",
    "verdict",
    "step_batch",
    "metric_columns",
    "batch_from_columns",
]

_STATUS_PREFIX = "RUN_STATUS_"
# The enums decoded as words: each enum's name and the prefix its values' names carry.
_ENUM_PREFIXES = {"RunStatus": _STATUS_PREFIX, "ObjectiveMode": "OBJECTIVE_MODE_", "DatasetRole": "DATASET_ROLE_"}
T = TypeVar("T")


def struct(document: Mapping[str, Any] | None) -> struct_pb2.Struct | None:
    """A Struct from a JSON-like dict; None stays unset."""
    if document is None:
        return None
    message = struct_pb2.Struct()
    message.update(dict(document))
    return message


def timestamp(value: datetime | None) -> timestamp_pb2.Timestamp | None:
    """A Timestamp from a datetime; a naive datetime is taken as UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    message = timestamp_pb2.Timestamp()
    message.FromDatetime(value)
    return message


def duration(seconds: float | timedelta | None) -> duration_pb2.Duration | None:
    if seconds is None:
        return None
    message = duration_pb2.Duration()
    message.FromTimedelta(seconds if isinstance(seconds, timedelta) else timedelta(seconds=seconds))
    return message


def status(name: str) -> common_pb2.RunStatus:
    """A RunStatus from "done" | "failed" | "stopped" | "running" ("" = unspecified)."""
    return cast(common_pb2.RunStatus, common_pb2.RunStatus.Value(_STATUS_PREFIX + (name.upper() or "UNSPECIFIED")))


def _enum(enum: Any, prefix: str, name: str, words: tuple[str, ...]) -> int:
    if name not in words:
        raise ValueError(f"{name!r} is not one of {', '.join(repr(word) for word in words if word)}")
    return int(enum.Value(prefix + (name.upper() or "UNSPECIFIED")))


def objective_mode(name: str) -> runs_pb2.ObjectiveMode:
    """An ObjectiveMode from "min" | "max" ("" = unspecified)."""
    return cast(runs_pb2.ObjectiveMode, _enum(runs_pb2.ObjectiveMode, "OBJECTIVE_MODE_", name, ("", "min", "max")))


def objective(value: tuple[str, str] | None) -> runs_pb2.Objective | None:
    """An Objective from (metric, mode), mode "min" | "max"; None stays unset."""
    if value is None:
        return None
    metric, mode = value
    return runs_pb2.Objective(metric=metric, mode=objective_mode(mode))


def dataset_role(name: str) -> runs_pb2.DatasetRole:
    """A DatasetRole from "train" | "eval" ("" = unspecified)."""
    return cast(runs_pb2.DatasetRole, _enum(runs_pb2.DatasetRole, "DATASET_ROLE_", name, ("", "train", "eval")))


def source_checkpoint(value: Any) -> registry_pb2.SourceCheckpoint | None:
    """A SourceCheckpoint message from its model (clients.models.SourceCheckpoint); None stays unset."""
    if value is None:
        return None
    return registry_pb2.SourceCheckpoint(
        run_id=value.run_id, step=value.step, attempt=value.attempt, checkpoint_digest=value.checkpoint_digest
    )


def run_source_checkpoint(value: Any) -> runs_pb2.RunSourceCheckpoint | None:
    """A RunSourceCheckpoint message from its model (clients.models.RunSourceCheckpoint) or a
    mapping {"run_id", "step", "uri"}; None stays unset."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return runs_pb2.RunSourceCheckpoint(run_id=value["run_id"], step=value["step"], uri=value.get("uri", ""))
    return runs_pb2.RunSourceCheckpoint(run_id=value.run_id, step=value.step, uri=value.uri)


def basis(value: Mapping[str, Any] | common_pb2.CostBasis | None) -> common_pb2.CostBasis | None:
    """A CostBasis from its dict form (proto field names), e.g. {"price_sheet": "tinker-2025",
    "tokens": [{"token_class": "train", "tokens": 1000, "usd_micro_per_million_tokens": 400000}]}."""
    if value is None or isinstance(value, common_pb2.CostBasis):
        return value
    return json_format.ParseDict(dict(value), common_pb2.CostBasis())


def verdict(value: Mapping[str, Any]) -> registry_pb2.GateVerdict:
    """A GateVerdict from {"passed": bool, "reason": str, "stats": dict}."""
    return registry_pb2.GateVerdict(
        passed=bool(value.get("passed", False)), reason=str(value.get("reason", "")), stats=struct(value.get("stats"))
    )


def metric_columns(metrics: Mapping[str, Any] | None) -> list[common_pb2.MetricColumn]:
    """Columns from name -> [values] (one per step) or name -> {"values": [...], "index": [...]}."""
    columns = []
    for name, column in (metrics or {}).items():
        if isinstance(column, Mapping):
            values, index = column.get("values", ()), column.get("index") or ()
        else:
            values, index = column, ()
        columns.append(common_pb2.MetricColumn(name=name, values=values, index=index))
    return columns


def step_batch(
    *,
    run_id: str,
    attempt: int,
    steps: Sequence[int],
    tokens: Sequence[int] | None = None,
    usd_micro: Sequence[int] | None = None,
    metrics: Mapping[str, Any] | None = None,
) -> common_pb2.StepBatch:
    """A column-wise StepBatch: steps, tokens and usd_micro as packed parallel lists."""
    return common_pb2.StepBatch(
        run_id=run_id,
        attempt=attempt,
        steps=steps,
        tokens=tokens or (),
        usd_micro=usd_micro or (),
        metrics=metric_columns(metrics),
    )


def batch_from_columns(
    run_id: str, attempt: int, rows: Iterable[tuple[int, int | None, int | None, Mapping[str, float]]]
) -> common_pb2.StepBatch:
    """A StepBatch from rows (step, tokens, usd_micro, metrics): tokens and usd_micro are sent
    when any row has them, a row without them counting 0 (an eval-only record has no tokens of
    its own); a metric some rows lack gets an index column, never a NaN."""
    rows = list(rows)
    steps = [row[0] for row in rows]
    tokens = [row[1] for row in rows]
    usd = [row[2] for row in rows]
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row[3]))
    metrics: dict[str, Any] = {}
    for name in names:
        index = [i for i, row in enumerate(rows) if name in row[3]]
        values = [rows[i][3][name] for i in index]
        metrics[name] = values if len(index) == len(rows) else {"values": values, "index": index}
    return step_batch(
        run_id=run_id,
        attempt=attempt,
        steps=steps,
        tokens=[t or 0 for t in tokens] if any(t is not None for t in tokens) else None,
        usd_micro=[u or 0 for u in usd] if any(u is not None for u in usd) else None,
        metrics=metrics,
    )


def to_dict(message: Message, *, omit_unset: bool = False) -> dict[str, Any]:
    """A response message as a dict keyed by field name (see the module docstring); with
    `omit_unset`, unset optional fields and messages are left out instead of None."""
    result: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if _is_map(field):
            entry: Any = field.message_type
            entry = entry.fields_by_name["value"]
            result[field.name] = {key: _value(entry, item, omit_unset) for key, item in value.items()}
        elif field.is_repeated:
            result[field.name] = [_value(field, item, omit_unset) for item in value]
        elif field.has_presence and not message.HasField(field.name):
            if _is_struct(field):
                result[field.name] = {}
            elif not omit_unset:
                result[field.name] = None
        else:
            result[field.name] = _value(field, value, omit_unset)
    return result


def decode(message: Message, model: type[T], **extra: Any) -> T:
    """A response message as the typed result `model` (a clients.models Struct), field for field,
    with `extra` fields the message does not carry (the ids the client made). What the message
    leaves unset takes the model's default: None for optional fields and messages."""
    return msgspec.convert({**to_dict(message, omit_unset=True), **extra}, model)


def _is_map(field: Any) -> bool:
    return field.message_type is not None and bool(field.message_type.GetOptions().map_entry)


def _is_struct(field: Any) -> bool:
    return field.message_type is not None and field.message_type.full_name == "google.protobuf.Struct"


def _value(field: Any, value: Any, omit_unset: bool = False) -> Any:
    kind = field.message_type.full_name if field.message_type is not None else ""
    if kind == "google.protobuf.Timestamp":
        return value.ToDatetime(tzinfo=UTC)
    if kind == "google.protobuf.Duration":
        return value.ToTimedelta()
    if kind == "google.protobuf.Struct":
        return integral(json_format.MessageToDict(value))
    if kind:
        return to_dict(value, omit_unset=omit_unset)
    if field.enum_type is not None and field.enum_type.name in _ENUM_PREFIXES:
        known = field.enum_type.values_by_number.get(value)
        if known is None:  # A value a newer server names: no word for it here.
            return ""
        name = str(known.name).removeprefix(_ENUM_PREFIXES[field.enum_type.name]).lower()
        return "" if name == "unspecified" else name
    if field.name == "data_json":
        return json.loads(value) if value else {}
    return value
