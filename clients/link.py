"""The sender's wire side: one RecordSteps stream at a time, the batches in flight on it, and what
to do when it fails.

Batches are read from the outbox in sequence order and at most `window` are in flight. On
UNAVAILABLE (or a silent stream) the stream is dropped and reopened after a backoff, and every
unacked batch is resent unchanged. A refusal of the ledger's own drops the batch it names (or the
oldest in flight); so does a server error that repeats three times on the same batch. A stream
refused for its credentials (UNAUTHENTICATED, PERMISSION_DENIED: a token missing, expired, revoked
or without the role or scope) refuses no batch: every batch is kept and resent after a backoff,
so a corrected token or a grant loses nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import grpc

from clients.errors import LedgerClientError
from clients.models import StepAck
from clients.retry import CREDENTIAL_CODES, REFUSAL_CODES, RetryPolicy
from clients.stream import Stream

__all__ = ["Link"]

log = logging.getLogger("trainledger.clients")
_SERVER_ERRORS = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
_STRIKES_MAX = 3
_BACKOFF = RetryPolicy(max_backoff_s=5.0)


class Link:
    def __init__(self, client: Any, outbox: Any, wake: threading.Event, *, window: int, ack_timeout_s: float) -> None:
        self.client, self.outbox, self.wake = client, outbox, wake
        self.window, self.ack_timeout_s = window, ack_timeout_s
        self.last_error: LedgerClientError | None = None
        # The ledger's refusal of this client's credentials, until a batch is acked again: no
        # outage to wait out, nothing goes until the token is replaced.
        self.refused: LedgerClientError | None = None
        self._stream: Stream | None = None
        self._inflight: dict[int, tuple[float, int]] = {}  # sequence -> (sent at, steps)
        self._sent_max = 0  # Batches an earlier recorder left in the outbox count as sent here.
        self._failures, self._retry_at = 0, 0.0
        self._strikes: dict[int, int] = {}

    def retry_in(self, now: float) -> float | None:
        """Seconds until a dropped stream may be reopened; None while one is open."""
        return None if self._stream is not None else self._retry_at - now

    def send(self, now: float) -> int:
        """Open the stream if it is time, fill the window; returns the steps sent for the first time."""
        if self._stream is None:
            if now < self._retry_at:
                return 0
            self._stream = Stream(self.client, self.wake)
        if self._inflight and now - min(sent for sent, _ in self._inflight.values()) > self.ack_timeout_s:
            self._retry_later()  # A silent server: reopen and resend.
            return 0
        first_sent = 0
        for sequence, batch, steps in self.outbox.pending(
            max(self._inflight, default=0), self.window - len(self._inflight)
        ):
            self._stream.send(sequence, batch)
            self._inflight[sequence] = (now, steps)
            if sequence > self._sent_max:
                self._sent_max, first_sent = sequence, first_sent + steps
        return first_sent

    def collect(self) -> list[tuple[str, int, StepAck | None]]:
        """Settle what came back: ("acked", steps, ack) or ("failed", steps, None) per batch."""
        settled: list[tuple[str, int, StepAck | None]] = []
        for kind, value in self._stream.events() if self._stream is not None else ():
            if kind == "error":
                settled += self._failed(value)
                break
            sent = self._inflight.pop(value.sequence, None)
            if sent is not None:
                self.outbox.done(value.sequence)
                self._failures, self.refused = 0, None
                settled.append(("acked", sent[1], value))
        return settled

    def _failed(self, error: LedgerClientError) -> list[tuple[str, int, StepAck | None]]:
        self.last_error = error
        if error.code in CREDENTIAL_CODES:
            if self.refused is None or self.refused.reason != error.reason:  # Once, not every retry.
                log.warning(
                    "the ledger refused this client's credentials (%s): a new token is needed (TRAINLEDGER_TOKEN);"
                    " the outbox keeps the steps until then",
                    error.reason,
                )
            self.refused = error
            self._retry_later()
            return []
        sequence = int(error.metadata.get("sequence") or 0) or min(self._inflight, default=0)
        if sequence in self._inflight and error.code in _SERVER_ERRORS:
            self._strikes[sequence] = self._strikes.get(sequence, 0) + 1
        if sequence not in self._inflight or (
            error.code not in REFUSAL_CODES and self._strikes.get(sequence, 0) < _STRIKES_MAX
        ):
            self._retry_later()
            return []
        log.warning("the ledger refused a batch of steps for good (%s); dropping it", error.reason)
        self.outbox.failed(sequence, error.reason)
        self._strikes.pop(sequence, None)
        steps = self._inflight[sequence][1]
        self.close()  # Reopened at once: the batches after the refused one were never processed.
        return [("failed", steps, None)]

    def _retry_later(self) -> None:
        self.close()
        self._retry_at = time.monotonic() + _BACKOFF.backoff_s(min(self._failures, 10))
        self._failures += 1

    def close(self, drain_s: float = 0.0) -> None:
        """Close the stream: cancelled at once, or with `drain_s` half-closed and its end awaited
        that long (the recorder's end: the server counts the call OK, not CANCELLED)."""
        if self._stream is not None:
            self._stream.close(drain_s)
        self._stream, self._inflight = None, {}
