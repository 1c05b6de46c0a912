"""The recorder's background sender: rows in, column-wise batches out over one RecordSteps stream.

One thread owns the batcher, the outbox and the link (clients.link); `put`, the training loop's
side, only appends to a bounded deque under a lock, so it never blocks on the network. `put_many`
takes several steps' raw rows at once (RunRecorder.log_steps), which this thread checks (make_row)
when it takes them, so the training loop does not. Each batch
goes into the outbox before it is sent and leaves it on its ack. While `held_steps_max` steps wait
in the outbox the deque is not drained, so memory stays bounded and log() drops (and counts).

A sender of a deferred open starts not ready: it builds batches under the pending attempt into the
outbox but sends nothing until `adopt` gives it the real run id and attempt (or `abandon` tells it
the attempt was refused for good: what it holds is counted failed).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from clients.batcher import Batcher, Row, make_row
from clients.errors import LedgerClientError
from clients.link import Link
from clients.stream import DRAIN_S

__all__ = ["Sender"]

log = logging.getLogger("trainledger.clients")

# (step, tokens, usd_micro, metrics), checked when built, and with a system metrics sample due
# (clients.system), the function that reads it.
RawRow = tuple[Any, Any, Any, dict[str, Any]] | tuple[Any, Any, Any, dict[str, Any], Callable[[], dict[str, float]]]


class Sender:
    def __init__(
        self,
        client: Any,
        outbox: Any,
        batcher: Batcher,
        *,
        queue_steps_max: int,
        held_steps_max: int,
        window: int,
        ack_timeout_s: float,
        counters: dict[str, int],
        lock: threading.Lock,
        on_ack: Any = None,
        ready: bool = True,
    ) -> None:
        self.outbox, self.batcher, self.counters, self.lock = outbox, batcher, counters, lock
        self.ready = threading.Event()
        if ready:
            self.ready.set()
        self._adoption: tuple[str, int] | None = None
        self._parked = False  # Waiting with no batch under way: a new row must wake it.
        self._abandoned: str | None = None
        self.queue_steps_max, self.held_steps_max, self.on_ack = queue_steps_max, held_steps_max, on_ack
        self._rows: deque[Row | RawRow] = deque()
        self._held, self._held_steps = outbox.totals()
        self._flushing, self._stopping = 0, False
        self._building = False  # Rows taken off the queue are on their way into the outbox.
        self.wake, self.idle = threading.Event(), threading.Condition(threading.Lock())
        self.link = Link(client, outbox, self.wake, window=window, ack_timeout_s=ack_timeout_s)
        self.thread = threading.Thread(target=self._run, name="trainledger-recorder", daemon=True)
        self.thread.start()

    @property
    def last_error(self) -> LedgerClientError | None:
        return self.link.last_error

    def put(self, row: Row) -> bool:
        """Queue one step row; False (and nothing queued) when the queue is full. The sender is
        woken only when it is parked with no batch under way (or a full batch waits): otherwise it
        takes the row when that batch is due, so a fast loop does not wake a thread every step."""
        with self.lock:
            if len(self._rows) >= self.queue_steps_max:
                return False
            self._rows.append(row)
            wake = self._parked or len(self._rows) >= self.batcher.batch_steps_max
            self._parked = False
        if wake:
            self.wake.set()
        return True

    def put_many(self, rows: list[RawRow]) -> int:
        """Queue raw step rows in order, checked by the sender thread when it takes them; how many
        were queued (those that found the queue full were not). Woken as by `put`."""
        with self.lock:
            room = max(0, self.queue_steps_max - len(self._rows))
            taken = rows if len(rows) <= room else rows[:room]
            if not taken:
                return 0
            self._rows.extend(taken)
            wake = self._parked or len(self._rows) >= self.batcher.batch_steps_max
            self._parked = False
        if wake:
            self.wake.set()
        return len(taken)

    def adopt(self, run_id: str, attempt: int) -> threading.Event:
        """Hand over the started attempt; the returned event is set once the sender thread has
        rewritten what it holds and may send."""
        with self.lock:
            self._adoption = (run_id, attempt)
        self.wake.set()
        return self.ready

    def abandon(self, reason: str) -> None:
        """The pending attempt will never start: fail what is held and whatever comes later."""
        with self.lock:
            self._abandoned = reason
        self.wake.set()

    def is_idle(self) -> bool:
        return not self._rows and not self._building and not len(self.batcher) and self._held == 0

    def flush(self, timeout_s: float) -> bool:
        """Send everything queued now; True once all of it is acked (or failed for good)."""
        deadline = time.monotonic() + timeout_s
        with self.lock:
            self._flushing += 1
        self.wake.set()
        try:
            with self.idle:
                done = lambda: self.is_idle() or not self.thread.is_alive()  # noqa: E731
                return self.idle.wait_for(done, max(0.0, deadline - time.monotonic())) and self.is_idle()
        finally:
            with self.lock:
                self._flushing -= 1

    def stop(self, timeout_s: float) -> None:
        """Flush for up to `timeout_s`, put what is left into the outbox, end the stream, join."""
        self.flush(timeout_s)
        self._stopping = True
        self.wake.set()
        self.thread.join(timeout=max(5.0, timeout_s))

    def _run(self) -> None:
        while True:
            timeout = self._tick()
            with self.lock:
                self._parked = not len(self.batcher)
                if self._parked and self._rows and self._held_steps < self.held_steps_max:
                    timeout = 0.0  # Rows came in after the last build (and there is room): take them now.
            self.wake.wait(timeout)
            self.wake.clear()
            try:
                self._adopt()
                self._build()
                self._settle()
                if self._abandoned is not None:
                    self._abandon()
                if self._stopping:
                    self._build()  # Rows logged while this pass ran go to the outbox too.
                    break
                if self._held and self.ready.is_set():
                    self._count("sent", self.link.send(time.monotonic()))
            except Exception:  # The sender must outlive its own bugs and a full disk: log, go on.
                log.exception("the trainledger recorder's sender failed; retrying")
                time.sleep(0.5)
            with self.idle:
                self.idle.notify_all()
        self.link.close(drain_s=DRAIN_S)
        with self.idle:
            self.idle.notify_all()

    def _adopt(self) -> None:
        with self.lock:
            adoption, self._adoption = self._adoption, None
        if adoption is not None and not self.ready.is_set():
            self.outbox.adopt(*adoption)
            self.batcher.run_id, self.batcher.attempt = adoption
            self.ready.set()

    def _abandon(self) -> None:
        if self._held:
            self.outbox.abandon(self._abandoned or "")
            held_steps = self._held_steps
            self._held, self._held_steps = self.outbox.totals()
            self._count("failed", held_steps - self._held_steps)

    def _tick(self) -> float:
        now, waits = time.monotonic(), [0.5]
        if (due := self.batcher.due_at()) is not None:
            waits.append(due - now)
        if self._held and self.ready.is_set() and (retry_in := self.link.retry_in(now)) is not None:
            waits.append(retry_in)
        return max(0.001, min(waits))

    def _build(self) -> None:
        with self.lock:
            room = self.held_steps_max - self._held_steps - len(self.batcher)
            rows = [self._rows.popleft() for _ in range(max(0, min(room, len(self._rows))))]
            flushing = self._flushing > 0 or self._stopping
            self._building = True  # Not idle until what it takes or emits is in the outbox (flush).
        try:
            self._batch(rows, flushing)
        finally:
            self._building = False

    def _batch(self, rows: list[Row | RawRow], flushing: bool) -> None:
        for taken in rows:
            if isinstance(taken, tuple):  # From put_many: checked here, off the training loop.
                if len(taken) == 5:  # A system metrics sample is due: read it now, onto this row.
                    taken = (*taken[:3], {**taken[3], **taken[4]()})
                try:
                    row, non_finite = make_row(*taken[:4])
                except Exception:  # A bad step or amount drops its row, as log() drops it.
                    self._count("dropped", 1)
                    continue
                self._count("non_finite", non_finite)
            else:
                row = taken
            if not self.batcher.add(row):
                self._count("dropped", 1)  # Steps must increase; an old step cannot be sent any more.
            if self.batcher.full:
                self._emit()
        due = self.batcher.due_at()
        if due is not None and (flushing or time.monotonic() >= due):
            self._emit()

    def _emit(self) -> None:
        batch = self.batcher.take()
        self.outbox.add(batch)
        self._held, self._held_steps = self._held + 1, self._held_steps + len(batch.steps)

    def _settle(self) -> None:
        for counter, steps, ack in self.link.collect():
            self._held, self._held_steps = self._held - 1, self._held_steps - steps
            self._count(counter, steps)
            if ack is not None and self.on_ack is not None:
                self.on_ack(ack)

    def _count(self, counter: str, steps: int) -> None:
        if steps:
            with self.lock:
                self.counters[counter] += steps
