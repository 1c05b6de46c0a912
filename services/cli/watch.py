"""`trainledger watch RUN`: a live terminal view of a run, through the server, until it finishes.

    trainledger watch RUN [--wait-s SECONDS] [--exit-on-lost] [--address HOST:PORT] [--token-file FILE]
                          [--tls] [--ca-file FILE]

RUN is a run id, a unique id prefix, a name or a run key (services.cli.naming). The view
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
  waiting in the queue into one model (services.cli.watch_model.Follow) before it draws, and draws at most every
  REDRAW_S (and every TICK_S while nothing comes, so the rate and the time left stay current),
  so a run logging thousands of batches a second costs a few redraws a second, not one per batch.
- A step batch carries no state (the server sends the state's changes with the next event that is
  not a batch), so the last step is the batch's; other events carry the whole state as it stands.
- The stream is watched again from where it broke: at once after WATCHER_TOO_SLOW (from the
  position the server names), and every RECONNECT_PAUSE_S for RECONNECT_S when the server goes
  away (a restart); past that it is one line on stderr and exit status 2.
- When stdout is not a terminal (a log, a pipe) there is no live view: one plain line per event,
  each starting with its UTC time, and the final line.

Rich draws the view (services.cli.watch_screen); it is imported only when a terminal needs it.
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from services.cli.connection import address_of, failure_of, talking
from services.cli.naming import NoRun
from services.cli.options import add_server_options
from services.cli.output import Failure
from services.cli.remote import resolve_run
from services.cli.watch_model import CHECKPOINTS_SHOWN, Follow
from services.cli.watch_screen import Plain, Screen
from services.render.tables import printable

if TYPE_CHECKING:
    from clients import LedgerClient
    from clients.models import Checkpoint

__all__ = ["add_parser", "follow", "watch"]

REDRAW_S = 0.1  # At most ~10 redraws a second, however fast updates come.
TICK_S = 1.0  # A redraw this often while nothing comes (the rate and the time left move on).
RECONNECT_S = 30.0  # How long a server that went away is waited for before giving up.
RECONNECT_PAUSE_S = 0.5
WAIT_PAUSE_S = 0.5  # How often a run not there yet is looked for.
WAIT_MAX_S = 7 * 86_400.0
CHECKPOINT_PAGE = 500


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
    with talking(args) as client:
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
            raise failure_of(error, address_of(args)) from None
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
            return resolve_run(client, ref)
        except NoRun:
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
    add_server_options(sub, json=False)
    sub.set_defaults(handler=watch)
