"""What `trainledger watch` shows of one run (`Follow`), folded from the run's state, its first
reads and each update of its WatchRun stream: the last step and the recent rate, every metric's
last value, least and greatest, the last checkpoints, and what each update changed as plain lines.
services.cli.watch_screen draws it; services.cli.watch follows the stream into it.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from services.render.checkpoints import figure
from services.render.runs import progress_text, status_text
from services.render.spend import PRESUMED_GLOSS
from services.render.tables import eta_text, printable, usd

if TYPE_CHECKING:
    from clients.models import Checkpoint, MetricStats, RunState, StepBatch, WatchUpdate

__all__ = ["ATTEMPTS_SHOWN", "METRICS_SHOWN", "Follow", "Metric", "checkpoint_text", "total_steps"]

TOTAL_KEYS = ("max_steps", "total_steps", "iters")
FINISHED = ("done", "failed", "stopped")
RATE_WINDOW_S = 30.0  # The step rate is that of the steps of the last this many seconds.
METRICS_SHOWN = 12
ATTEMPTS_SHOWN = 3
CHECKPOINTS_SHOWN = 5


def total_steps(spec: Mapping[str, Any] | None) -> int | None:
    """The run's step count from its spec (max_steps, total_steps or iters), None without one."""
    for key in TOTAL_KEYS:
        value = (spec or {}).get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, int) and value > 0:
            return value
    return None


@dataclass(slots=True)
class Metric:
    """One metric so far: the last value (at `step` of `attempt`), the least and the greatest.
    The last value is that of the latest attempt's greatest step: a batch seen twice (the first
    reads and the stream overlap) changes nothing, and a new attempt that resumed from an earlier
    step takes over at once."""

    name: str
    last: float
    least: float
    greatest: float
    step: int
    attempt: int

    def see(self, attempt: int, step: int, value: float) -> None:
        if (attempt, step) >= (self.attempt, self.step):
            self.last, self.step, self.attempt = value, step, attempt
        self.least, self.greatest = min(self.least, value), max(self.greatest, value)


def _checkpoint_key(checkpoint: Checkpoint) -> tuple[int, int, str]:
    return checkpoint.attempt, checkpoint.step, checkpoint.handle.uri if checkpoint.handle else ""


def checkpoint_text(checkpoint: Checkpoint) -> str:
    handle = checkpoint.handle
    where = f"{handle.backend} {printable(handle.uri)}" if handle else "-"
    marks = [mark for mark, on in (("final", checkpoint.final), ("superseded", checkpoint.superseded)) if on]
    extra = f" ({', '.join(marks)})" if marks else ""
    return f"step {checkpoint.step:,} (attempt {checkpoint.attempt}): {where}{extra}"


