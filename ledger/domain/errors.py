"""The ledger's error kinds: one small hierarchy named for what went wrong, each error carrying a
Reason from the one catalogue (ledger.domain.reasons).

A kind says what happened (the input was invalid, a thing was not found, a rule of the current
state refused the request ...); the reason says precisely which refusal it was. The edge
(services/grpc/errors.py) maps each kind to one gRPC status code and sends the reason as
google.rpc.ErrorInfo; clients branch on the reason, never on the message text.
"""

from __future__ import annotations

from typing import Any

from ledger.domain.reasons import Reason

__all__ = [
    "LedgerError",
    "Invalid",
    "NotFound",
    "Conflict",
    "Refused",
    "Contended",
    "Exhausted",
    "CapExceeded",
    "Unavailable",
    "Unauthenticated",
    "PermissionDenied",
    "Reason",
]


class LedgerError(Exception):
    """A refusal by the ledger: `message` for people, `reason` (a Reason) for programs, and
    `metadata`, string values that say what was refused (a field, a limit, what remains). Nothing
    was recorded when one is raised, except where a refusal is itself recorded for audit, which
    its docstring says."""

    def __init__(self, message: str, *, reason: Reason, **metadata: Any) -> None:
        super().__init__(message)
        self.message = message
        # A member's name is its value: the lookup also checks a plain string against the catalogue
        # (an unknown one raises KeyError, a bug).
        self.reason = Reason[reason]
        # Metadata values are strings on the wire (ErrorInfo.metadata is map<string, string>).
        self.metadata: dict[str, str] = {key: str(value) for key, value in metadata.items()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.reason}: {self.message})"


class Invalid(LedgerError):
    """The input is malformed or crosses a limit (BATCH_TOO_LARGE, NON_FINITE_METRIC ...):
    resending the same request cannot help."""


class NotFound(LedgerError):
    """An unknown run, attempt, checkpoint, account, reservation, family or version."""


class Conflict(LedgerError):
    """An id was used before with a different payload (EXISTS_WITH_DIFFERENT_PAYLOAD, the
    default, or STEP_ALREADY_RECORDED). The same id with the same payload is no conflict: it
    answers with the first result."""

    def __init__(self, message: str, *, reason: Reason = Reason.EXISTS_WITH_DIFFERENT_PAYLOAD, **metadata: Any) -> None:
        super().__init__(message, reason=reason, **metadata)


class Refused(LedgerError):
    """A rule of the current state forbids the request (ATTEMPT_SUPERSEDED, RUN_FINISHED,
    GATE_NOT_PASSED ...): it may succeed once the state is different, never by resending."""


class Contended(LedgerError):
    """A race was lost: a compare-and-set found another value (CURRENT_VERSION_MOVED), or a write
    kept conflicting with concurrent writers past its retries (WRITE_CONFLICT)."""


class Exhausted(LedgerError):
    """A quota would be crossed (TOO_MANY_WATCHERS, WATCHER_TOO_SLOW; spend caps: CapExceeded)."""


class CapExceeded(Exhausted):
    """A reservation would cross the cap of its account or of a parent (SPEND_CAP_EXCEEDED). The
    refusal is recorded on the account (SpendRefused) for audit; `account` names the account that
    refused and `remaining_usd_micro` says what is left on it."""

    def __init__(
        self,
        message: str,
        *,
        account: str,
        remaining_usd_micro: int,
        reason: Reason = Reason.SPEND_CAP_EXCEEDED,
        **metadata: Any,
    ) -> None:
        super().__init__(message, reason=reason, account=account, remaining_usd_micro=remaining_usd_micro, **metadata)
        self.account = account
        self.remaining_usd_micro = remaining_usd_micro


class Unavailable(LedgerError):
    """Storage could not be reached or failed (UNAVAILABLE, the default; STORAGE_FULL), a view did
    not catch up within the deadline (VIEW_NOT_CAUGHT_UP) or the server is too busy
    (SERVER_BUSY): the same request may succeed after a backoff."""

    def __init__(self, message: str, *, reason: Reason = Reason.UNAVAILABLE, **metadata: Any) -> None:
        super().__init__(message, reason=reason, **metadata)


class Unauthenticated(LedgerError):
    """The caller could not be identified: no bearer token while authentication is on
    (TOKEN_MISSING), or one that is malformed or unknown (TOKEN_INVALID), past its expiry
    (TOKEN_EXPIRED) or revoked (TOKEN_REVOKED)."""


class PermissionDenied(LedgerError):
    """The caller is identified but may not do this: its role does not allow the method
    (ROLE_NOT_ALLOWED), the run or account is outside its token's scope (OUTSIDE_SCOPE), or it
    would raise or lift the cap of its own scope's account (CAP_RAISE_OUTSIDE_SCOPE). Never
    used for a business refusal (those are Refused)."""
