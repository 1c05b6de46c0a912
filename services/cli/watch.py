"""`trainledger watch RUN`: a live terminal view of a run, through the server, until it finishes.

    trainledger watch RUN [--wait-s SECONDS] [--exit-on-lost] [--address HOST:PORT] [--token-file FILE]
                          [--tls] [--ca-file FILE]

RUN is a run id, a unique id prefix, a name or a run key (services.cli.remote.resolve_run). The view
shows the run's status and attempt; a progress bar of the last step against the run's plan (the
max_steps it was opened with, else the spec's `max_steps`, `total_steps` or `iters`; without one,
the step and the rate), in the words of `runs show` ("step 96 of 400 (24.0%), 5.90 steps/s") with
the time left at the recent rate; every metric's last value, least and
greatest so far; spend against the cap as a bar (committed, pending, remaining, in dollars); the
last attempts and the last checkpoints as they come. It ends when the run finishes, printing one
final line (the run's status, its last step, its spend): exit status 0 when the run is done, 1 when
it failed or was stopped, 130 on Ctrl-C. A server that does not answer is one line on stderr and
exit status 2, a token the server refuses (missing, invalid, expired, revoked) exit status 3, and
a name that matches more than one run is one line and exit status 1. A run not
there yet (the watch started before the trainer opened it) is waited for, saying so on stderr,
until it appears, Ctrl-C, or --wait-s seconds (then `no run RUN`, exit status 1). A lost run (its
attempt's lease lapsed) is not finished: a new attempt may take it up, so the watch goes on
waiting for it; with --exit-on-lost it ends there instead, with the final line and exit status 1.

How it follows the run:

- One GetRunState for the spec (WatchRun leaves it out), then GetMetrics and ListCheckpoints for
  the metrics and checkpoints recorded so far, all at least as new as that state, then WatchRun
  from the position just after it, so nothing recorded in between is missed. Anything the reads
  and the stream both carry is folded in twice, which changes nothing: a minimum, a maximum, a
  last value and a set of checkpoints are the same however often a step or a checkpoint is seen.
- The stream is read on a thread of its own into a queue; the main thread folds every update
  waiting in the queue into one model (`Follow`) before it draws, and draws at most every
  REDRAW_S (and every TICK_S while nothing comes, so the rate and the time left stay current),
  so a run logging thousands of batches a second costs a few redraws a second, not one per batch.
- A step batch carries no state (the server sends the state's changes with the next event that is
  not a batch), so the last step is the batch's; other events carry the whole state as it stands.
- The stream is watched again from where it broke: at once after WATCHER_TOO_SLOW (from the
  position the server names), and every RECONNECT_PAUSE_S for RECONNECT_S when the server goes
  away (a restart); past that it is one line on stderr and exit status 2.
- When stdout is not a terminal (a log, a pipe) there is no live view: one plain line per event,
  each starting with its UTC time, and the final line.

Rich draws the view; it is imported only when a terminal needs it.
"""

from __future__ import annotations

import argparse
import math
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from services.cli import remote
from services.cli.local import Failure
from services.render import PRESUMED_GLOSS, progress_text, status_text
from services.render.tables import printable, usd, when

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.live import Live

    from clients import LedgerClient
    from clients.models import Checkpoint, MetricStats, RunState, StepBatch, WatchUpdate

__all__ = ["add_parser", "watch", "Follow", "total_steps", "FINISHED"]

# The spec keys that give a run's step count, the first present wins.
TOTAL_KEYS = ("max_steps", "total_steps", "iters")
FINISHED = ("done", "failed", "stopped")
REDRAW_S = 0.1  # At most ~10 redraws a second, however fast updates come.
TICK_S = 1.0  # A redraw this often while nothing comes (the rate and the time left move on).
RATE_WINDOW_S = 30.0  # The step rate is that of the steps of the last this many seconds.
RECONNECT_S = 30.0  # How long a server that went away is waited for before giving up.
RECONNECT_PAUSE_S = 0.5
WAIT_PAUSE_S = 0.5  # How often a run not there yet is looked for.
WAIT_MAX_S = 7 * 86_400.0
METRICS_SHOWN = 12
ATTEMPTS_SHOWN = 3
CHECKPOINTS_SHOWN = 5
CHECKPOINT_PAGE = 500
BAR_WIDTH = 40


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


def _number(value: float) -> str:
    return f"{value:.6g}"


def _checkpoint_key(checkpoint: Checkpoint) -> tuple[int, int, str]:
    return checkpoint.attempt, checkpoint.step, checkpoint.handle.uri if checkpoint.handle else ""


