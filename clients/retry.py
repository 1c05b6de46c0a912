"""When a failed call is sent again, and how long to wait first.

A retry always resends the very same request with the same x-request-id and the same client-made
ids, so a retry of a write that did land is answered as a duplicate: the server does nothing twice.

UNAVAILABLE (the ledger restarting, a replica going away, the network) is retried for as long as
the outage budget lasts (`total_s`, 30 s by default, counted from the call's first try): a ledger
restart of a few seconds is ridden out, a longer outage raises Unavailable. The budget applies once a
ledger has answered the client: before that, a call gives up after the first-contact bound
(`FIRST_CONTACT_S`, 5 s by default), so a wrong address fails soon instead of in silence. Each try keeps its own
deadline (the client's `timeout_s`). `Tries` applies a policy to one logical call; the sync and
asyncio clients both loop on it, each waiting in its own way.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace

import grpc

from clients.errors import Aborted, DeadlineExceeded, LedgerClientError, Unavailable, error_from_rpc

__all__ = [
    "RetryPolicy",
    "Tries",
    "NO_RETRY",
    "REFUSAL_CODES",
    "CREDENTIAL_CODES",
    "OUTAGE_BUDGET_S",
    "FIRST_CONTACT_S",
    "FirstContact",
]

OUTAGE_BUDGET_S = 30.0
FIRST_CONTACT_S = 5.0

# The codes of refusals that no resend can change: a batch refused so is dropped, never resent.
REFUSAL_CODES = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
    }
)


# The codes of refusals of the caller's credentials (a token missing, expired, revoked, or without
# the role or scope), not of what it sent: a batch refused so is kept and sent again later.
CREDENTIAL_CODES = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter, for one logical call.

    `total_s` is the outage budget: UNAVAILABLE is retried until `total_s` seconds have passed
    since the call's first try, however many tries that takes (0 = never). `attempts` (counting
    the first try) bounds the retries of the errors that are retried only where repeating the
    call cannot change its effect: DEADLINE_EXCEEDED and a storage write conflict; they stop at
    the budget too."""

    attempts: int = 5
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 1.0
    multiplier: float = 2.0
    total_s: float = OUTAGE_BUDGET_S

    @classmethod
    def of(cls, retries: RetryPolicy | int | None, *, outage_budget_s: float | None = None) -> RetryPolicy:
        """A policy from a policy, a number of retries (0 = try once, no retry at all; n > 0 = n
        retries of DEADLINE_EXCEEDED and write conflicts) or None (the default); `outage_budget_s`,
        when given, replaces its total_s."""
        if retries is None:
            policy = cls()
        elif isinstance(retries, RetryPolicy):
            policy = retries
        elif int(retries) <= 0:
            policy = NO_RETRY
        else:
            policy = cls(attempts=int(retries) + 1)
        if outage_budget_s is not None:
            policy = replace(policy, total_s=max(0.0, float(outage_budget_s)))
        return policy

    def backoff_s(self, retry: int) -> float:
        """How long to wait before retry number `retry` (0-based)."""
        ceiling = min(self.max_backoff_s, self.initial_backoff_s * self.multiplier**retry)
        return random.uniform(ceiling / 2, ceiling)

    def should_retry(self, error: LedgerClientError, *, idempotent: bool, tried: int, elapsed_s: float) -> bool:
        """Whether to send the same request again after `tried` tries, `elapsed_s` seconds after
        the first began: UNAVAILABLE while the budget lasts (the request either never arrived or
        is answered as a duplicate), DEADLINE_EXCEEDED and a storage write conflict only where
        repeating the call cannot change its effect, and only `attempts` times in all."""
        if elapsed_s >= self.total_s:
            return False
        if isinstance(error, Unavailable):
            return True
        if not idempotent or tried >= self.attempts:
            return False
        return isinstance(error, DeadlineExceeded) or (isinstance(error, Aborted) and error.reason == "WRITE_CONFLICT")

    def delay_s(self, tried: int, elapsed_s: float) -> float:
        """The wait before the next try: the backoff, cut to what is left of the budget."""
        return max(0.0, min(self.backoff_s(tried - 1), self.total_s - elapsed_s))


NO_RETRY = RetryPolicy(attempts=1, total_s=0.0)


class Tries:
    """The tries of one logical unary call under a RetryPolicy: after each failed try, the error
    to raise and whether (and after how long) to send the same request again."""

    def __init__(self, policy: RetryPolicy, *, idempotent: bool) -> None:
        self.policy, self.idempotent = policy, idempotent
        self.tried, self.began = 0, time.monotonic()

    def failed(self, rpc_error: grpc.RpcError) -> tuple[LedgerClientError, float | None]:
        """The error of the try that just failed, and the wait before the next try, or None when
        there is none (the error is final)."""
        self.tried += 1
        error = error_from_rpc(rpc_error)
        elapsed_s = time.monotonic() - self.began
        if not self.policy.should_retry(error, idempotent=self.idempotent, tried=self.tried, elapsed_s=elapsed_s):
            return error, None
        return error, self.policy.delay_s(self.tried, elapsed_s)


class FirstContact:
    """Whether a client has been answered by a ledger yet. Until one answers (a reply, or any
    error but UNAVAILABLE), a call retries for at most `bound_s` instead of the outage budget."""

    def __init__(self, bound_s: float | None) -> None:
        bound_s = FIRST_CONTACT_S if bound_s is None else float(bound_s)
        if not 0.0 <= bound_s <= 3_600.0:
            raise ValueError(f"first_contact_s must be between 0 and 3600 seconds, not {bound_s}")
        self.bound_s = bound_s
        self.answered = False

    def policy(self, policy: RetryPolicy) -> RetryPolicy:
        """`policy`, its budget cut to the bound while no ledger has answered."""
        return policy if self.answered else replace(policy, total_s=min(policy.total_s, self.bound_s))

    def saw(self, error: LedgerClientError | None) -> None:
        """A call came back: with a reply (None) or `error`."""
        if error is None or not isinstance(error, Unavailable):
            self.answered = True
