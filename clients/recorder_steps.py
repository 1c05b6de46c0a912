"""RunRecorder.log_steps: the records of several steps handed over at once by a training loop that
logs every step (the Transformers callback), checked on the sender thread rather than in the loop."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clients.sender import RawRow, Sender
    from clients.system import SystemSampler

__all__ = ["RecorderSteps"]


class RecorderSteps:
    """The log_steps method of RunRecorder (which supplies the sender, the system sampler, the
    lock and the counters)."""

    if TYPE_CHECKING:
        _sender: Sender
        _system: SystemSampler | None
        _closed: bool
        _lock: threading.Lock
        _counters: dict[str, int]

    def log_steps(self, rows: list[RawRow]) -> None:
        """Queue the records of several steps, in order, as log(step, tokens=..., usd_micro=...,
        **metrics) would queue each: rows of (step, tokens or None, usd_micro or None, {metric:
        value}). Returns at once, never raises. The rows are checked on the sender thread (a step
        or amount that is not an integer >= 0 drops its row, non-finite values are dropped: both
        counted when it takes them), so the values must be numbers that do not change afterwards
        (floats, ints; not a tensor updated in place), and the metric dicts are the recorder's
        from then on. A system metrics sample that is due goes onto the first row (read by the
        sender thread when it takes the row)."""
        if not rows:
            return
        queued = 0
        try:
            if self._system is not None and self._system.due():  # Read on the sender thread.
                rows = [(*rows[0], self._system.read), *rows[1:]]
            queued = 0 if self._closed else self._sender.put_many(rows)
        except Exception:  # noqa: BLE001 - never into the training loop: the rows are dropped (counted).
            queued = 0
        if queued < len(rows):
            with self._lock:
                self._counters["dropped"] += len(rows) - queued
