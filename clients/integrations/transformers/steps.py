"""The step records of a Transformers callback's train(): a trainer's logs of one step (train, then
eval) merged into one record and handed to the recorder with the others that are over, in one
RunRecorder.log_steps call (which checks them on its sender thread, off the training loop), the
last finite loss and the trainer's summary log kept for the run's summary, and the count of
points recorded that the callback's warn-once rule reads. Kept apart from the callback so that
what a step record holds reads in one place."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clients.integrations.transformers.logs import SUMMARY_KEYS, is_summary, step_metrics
from clients.recorder import RunRecorder

if TYPE_CHECKING:
    from clients.sender import RawRow

__all__ = ["StepRows", "HANDOVER_ROWS", "HANDOVER_S"]

# The rows of steps that are over go to the recorder together (one log_steps call), once this many
# wait or the first of them has waited this long: a fast loop does not hand over (and wake the
# recorder's sender) every step.
HANDOVER_ROWS = 32
HANDOVER_S = 0.1


class StepRows:
    """The steps of one train(): `row` ([step, tokens, metrics] of the step being logged),
    `points` (logs recorded), `logs_at_begin` (the trainer's log count when it began), `last_loss`
    and `summary` (the trainer's end-of-training log)."""

    def __init__(self) -> None:
        self.row: list[Any] | None = None
        # Rows of steps that are over, not yet handed over: (step, tokens, None, metrics).
        self.over: list[RawRow] = []
        self._over_since = 0.0
        self.points = 0
        self.logs_at_begin = 0
        self.last_loss: float | None = None
        self.summary: dict[str, Any] = {}

    def add(self, logs: Mapping[str, Any], state: Any, recorder: RunRecorder | None) -> None:
        """Take one log of the trainer: the summary log is kept, a step's log is merged into the
        row of its step, and the row of an earlier step is sent to `recorder` first."""
        if is_summary(logs):
            self.summary.update({key: logs[key] for key in SUMMARY_KEYS if key in logs})
            return
        metrics = step_metrics(logs)
        loss = metrics.get("loss")
        if isinstance(loss, int | float) and math.isfinite(loss):
            self.last_loss = float(loss)
        seen = getattr(state, "num_input_tokens_seen", 0)
        tokens = int(seen) if seen else None
        step = state.global_step
        if self.row is not None and self.row[0] == step:
            self.row[1] = tokens if tokens is not None else self.row[1]
            self.row[2].update(metrics)
        else:
            self.step_over(recorder)
            self.row = [step, tokens, metrics]
        self.points += 1

    def step_over(self, recorder: RunRecorder | None) -> None:
        """The step being logged is over: its row waits with the others for the next handover
        to `recorder` (HANDOVER_ROWS, HANDOVER_S)."""
        row, self.row = self.row, None
        if row is None:
            return
        over, now = self.over, time.monotonic()
        if not over:
            self._over_since = now
        over.append((row[0], row[1], None, row[2]))
        if len(over) >= HANDOVER_ROWS or now - self._over_since >= HANDOVER_S:
            self.send(recorder)

    def send(self, recorder: RunRecorder | None) -> None:
        """Hand every row that waits, and the row of the step being logged, if any, to `recorder`
        (one log_steps call)."""
        rows: list[RawRow]
        rows, self.over = self.over, []
        if self.row is not None:
            row, self.row = self.row, None
            rows.append((row[0], row[1], None, row[2]))
        if recorder is not None and rows:
            recorder.log_steps(rows)

    def unrecorded(self, state: Any, *, ended: bool) -> int:
        """How many times the trainer has logged since it began, its summary log aside once
        `ended`; 0 once a point was recorded."""
        if self.points:
            return 0
        logged = len(state.log_history) - self.logs_at_begin
        if ended and state.log_history and is_summary(state.log_history[-1]):
            logged -= 1
        return logged

    def run_summary(self, steps: int, attempt: int) -> dict[str, Any]:
        """The run's summary: the steps, the attempt, the final loss and the finite values of the
        trainer's summary log."""
        summary: dict[str, Any] = {"steps": steps, "attempt": attempt}
        if self.last_loss is not None:
            summary["final_loss"] = self.last_loss
        summary.update(
            {
                key: value
                for key, value in self.summary.items()
                if isinstance(value, int | float) and math.isfinite(value)
            }
        )
        return summary
