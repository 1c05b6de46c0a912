"""The screens of `trainledger watch`: a live view on a terminal (`Screen`, drawn with Rich from
services.cli.watch_model.Follow by `drawing`), plain lines elsewhere (`Plain`). Rich is imported
only when a terminal needs it; the view is made of Text, never of markup from the run.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from services.cli.watch_model import ATTEMPTS_SHOWN, METRICS_SHOWN, Follow, checkpoint_text
from services.render.checkpoints import figure
from services.render.tables import printable, when

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.live import Live

__all__ = ["Plain", "Screen", "drawing"]

BAR_WIDTH = 40
MIN_BAR_WIDTH = 10
COLOURS = {"done": "green", "failed": "red", "stopped": "yellow", "lost": "magenta"}


def drawing(view: Follow, width: int = 120) -> RenderableType:
    """The whole view as one Rich renderable for a terminal `width` columns wide (made of Text,
    never of markup from the run)."""
    from rich.console import Group
    from rich.text import Text

    state = view.state
    colour = COLOURS.get(state.run.status, "cyan")
    header = Text.assemble(
        (view.name, "bold"),
        f"  {view.run_id}  ",
        (view.status, f"bold {colour}"),
        f"  attempt {state.current_attempt}",
    )
    parts: list[RenderableType] = [header, _bars(view, width)]
    if view.metrics:
        parts += [Text(""), _metrics_table(view)]
    if state.attempts:
        parts += [Text(""), Text("attempts", style="bold")]
        for attempt in state.attempts[-ATTEMPTS_SHOWN:]:
            resumed = (
                f", resumed from step {attempt.resumed_from_step:,}" if attempt.resumed_from_step is not None else ""
            )
            label = f" {printable(attempt.label)}" if attempt.label else ""
            ended = ", ended" if attempt.ended else ""
            parts.append(Text(f"  #{attempt.number}{label} started {when(attempt.started_at)}{resumed}{ended}"))
    if view.checkpoints:
        parts += [Text(""), Text("checkpoints", style="bold")]
        for checkpoint in view.checkpoints:
            saved = f" at {when(checkpoint.saved_at)}" if checkpoint.saved_at else ""
            style = "dim" if checkpoint.superseded else ""
            parts.append(Text(f"  {checkpoint_text(checkpoint)}{saved}", style=style))
    if state.run.error:
        parts += [Text(""), Text(f"error: {printable(state.run.error)}", style="red")]
    if view.notice:
        parts += [Text(""), Text(view.notice, style="yellow")]
    return Group(*parts)


def _bars(view: Follow, width: int) -> Any:
    """The steps against the plan and the spend against the cap, each a bar and its words. The
    bars give way to the words on a narrow terminal (`width` columns), down to MIN_BAR_WIDTH;
    narrower still, the words go on a line of their own under each bar, never split mid-phrase."""
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    words = [view.steps_text(), view.spend_line()]
    room = width - len("steps") - 2 - max(len(w) for w in words)
    stacked = room < MIN_BAR_WIDTH
    bar_width = max(MIN_BAR_WIDTH, min(BAR_WIDTH, width - len("steps") - 1 if stacked else room))
    bars = Table.grid(padding=(0, 1))
    bars.add_column(style="bold")
    bars.add_column(width=bar_width)
    if not stacked:
        bars.add_column()
    completed = float(view.last_step or 0)
    steps_bar = ProgressBar(total=float(view.total) if view.total else None, completed=completed, width=bar_width)
    spend = view.state.spend
    cap = spend.cap_usd_micro
    spend_bar: RenderableType = (
        ProgressBar(
            total=float(max(cap, 1)),
            completed=float(min(spend.committed_usd_micro + spend.pending_usd_micro, max(cap, 1))),
            width=bar_width,
            complete_style="red" if spend.overrun_usd_micro else "magenta",
        )
        if cap is not None
        else Text("(no cap)", style="dim")
    )
    for label, bar, said in (("steps", steps_bar, words[0]), ("spend", spend_bar, words[1])):
        if stacked:
            bars.add_row(Text(label), bar)
            bars.add_row(Text(""), Text(said))
        else:
            bars.add_row(Text(label), bar, Text(said))
    return bars


def _metrics_table(view: Follow) -> Any:
    """Every metric's last value, least and greatest so far (the first METRICS_SHOWN by name)."""
    from rich.table import Table
    from rich.text import Text

    metrics = Table(box=None, padding=(0, 2), pad_edge=False, show_edge=False)
    metrics.add_column("metric", header_style="bold")
    for column in ("last", "min", "max", "at step"):
        metrics.add_column(column, justify="right", header_style="bold")
    shown = sorted(view.metrics)
    for name in shown[:METRICS_SHOWN]:
        m = view.metrics[name]
        metrics.add_row(
            Text(printable(name)),
            Text(figure(m.last)),
            Text(figure(m.least)),
            Text(figure(m.greatest)),
            Text(f"{m.step:,}"),
        )
    if len(shown) > METRICS_SHOWN:
        metrics.add_row(Text(f"and {len(shown) - METRICS_SHOWN} more", style="dim"))
    return metrics


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

        self.console = Console()
        self.live: Live = Live(
            drawing(view, self.console.width),
            console=self.console,
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
        self.live.update(drawing(view, self.console.width), refresh=True)