def _checkpoint_text(checkpoint: Checkpoint) -> str:
    handle = checkpoint.handle
    where = f"{handle.backend} {printable(handle.uri)}" if handle else "-"
    marks = [mark for mark, on in (("final", checkpoint.final), ("superseded", checkpoint.superseded)) if on]
    extra = f" ({', '.join(marks)})" if marks else ""
    return f"step {checkpoint.step:,} (attempt {checkpoint.attempt}): {where}{extra}"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, seconds = divmod(rest, 60)
    clock = f"{hours}:{minutes:02d}:{seconds:02d}"
    return f"{days}d {clock}" if days else clock


class Follow:
    """What the view shows of one run, folded from its state, its first reads and each update of
    its WatchRun stream. `apply` answers what changed as plain lines (the non-terminal output);
    `render` draws the whole of it with Rich."""

    def __init__(
        self, run_id: str, state: RunState, clock: Callable[[], float] = time.monotonic, *, exit_on_lost: bool = False
    ) -> None:
        self.exit_on_lost = exit_on_lost
        self.run_id = run_id
        self.clock = clock
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
        shown = [f"{printable(name)}={_number(value)}" for name, value in sorted(last.items())][:METRICS_SHOWN]
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
            lines.append(f"checkpoint at {_checkpoint_text(after.checkpoint)}")
        spend, was = after.spend, before.spend
        if (spend.committed_usd_micro, spend.presumed_usd_micro, spend.pending_usd_micro, spend.cap_usd_micro) != (
            was.committed_usd_micro,
            was.presumed_usd_micro,
            was.pending_usd_micro,
            was.cap_usd_micro,
        ):
            lines.append(f"spend {self.spend_text()}")
            if spend.presumed_usd_micro > was.presumed_usd_micro:
                lines.append(f"  ({PRESUMED_GLOSS})")
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
        """ "step 96 of 400 (24.0%), 5.90 steps/s, ETA 0:03:00": the words of `runs show`
        (services.render.progress_text) with the recent rate and the time left at it."""
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
        return text + (f", ETA {_duration(eta)}" if eta is not None else (", ETA -" if total else ""))

    def spend_text(self) -> str:
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
        return f"{self.status}, attempt {self.state.current_attempt}, {step}{of}, spend {self.spend_text()}"

    def final_line(self) -> str:
        """The line printed when the run has finished: its status, last step and spend."""
        error = f" ({printable(self.state.run.error)})" if self.state.run.error else ""
        step = "no step" if self.last_step is None else f"step {self.last_step:,}"
        of = f" of {self.total:,}" if self.total else ""
        return f"{self.name} {self.state.run.status}{error} at {step}{of}, spend {self.spend_text()}"

    def render(self) -> RenderableType:
        """The whole view as one Rich renderable (made of Text, never of markup from the run)."""
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        state = self.state
        colours = {"done": "green", "failed": "red", "stopped": "yellow", "lost": "magenta"}
        colour = colours.get(state.run.status, "cyan")
        header = Text.assemble(
            (self.name, "bold"),
            f"  {self.run_id}  ",
            (self.status, f"bold {colour}"),
            f"  attempt {state.current_attempt}",
        )
        bars = Table.grid(padding=(0, 1))
        bars.add_column(style="bold")
        bars.add_column(width=BAR_WIDTH)
        bars.add_column()
        completed = float(self.last_step or 0)
        steps_bar = ProgressBar(total=float(self.total) if self.total else None, completed=completed, width=BAR_WIDTH)
        bars.add_row(Text("steps"), steps_bar, Text(self.steps_text()))
        spend = state.spend
        cap = spend.cap_usd_micro
        spend_bar: RenderableType = (
            ProgressBar(
                total=float(max(cap, 1)),
                completed=float(min(spend.committed_usd_micro + spend.pending_usd_micro, max(cap, 1))),
                width=BAR_WIDTH,
                complete_style="red" if spend.overrun_usd_micro else "magenta",
            )
            if cap is not None
            else Text("(no cap)", style="dim")
        )
        bars.add_row(Text("spend"), spend_bar, Text(self.spend_text()))
        parts: list[RenderableType] = [header, bars]
        if self.metrics:
            metrics = Table(box=None, padding=(0, 2), pad_edge=False, show_edge=False)
            metrics.add_column("metric", header_style="bold")
            for column in ("last", "min", "max", "at step"):
                metrics.add_column(column, justify="right", header_style="bold")
            shown = sorted(self.metrics)
            for name in shown[:METRICS_SHOWN]:
                m = self.metrics[name]
                metrics.add_row(
                    Text(printable(name)),
                    Text(_number(m.last)),
                    Text(_number(m.least)),
                    Text(_number(m.greatest)),
                    Text(f"{m.step:,}"),
                )
            if len(shown) > METRICS_SHOWN:
                metrics.add_row(Text(f"and {len(shown) - METRICS_SHOWN} more", style="dim"))
            parts += [Text(""), metrics]
        if state.attempts:
            parts += [Text(""), Text("attempts", style="bold")]
            for attempt in state.attempts[-ATTEMPTS_SHOWN:]:
                resumed = (
                    f", resumed from step {attempt.resumed_from_step:,}"
                    if attempt.resumed_from_step is not None
                    else ""
                )
                label = f" {printable(attempt.label)}" if attempt.label else ""
                ended = ", ended" if attempt.ended else ""
                parts.append(Text(f"  #{attempt.number}{label} started {when(attempt.started_at)}{resumed}{ended}"))
        if self.checkpoints:
            parts += [Text(""), Text("checkpoints", style="bold")]
            for checkpoint in self.checkpoints:
                saved = f" at {when(checkpoint.saved_at)}" if checkpoint.saved_at else ""
                style = "dim" if checkpoint.superseded else ""
                parts.append(Text(f"  {_checkpoint_text(checkpoint)}{saved}", style=style))
        if state.run.error:
            parts += [Text(""), Text(f"error: {printable(state.run.error)}", style="red")]
        if self.notice:
            parts += [Text(""), Text(self.notice, style="yellow")]
        return Group(*parts)


