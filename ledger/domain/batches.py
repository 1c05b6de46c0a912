"""A batch of step records, kept column-wise from the wire to the view.

One batch is one event: steps, tokens and usd_micro are parallel lists, and each metric is a
column of values with an optional index into the batch for metrics that only some steps carry
(eval_*, rewards), so a missing value is never a NaN placeholder. A batch is bounded in steps,
metrics and bytes (BATCH_BYTES_MAX), so its event can always be read back in one answer.
"""

from __future__ import annotations

import functools
import hashlib
import math
import operator
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Annotated, Any

import msgspec

from ledger.domain.errors import Invalid
from ledger.domain.limits import (
    BATCH_BYTES_MAX,
    BATCH_STEPS_MAX,
    METRICS_PER_BATCH_MAX,
    STEP_MAX,
    USD_MICRO_MAX,
    check_int,
    check_name,
)
from ledger.domain.reasons import Reason

__all__ = ["StepBatch"]

_encode = msgspec.msgpack.Encoder().encode
# The common case checked in C: msgspec takes exactly ints (no bools, no floats) within range, and
# exactly finite floats or ints (as floats). What it refuses is checked again the slow way, which
# says why.
_FLOAT_MAX = sys.float_info.max
_FINITE = list[Annotated[float, msgspec.Meta(ge=-_FLOAT_MAX, le=_FLOAT_MAX)]]


@functools.cache
def _counts_type(maximum: int) -> Any:
    return list[Annotated[int, msgspec.Meta(ge=0, le=maximum)]]


@dataclass(frozen=True, slots=True)
class StepBatch:
    """A validated batch. `metrics` maps a name to {"values": [...], "index": [...] | None}."""

    attempt: int
    steps: list[int]
    tokens: list[int] | None
    usd_micro: list[int] | None
    metrics: dict[str, dict[str, Any]]
    digest: str

    @classmethod
    def build(
        cls,
        *,
        attempt: int,
        steps: Sequence[int],
        tokens: Sequence[int] | None = None,
        usd_micro: Sequence[int] | None = None,
        metrics: Mapping[str, Any] | None = None,
    ) -> StepBatch:
        """Validate and normalise a batch. A metric is a sequence of values (one per step) or
        a mapping {"values": [...], "index": [...]}. Raises Invalid."""
        check_int(attempt, "attempt", minimum=1, maximum=2**31 - 1)
        steps = list(steps)
        count = len(steps)
        if count == 0:
            raise Invalid("a batch needs at least one step", reason=Reason.EMPTY_BATCH)
        if count > BATCH_STEPS_MAX:
            raise Invalid(
                f"a batch holds at most {BATCH_STEPS_MAX} steps", reason=Reason.BATCH_TOO_LARGE, limit=BATCH_STEPS_MAX
            )
        steps = _counts(steps, "steps", STEP_MAX)
        if not _increasing(steps):
            raise Invalid("steps must strictly increase within a batch", reason=Reason.STEPS_NOT_INCREASING)
        tokens = _column(tokens, "tokens", count, STEP_MAX)
        usd_micro = _column(usd_micro, "usd_micro", count, USD_MICRO_MAX)
        normal = _metrics(metrics or {}, count)
        _check_bytes(steps, tokens, usd_micro, normal)
        digest = hashlib.blake2b(_encode([attempt, steps, tokens, usd_micro, normal]), digest_size=16).hexdigest()
        return cls(attempt, steps, tokens, usd_micro, normal, digest)


def _check_bytes(
    steps: list[int], tokens: list[int] | None, usd_micro: list[int] | None, metrics: dict[str, dict[str, Any]]
) -> None:
    """A batch takes at most BATCH_BYTES_MAX: 8 bytes a number, plus its metric names."""
    numbers = len(steps) + len(tokens or ()) + len(usd_micro or ())
    numbers += sum(len(column["values"]) + len(column["index"] or ()) for column in metrics.values())
    size = 8 * numbers + sum(len(name.encode()) for name in metrics)
    if size > BATCH_BYTES_MAX:
        raise Invalid(
            f"a batch takes at most {BATCH_BYTES_MAX} bytes (8 a number, plus metric names); this one {size}",
            reason=Reason.BATCH_TOO_LARGE,
            limit=BATCH_BYTES_MAX,
            size=size,
        )


def _increasing(values: list[int]) -> bool:
    return all(map(operator.lt, values, islice(values, 1, None)))


def _counts(values: list[Any], field: str, maximum: int) -> list[int]:
    """`values` as ints between 0 and `maximum`, or Invalid saying why not."""
    try:
        counts: list[int] = msgspec.convert(values, _counts_type(maximum), strict=True)
        return counts
    except msgspec.ValidationError:
        _check_counts(values, field, maximum)
        return values


def _check_counts(values: list[int], field: str, maximum: int) -> None:
    # map(type, ...) keeps the per-value work in C: a 1,000-step batch checks in microseconds.
    if set(map(type, values)) != {int}:
        raise Invalid(f"{field} must be integers", reason=Reason.INVALID_FIELD, field=field)
    if min(values) < 0 or max(values) > maximum:
        raise Invalid(f"{field} must be between 0 and {maximum}", reason=Reason.OUT_OF_RANGE, field=field)


def _column(values: Sequence[int] | None, field: str, count: int, maximum: int) -> list[int] | None:
    if values is None or len(values) == 0:
        return None
    values = list(values)
    if len(values) != count:
        raise Invalid(f"{field} must have one value per step", reason=Reason.COLUMN_LENGTH_MISMATCH, field=field)
    return _counts(values, field, maximum)


def _metrics(metrics: Mapping[str, Any], count: int) -> dict[str, dict[str, Any]]:
    if len(metrics) > METRICS_PER_BATCH_MAX:
        raise Invalid(
            f"a batch carries at most {METRICS_PER_BATCH_MAX} metrics",
            reason=Reason.TOO_MANY_METRICS,
            limit=METRICS_PER_BATCH_MAX,
        )
    normal: dict[str, dict[str, Any]] = {}
    for name in sorted(metrics):
        check_name(name, "metric name")
        column = metrics[name]
        if isinstance(column, Mapping):
            values, index = column.get("values", ()), column.get("index")
        else:
            values, index = column, None
        values = list(values)
        try:
            values = msgspec.convert(values, _FINITE, strict=True)
            finite = True
        except msgspec.ValidationError:
            kinds = set(map(type, values))
            if not kinds <= {float, int}:
                raise Invalid(f"metric {name} must hold numbers", reason=Reason.INVALID_FIELD, field=name) from None
            values, finite = list(map(float, values)), False
        if index is not None and len(index) == 0:
            index = None
        if index is None:
            if len(values) != count:
                raise Invalid(
                    f"metric {name} must have one value per step or an index",
                    reason=Reason.COLUMN_LENGTH_MISMATCH,
                    field=name,
                )
        else:
            index = list(index)
            if len(index) != len(values) or not all(type(i) is int for i in index):
                raise Invalid(
                    f"metric {name}: index and values differ", reason=Reason.COLUMN_LENGTH_MISMATCH, field=name
                )
            if not index or index[0] < 0 or index[-1] >= count or not _increasing(index):
                raise Invalid(f"metric {name}: index out of order or range", reason=Reason.INVALID_INDEX, field=name)
            if len(index) == count:
                index = None
        # Values msgspec refused are numbers (checked above): a non-finite one is why.
        if not finite and not all(math.isfinite(value) for value in values):
            raise Invalid(f"metric {name} holds a non-finite value", reason=Reason.NON_FINITE_METRIC, metric=name)
        normal[name] = {"values": values, "index": index}
    return normal
