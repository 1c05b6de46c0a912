"""The ledger's errors: one small hierarchy, each with a stable reason code.

The edge (services/) maps each class to one gRPC status code and sends the reason as
google.rpc.ErrorInfo; clients branch on the reason, never on the message text.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "LedgerError",
    "InvalidArgumentError",
    "NotFoundError",
    "AlreadyExistsError",
    "FailedPreconditionError",
    "AbortedError",
    "ResourceExhaustedError",
    "UnavailableError",
    "SpendCapExceededError",
]


class LedgerError(Exception):
    """A refusal by the ledger. Nothing was recorded when one is raised (except where a
    refusal is itself recorded for audit, which its docstring says)."""

    #: The default reason of the class; instances may carry a more precise one.
    reason = "LEDGER_ERROR"

    def __init__(self, message: str, *, reason: str | None = None, **metadata: Any) -> None:
        super().__init__(message)
        self.message = message
        if reason is not None:
            self.reason = reason
        # Metadata values are strings on the wire (ErrorInfo.metadata is map<string, string>).
        self.metadata: dict[str, str] = {key: str(value) for key, value in metadata.items()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.reason}: {self.message})"


class InvalidArgumentError(LedgerError):
    """A field is malformed or a limit is exceeded (BATCH_TOO_LARGE, NON_FINITE_METRIC ...)."""

    reason = "INVALID_ARGUMENT"


class NotFoundError(LedgerError):
    """An unknown run, attempt, account, reservation, family or version."""

    reason = "NOT_FOUND"


class AlreadyExistsError(LedgerError):
    """The same id was used before with a different payload."""

    reason = "EXISTS_WITH_DIFFERENT_PAYLOAD"


class FailedPreconditionError(LedgerError):
    """A rule is broken by the current state (ATTEMPT_SUPERSEDED, RUN_FINISHED ...)."""

    reason = "FAILED_PRECONDITION"


class AbortedError(LedgerError):
    """A compare-and-set lost (CURRENT_VERSION_MOVED) or a write conflict outlived its retries."""

    reason = "ABORTED"


class ResourceExhaustedError(LedgerError):
    """A quota would be crossed."""

    reason = "RESOURCE_EXHAUSTED"


class SpendCapExceededError(ResourceExhaustedError):
    """A reservation would cross the cap of its account or of a parent. The refusal is
    recorded on the account (SpendRefused) for audit; `remaining_usd_micro` says what is left
    on the account that refused."""

    reason = "SPEND_CAP_EXCEEDED"

    def __init__(self, message: str, *, account: str, remaining_usd_micro: int, **metadata: Any):
        super().__init__(
            message, account=account, remaining_usd_micro=remaining_usd_micro, **metadata
        )
        self.account = account
        self.remaining_usd_micro = remaining_usd_micro


class UnavailableError(LedgerError):
    """Storage is unavailable, or a view did not catch up within the deadline."""

    reason = "UNAVAILABLE"