# The stream, read on its own thread.

Item = tuple[str, Any]  # ("update", WatchUpdate) | ("notice", str) | ("error", Exception)


class Tail(threading.Thread):
    """Reads the run's WatchRun stream into `items`, watching again from where it broke."""

    def __init__(self, client: LedgerClient, run_id: str, from_position: int, items: queue.Queue[Item]) -> None:
        super().__init__(name=f"watch-{run_id}", daemon=True)
        self.client, self.run_id, self.next_position, self.items = client, run_id, from_position, items
        self.stopping = threading.Event()

    def run(self) -> None:
        import grpc

        from clients import LedgerClientError, Unavailable, WatcherTooSlow

        lost_at: float | None = None
        while not self.stopping.is_set():
            try:
                for update in self.client.watch_run(run_id=self.run_id, from_position=self.next_position):
                    lost_at = None
                    self.next_position = max(self.next_position, update.position + 1)
                    self.items.put(("update", update))
                why = "the server ended the stream"
            except LedgerClientError as error:
                if self.stopping.is_set():
                    return
                if isinstance(error, WatcherTooSlow) and error.metadata.get("next_position", "").isdigit():
                    self.next_position = int(error.metadata["next_position"])
                    continue
                if not isinstance(error, Unavailable):
                    self.items.put(("error", error))
                    return
                why = error.message or error.reason
            if self.stopping.is_set():
                return
            now = time.monotonic()
            lost_at = now if lost_at is None else lost_at
            if now - lost_at > RECONNECT_S:
                lost = Unavailable(grpc.StatusCode.UNAVAILABLE.name, f"{why}, and did not come back")
                self.items.put(("error", lost))
                return
            self.items.put(("notice", f"reconnecting: {why}"))
            self.stopping.wait(RECONNECT_PAUSE_S)

    def stop(self) -> None:
        self.stopping.set()


# The screens: a live view on a terminal, plain lines elsewhere.


