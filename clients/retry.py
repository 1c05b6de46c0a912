"""When a failed call is sent again, and how long to wait first.

A retry always resends the very same request with the same x-request-id and the same client-made
ids, so a retry of a write that did land is answered as a duplicate: the server does nothing twice.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import grpc

from clients.errors import Aborted, DeadlineExceeded, LedgerClientError, Unavailable

__all__ = ["RetryPolicy", "NO_RETRY", "REFUSAL_CODES"]

# The codes of refusals that no resend can change: a batch refused so is dropped, never resent.
REFUSAL_CODES = frozenset({
    grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter. `attempts` counts the first try; `total_s` bounds
    the time spent waiting between tries of one logical call."""

    attempts: int = 5
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 2.0
    multiplier: float = 2.0
    total_s: float = 30.0

    @classmethod
    def of(cls, retries: RetryPolicy | int | None) -> RetryPolicy:
        """A policy from a policy, a number of retries (0 = try once) or None (the default)."""
        if retries is None:
            return cls()
        if isinstance(retries, RetryPolicy):
            return retries
        return cls(attempts=max(1, int(retries) + 1))

    def backoff_s(self, retry: int) -> float:
        """How long to wait before retry number `retry` (0-based)."""
        ceiling = min(self.max_backoff_s, self.initial_backoff_s * self.multiplier**retry)
        return random.uniform(ceiling / 2, ceiling)

    def should_retry(self, error: LedgerClientError, *, idempotent: bool, tried: int,
                     waited_s: float) -> bool:
        """Whether to send the same request again after `tried` tries: UNAVAILABLE always (the
        request either never arrived or is answered as a duplicate), DEADLINE_EXCEEDED and a
        storage write conflict only where repeating the call cannot change its effect."""
        if tried >= self.attempts or waited_s >= self.total_s:
            return False
        if isinstance(error, Unavailable):
            return True
        if not idempotent:
            return False
        return isinstance(error, DeadlineExceeded) or (
            isinstance(error, Aborted) and error.reason == "WRITE_CONFLICT")


NO_RETRY = RetryPolicy(attempts=1)
