"""The recorder's background sender: rows in, column-wise batches out over one RecordSteps stream.

One thread owns the batcher, the outbox and the link (clients.link); `put`, the training loop's
side, only appends to a bounded deque under a lock, so it never blocks on the network. Each batch
goes into the outbox before it is sent and leaves it on its ack. While `held_steps_max` steps wait
in the outbox the deque is not drained, so memory stays bounded and log() drops (and counts).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any

from clients.batcher import Batcher, Row
from clients.errors import LedgerClientError
from clients.link import Link

__all__ = ["Sender"]

log = logging.getLogger("trainledger.clients")


class Sender:
    def __init__(self, client: Any, outbox: Any, batcher: Batcher, *, queue_steps_max: int, held_steps_max: int,
                 window: int, ack_timeout_s: float, counters: dict[str, int], lock: threading.Lock,
                 on_ack: Any = None) -> None:
        self.outbox, self.batcher, self.counters, self.lock = outbox, batcher, counters, lock
        self.queue_steps_max, self.held_steps_max, self.on_ack = queue_steps_max, held_steps_max, on_ack
        self._rows: deque[Row] = deque()
        self._held, self._held_steps = outbox.totals()
        self._flushing, self._stopping = 0, False
        self.wake, self.idle = threading.Event(), threading.Condition(threading.Lock())
        self.link = Link(client, outbox, self.wake, window=window, ack_timeout_s=ack_timeout_s)
        self.thread = threading.Thread(target=self._run, name="trainledger-recorder", daemon=True)
        self.thread.start()

    @property
    def last_error(self) -> LedgerClientError | None:
        return self.link.last_error

    def put(self, row: Row) -> bool:
        """Queue one step row; False (and nothing queued) when the queue is full."""
        with self.lock:
            if len(self._rows) >= self.queue_steps_max:
                return False
            self._rows.append(row)
        self.wake.set()
        return True

    def is_idle(self) -> bool:
        return not self._rows and not len(self.batcher) and self._held == 0

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
            self.wake.wait(self._tick())
            self.wake.clear()
            try:
                self._build()
                self._settle()
                if self._stopping:
                    break
                if self._held:
                    self._count("sent", self.link.send(time.monotonic()))
            except Exception:  # The sender must outlive its own bugs and a full disk: log, go on.
                log.exception("the trainledger recorder's sender failed; retrying")
                time.sleep(0.5)
            with self.idle:
                self.idle.notify_all()
        self.link.close()
        with self.idle:
            self.idle.notify_all()

    def _tick(self) -> float:
        now, waits = time.monotonic(), [0.5]
        if (due := self.batcher.due_at()) is not None:
            waits.append(due - now)
        if self._held and (retry_in := self.link.retry_in(now)) is not None:
            waits.append(retry_in)
        return max(0.001, min(waits))

    def _build(self) -> None:
        with self.lock:
            room = self.held_steps_max - self._held_steps - len(self.batcher)
            rows = [self._rows.popleft() for _ in range(max(0, min(room, len(self._rows))))]
            flushing = self._flushing > 0 or self._stopping
        for row in rows:
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