class Plain:
    """One line per event on a stream that is not a terminal."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __enter__(self) -> Plain:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def lines(self, lines: Iterable[str]) -> None:
        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        for line in lines:
            self.out.write(f"{stamp} {line}\n")
        self.out.flush()

    def draw(self, view: Follow) -> None:
        pass


class Screen:
    """The live view on a terminal (Rich's Live, redrawn only when asked)."""

    def __init__(self, view: Follow) -> None:
        from rich.console import Console
        from rich.live import Live

        self.live: Live = Live(
            view.render(),
            console=Console(),
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=False,
            vertical_overflow="crop",
        )

    def __enter__(self) -> Screen:
        self.live.start(refresh=True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.live.stop()

    def lines(self, lines: Iterable[str]) -> None:
        pass

    def draw(self, view: Follow) -> None:
        self.live.update(view.render(), refresh=True)


def follow(view: Follow, items: queue.Queue[Item], screen: Plain | Screen) -> None:
    """Fold the stream's items into `view` and draw it, until the run finishes. Raises the
    stream's error."""
    drawn = time.monotonic()
    dirty = False
    while not view.finished:
        wait = max(0.0, drawn + REDRAW_S - time.monotonic()) if dirty else TICK_S
        try:
            waiting = [items.get(timeout=wait)]
        except queue.Empty:
            waiting = []
        while True:  # Everything that came meanwhile, folded in before one redraw.
            try:
                waiting.append(items.get_nowait())
            except queue.Empty:
                break
        for kind, item in waiting:
            if kind == "error":
                raise item
            if kind == "notice":
                if item != view.notice:  # Once, not once a try.
                    screen.lines([item])
                view.notice = item
            else:
                if view.notice:
                    screen.lines(["watching again"])
                    view.notice = ""
                screen.lines(view.apply(item))
            dirty = True
            if view.finished:
                break
        now = time.monotonic()
        if view.finished or not waiting or now - drawn >= REDRAW_S:
            screen.draw(view)
            drawn, dirty = now, False


def watch(args: argparse.Namespace) -> None:
    """Follow a run until it finishes; see the module's docstring."""
    from clients import DeadlineExceeded, LedgerClientError, Unavailable

    terminal = sys.stdout.isatty()
    with remote.talking(args) as client:
        run_id = _await_run(client, args.run, args.wait_s)
        state = client.get_run_state(run_id=run_id)
        view = Follow(run_id, state, exit_on_lost=args.exit_on_lost)
        try:
            view.seed_metrics(client.get_metrics(run_id=run_id, min_position=state.position))
        except LedgerClientError as error:
            if isinstance(error, Unavailable | DeadlineExceeded):
                raise
            # A server without the metrics read: the metrics are those the stream brings.
        view.seed_checkpoints(_checkpoints(client, run_id, state.position))
        items: queue.Queue[Item] = queue.Queue()
        tail = Tail(client, run_id, state.position + 1, items)
        screen: Plain | Screen = Screen(view) if terminal else Plain(sys.stdout)
        try:
            with screen:
                screen.lines([f"watching {view.name} ({run_id}): {view.summary()}"])
                if not view.finished:
                    tail.start()
                    follow(view, items, screen)
                screen.draw(view)
        except LedgerClientError as error:
            raise remote.failure_of(error, remote.address_of(args)) from None
        finally:
            tail.stop()
    print(view.final_line(), flush=True)
    if view.state.run.status != "done":
        raise Failure(f"the run {view.state.run.status}", status=1)


def _await_run(client: LedgerClient, ref: str, wait_s: float | None) -> str:
    """The id of the run `ref` names. One not there yet (the trainer has not opened it) is looked
    for again every WAIT_PAUSE_S, saying so once on stderr, for at most `wait_s` seconds (None:
    until Ctrl-C); then it is `no run REF`. An ambiguous reference fails at once."""
    deadline = None if wait_s is None else time.monotonic() + wait_s
    told = False
    while True:
        try:
            return remote.resolve_run(client, ref)
        except remote.NoRun:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise
            if not told:
                bound = "" if wait_s is None else f"at most {wait_s:g} s; "
                print(
                    f"waiting for run {printable(ref)} to appear ({bound}Ctrl-C to stop)…", file=sys.stderr, flush=True
                )
                told = True
            time.sleep(WAIT_PAUSE_S if left is None else min(WAIT_PAUSE_S, left))


def _wait_s(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= WAIT_MAX_S:
        raise argparse.ArgumentTypeError(f"--wait-s is between 0 and {WAIT_MAX_S:g} seconds, not {text}")
    return value


def _checkpoints(client: LedgerClient, run_id: str, position: int) -> list[Checkpoint]:
    """The run's last CHECKPOINTS_SHOWN checkpoints, in step order."""
    last: deque[Checkpoint] = deque(maxlen=CHECKPOINTS_SHOWN)
    token = ""
    while True:
        page = client.list_checkpoints(
            run_id=run_id, page_size=CHECKPOINT_PAGE, page_token=token, min_position=position
        )
        last.extend(page.checkpoints)
        token = page.next_page_token
        if not token:
            return list(last)


def add_parser(commands: Any) -> None:
    sub = commands.add_parser("watch", help="a live view of a run in the terminal, until it finishes")
    sub.add_argument("run", metavar="RUN", help="run id, unique id prefix, name or run key")
    sub.add_argument(
        "--wait-s",
        type=_wait_s,
        default=None,
        metavar="SECONDS",
        help="how long to wait for a run not opened yet (default: until it appears or Ctrl-C; 0: not at all)",
    )
    sub.add_argument(
        "--exit-on-lost",
        action="store_true",
        help="end when the run is lost (its attempt's lease lapsed), exit status 1 (default: wait for it to return)",
    )
    remote.add_server_options(sub, json=False)
    sub.set_defaults(handler=watch)


def _lost_text(state: Any) -> str:
    """ "run lost (attempt 2: no sign of life since 12:00:03 UTC)": its lease lapsed."""
    attempt = state.attempts[-1] if state.attempts else None
    seen = attempt.last_seen_at if attempt is not None else None
    since = f": no sign of life since {seen:%H:%M:%S} UTC" if seen is not None else ""
    return f"run lost (attempt {state.current_attempt}{since})"
