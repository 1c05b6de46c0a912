"""Step rows in, column-wise batches out: up to `batch_steps_max` steps, or whatever has waited
`batch_interval_s` since the batch's first step."""

from __future__ import annotations

import math
import operator
import time
from typing import Any

from clients import codec
from trainledger.v1 import common_pb2

__all__ = ["Batcher", "Row", "make_row"]

Row = list[Any]  # [step, tokens or None, usd_micro or None, {metric: finite float}]


def make_row(step: Any, tokens: Any, usd_micro: Any, metrics: dict[str, Any]) -> tuple[Row, int]:
    """A row from logged values, and how many metric values were dropped for not being finite.
    Values that are not numbers (text, None, bools) are left out; numpy and torch scalars count.
    Raises ValueError or TypeError for a step, tokens or amount that is not an integer >= 0."""
    kept, non_finite = {}, 0
    for name, value in metrics.items():
        if isinstance(value, bool | str | bytes) or value is None:
            continue
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            continue
        if math.isfinite(number):
            kept[name] = number
        else:
            non_finite += 1
    first = operator.index(step)
    if first < 0:
        raise ValueError("steps are >= 0")
    return [first, _count(tokens), _count(usd_micro), kept], non_finite


def _count(value: Any) -> int | None:
    return None if value is None else operator.index(value)


class Batcher:
    def __init__(self, run_id: str, attempt: int, *, batch_steps_max: int, batch_interval_s: float) -> None:
        self.run_id, self.attempt = run_id, attempt
        self.batch_steps_max, self.batch_interval_s = batch_steps_max, batch_interval_s
        self._rows: list[Row] = []
        self._started_at = 0.0
        self._last_step = -1

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def full(self) -> bool:
        return len(self._rows) >= self.batch_steps_max

    def due_at(self) -> float | None:
        """When the batch being built must go, or None when it is empty."""
        return self._started_at + self.batch_interval_s if self._rows else None

    def add(self, row: Row) -> bool:
        """Add a row; False when its step is not after the last one (it cannot be sent any more).
        The same step logged again before its batch goes (train metrics, then eval) is merged."""
        if self._rows and row[0] == self._rows[-1][0]:
            last = self._rows[-1]
            last[1] = row[1] if row[1] is not None else last[1]
            last[2] = row[2] if row[2] is not None else last[2]
            last[3].update(row[3])
            return True
        if row[0] <= self._last_step:
            return False
        if not self._rows:
            self._started_at = time.monotonic()
        self._rows.append(row)
        self._last_step = row[0]
        return True

    def take(self) -> common_pb2.StepBatch:
        """The batch of the rows added so far (then empty)."""
        batch = codec.batch_from_columns(self.run_id, self.attempt, (tuple(row) for row in self._rows))
        self._rows = []
        return batch
