"""One open RecordSteps stream, fed by the sender thread and read by a reader thread of its own.

The reader turns acks and the stream's end into events the sender collects with `events()`, and
sets the sender's wake event, so the sender never blocks on the network.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

from clients.errors import LedgerClientError, Unavailable
from trainledger.v1 import common_pb2, runs_pb2

__all__ = ["Stream", "RequestQueue", "DRAIN_S"]

DRAIN_S = 2.0  # How long a healthy close waits for the server to end the half-closed stream.


class RequestQueue:
    """The request side of a stream: an iterator that blocks until `put` or `end`."""

    _END = object()

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def put(self, request: runs_pb2.RecordStepsRequest) -> None:
        self._queue.put(request)

    def end(self) -> None:
        self._queue.put(self._END)

    def __iter__(self) -> Iterator[runs_pb2.RecordStepsRequest]:
        while (item := self._queue.get()) is not self._END:
            yield item


class Stream:
    """A RecordSteps call. Events: ("ack", StepAck) per batch, then ("error", LedgerClientError)
    if the call failed or the server ended it early (as Unavailable)."""

    def __init__(self, client: Any, wake: threading.Event) -> None:
        self._requests = RequestQueue()
        self._events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._wake = wake
        self._acks = client.record_steps(self._requests)
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="trainledger-acks", daemon=True)
        self._reader.start()

    def send(self, sequence: int, batch: common_pb2.StepBatch) -> None:
        self._requests.put(runs_pb2.RecordStepsRequest(sequence=sequence, batch=batch))

    def events(self) -> list[tuple[str, Any]]:
        events = []
        while True:
            try:
                events.append(self._events.get_nowait())
            except queue.Empty:
                return events

    def close(self, drain_s: float = 0.0) -> None:
        """End the request side and cancel the call; acks not yet read are dropped (their
        batches stay in the outbox and are resent as duplicates). With `drain_s` (a healthy end)
        the call is half-closed and its end awaited that long first, so the server ends it OK;
        it is cancelled only if it has not ended by then."""
        if not self._closed:
            self._closed = True
            self._requests.end()
            if drain_s > 0 and threading.current_thread() is not self._reader:
                self._reader.join(drain_s)
            if self._reader.is_alive():
                self._acks.cancel()

    def _read(self) -> None:
        try:
            for ack in self._acks:
                self._events.put(("ack", ack))
                self._wake.set()
            error: LedgerClientError = Unavailable("STREAM_ENDED", "the server ended the stream")
        except LedgerClientError as refused:
            error = refused
        except Exception as broken:  # noqa: BLE001 - e.g. the channel was closed under the stream.
            error = Unavailable("STREAM_BROKEN", f"{type(broken).__name__}: {broken}")
        if not self._closed:  # An end we did not ask for: the sender resends what is unacked.
            self._events.put(("error", error))
        self._wake.set()