class Follow:
    """What the view shows of one run, folded from its state, its first reads and each update of
    its WatchRun stream. `apply` answers what changed as plain lines (the non-terminal output);
    services.cli.watch_screen.drawing draws the whole of it with Rich."""

    def __init__(
        self,
        run_id: str,
        state: RunState,
        clock: Callable[[], float] = time.monotonic,
        *,
        exit_on_lost: bool = False,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.exit_on_lost = exit_on_lost
        self.run_id = run_id
        self.clock = clock  # Seconds, for the rate; `wall` is the time of day an ETA falls at.
        self.wall = wall
        self.spec_total = total_steps(state.run.spec)  # WatchRun's states leave the spec out.
        self.metrics: dict[str, Metric] = {}
        self.checkpoints: deque[Checkpoint] = deque(maxlen=CHECKPOINTS_SHOWN)
        self._checkpoint_keys: set[tuple[int, int, str]] = set()
        self.samples: deque[tuple[float, int]] = deque()  # (time, last step) as steps came.
        self.notice = ""  # A line about the stream itself ("reconnecting ..."), "" when all is well.
        self.position = state.position
        self.last_step: int | None = None
        self.state = state
        self._take_state(state)
        for checkpoint in (state.checkpoint,) if state.checkpoint else ():
            self._see_checkpoint(checkpoint)

    # What is read before the stream.

    def seed_metrics(self, stats: Iterable[MetricStats]) -> None:
        """The metrics recorded before the stream began (GetMetrics: the live line, whose last
        step is taken to be the current attempt's)."""
        attempt = self.state.current_attempt
        for stat in stats:
            metric = self.metrics.get(stat.name)
            if metric is None:
                self.metrics[stat.name] = Metric(stat.name, stat.last, stat.min, stat.max, stat.last_step, attempt)
            else:
                metric.see(attempt, stat.last_step, stat.last)
                metric.least, metric.greatest = min(metric.least, stat.min), max(metric.greatest, stat.max)

    def seed_checkpoints(self, checkpoints: Iterable[Checkpoint]) -> None:
        """The checkpoints recorded before the stream began (ListCheckpoints, in step order)."""
        for checkpoint in checkpoints:
            self._see_checkpoint(checkpoint)

    # The stream.

    @property
    def total(self) -> int | None:
        """The run's step count: the plan it was opened with (OpenRun max_steps), else its spec's."""
        planned = self.state.progress.max_steps if self.state.progress is not None else None
        return planned if planned else self.spec_total

    @property
    def status(self) -> str:
        return status_text(self.state.run.status, self.state.current_attempt)

    @property
    def finished(self) -> bool:
        """The run finished, or (with exit_on_lost) was lost."""
        return self.state.run.status in FINISHED or (self.exit_on_lost and self.state.run.status == "lost")

    @property
    def name(self) -> str:
        return printable(self.state.run.name) or self.run_id

    def apply(self, update: WatchUpdate) -> list[str]:
        """Fold one update in; the lines that say what it changed: one per event at least, and
        for the state a stream begins with, what changed since the state before it."""
        self.position = max(self.position, update.position)
        if update.event_type == "state":
            before, self.state = self.state, update.state
            self._take_state(update.state)
            return self._changes(before, update.state)
        lines: list[str] = []
        if update.steps is not None and update.steps.steps:
            lines.append(self._take_steps(update.steps))
        before, self.state = self.state, update.state
        if update.state.last_step is not None and update.state.last_step != before.last_step:
            self._step_to(update.state.last_step)
        lines += self._changes(before, update.state)
        return lines or [f"{update.event_type} (position {update.position})"]

    def _take_state(self, state: RunState) -> None:
        if state.last_step is not None:
            self._step_to(state.last_step)

    def _step_to(self, step: int) -> None:
        now = self.clock()
        if self.last_step is not None and step < self.last_step:
            self.samples.clear()  # A new attempt resumed from an earlier step: a new rate.
        self.last_step = step
        self.samples.append((now, step))
        while len(self.samples) > 2 and self.samples[1][0] < now - RATE_WINDOW_S:
            self.samples.popleft()

    def _take_steps(self, batch: StepBatch) -> str:
        steps = batch.steps
        for column in batch.metrics:
            rows = column.index or range(len(column.values))
            for row, value in zip(rows, column.values, strict=False):
                if 0 <= row < len(steps) and math.isfinite(value):
                    self._see_metric(column.name, batch.attempt, steps[row], value)
        self._step_to(max(steps))
        last = {column.name: column.values[-1] for column in batch.metrics if column.values}
        shown = [f"{printable(name)}={figure(value)}" for name, value in sorted(last.items())][:METRICS_SHOWN]
        if len(last) > METRICS_SHOWN:
            shown.append(f"and {len(last) - METRICS_SHOWN} more")
        span = f"{steps[0]:,}" if len(steps) == 1 else f"{min(steps):,}-{max(steps):,}"
        of = f" of {self.total:,}" if self.total else ""
        return f"steps {span}{of} (attempt {batch.attempt})" + (f": {' '.join(shown)}" if shown else "")

    def _see_metric(self, name: str, attempt: int, step: int, value: float) -> None:
        metric = self.metrics.get(name)
        if metric is None:
            self.metrics[name] = Metric(name, value, value, value, step, attempt)
        else:
            metric.see(attempt, step, value)

    def _see_checkpoint(self, checkpoint: Checkpoint) -> bool:
        key = _checkpoint_key(checkpoint)
        if key in self._checkpoint_keys:
            return False
        self._checkpoint_keys.add(key)
        self.checkpoints.append(checkpoint)
        return True

    def _changes(self, before: RunState, after: RunState) -> list[str]:
        lines: list[str] = []
        known = {attempt.number for attempt in before.attempts}
        for attempt in after.attempts:
            if attempt.number not in known:
                resumed = (
                    f"resumes from step {attempt.resumed_from_step:,}"
                    if attempt.resumed_from_step is not None
                    else "from the start"
                )
                label = f" {printable(attempt.label)}" if attempt.label else ""
                lines.append(f"attempt {attempt.number}{label} started ({resumed})")
        if after.checkpoint is not None and self._see_checkpoint(after.checkpoint):
            lines.append(f"checkpoint at {checkpoint_text(after.checkpoint)}")
        spend, was = after.spend, before.spend
        if (spend.committed_usd_micro, spend.presumed_usd_micro, spend.pending_usd_micro, spend.cap_usd_micro) != (
            was.committed_usd_micro,
            was.presumed_usd_micro,
            was.pending_usd_micro,
            was.cap_usd_micro,
        ):
            lines.append(f"spend {self.spend_line()}")
            if spend.presumed_usd_micro > was.presumed_usd_micro:
                lines.append(f"  ({PRESUMED_GLOSS})")
        if after.child_count > before.child_count and after.children:
            child = after.children[0]  # The newest (WatchRun: Run.ChildOpened).
            name = printable(child.name) or child.run_id[:8]
            lines.append(f"run {name} ({child.run_id[:8]}) started from step {child.step:,}")
        if after.run.status != before.run.status and after.run.status in FINISHED:
            error = f": {printable(after.run.error)}" if after.run.error else ""
            lines.append(f"run {after.run.status}{error}")
        elif after.run.status != before.run.status and "lost" in (after.run.status, before.run.status):
            lines.append(_lost_text(after) if after.run.status == "lost" else "run running again")
        return lines

    # What is shown.

    def rate(self) -> float | None:
        """Steps a second over the recent window (falling while no step comes), None before two
        step numbers have been seen."""
        if len(self.samples) < 2:
            return None
        first_time, first_step = self.samples[0]
        _, last_step = self.samples[-1]
        elapsed = self.clock() - first_time
        if elapsed <= 0 or last_step <= first_step:
            return None
        return (last_step - first_step) / elapsed

    def eta(self) -> float | None:
        """Seconds left at the recent rate, None without a step count or a rate."""
        rate = self.rate()
        if self.total is None or rate is None or self.last_step is None:
            return None
        return max(0, self.total - self.last_step) / rate

    def steps_text(self) -> str:
        """ "step 96 of 400 (24.0%), 5.90 steps/s, ETA 3m (14:05 UTC)": the words of `runs show`
        (services.render.progress_text, its ETA as tables.eta_text) with the recent rate and
        the time left at it."""
        from clients.models import Progress

        total, step = self.total, self.last_step
        fraction = None
        if total and step is not None:
            fraction = 1.0 if self.state.run.status == "done" else min(1.0, max(0.0, step / total))
        progress = Progress(max_steps=total, step=step, fraction=fraction, steps_per_second=self.rate())
        text = progress_text(progress, not self.finished) or "no step yet"
        if self.finished:
            return text
        eta = self.eta()
        return text + (f", ETA {eta_text(eta, self.wall())}" if eta is not None else (", ETA -" if total else ""))

    def spend_line(self) -> str:
        spend = self.state.spend
        cap = spend.cap_usd_micro
        text = f"{usd(spend.committed_usd_micro)} of {usd(cap) if cap is not None else 'no cap'}"
        if spend.presumed_usd_micro:
            text += f", {usd(spend.presumed_usd_micro)} presumed"
        if spend.pending_usd_micro:
            text += f", {usd(spend.pending_usd_micro)} pending"
        if spend.remaining_usd_micro is not None:
            text += f", {usd(spend.remaining_usd_micro)} left"
        if spend.overrun_usd_micro:
            text += f", {usd(spend.overrun_usd_micro)} over"
        return text

    def summary(self) -> str:
        step = "no step yet" if self.last_step is None else f"step {self.last_step:,}"
        of = f" of {self.total:,}" if self.total else ""
        return f"{self.status}, attempt {self.state.current_attempt}, {step}{of}, spend {self.spend_line()}"

    def final_line(self) -> str:
        """The line printed when the run has finished: its status, last step and spend."""
        error = f" ({printable(self.state.run.error)})" if self.state.run.error else ""
        step = "no step" if self.last_step is None else f"step {self.last_step:,}"
        of = f" of {self.total:,}" if self.total else ""
        return f"{self.name} {self.state.run.status}{error} at {step}{of}, spend {self.spend_line()}"


def _lost_text(state: Any) -> str:
    """ "run lost (attempt 2: no sign of life since 12:00:03 UTC)": its lease lapsed."""
    attempt = state.attempts[-1] if state.attempts else None
    seen = attempt.last_seen_at if attempt is not None else None
    since = f": no sign of life since {seen:%H:%M:%S} UTC" if seen is not None else ""
    return f"run lost (attempt {state.current_attempt}{since})"
