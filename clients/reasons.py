"""Every reason the server can send in google.rpc.ErrorInfo, as the client knows them: its own
list, since the client cannot import the server's catalogue (ledger.domain.reasons);
tests/contract/test_reasons.py holds the two equal."""

from __future__ import annotations

__all__ = ["REASONS"]

# Every reason the server can send in ErrorInfo, by area. A reason is stable: it is part of the
# wire protocol. A reason missing here, or one the server no longer sends, fails the contract test.
REASONS: frozenset[str] = frozenset(
    {
        # Identity (Unauthenticated, PermissionDenied; TOKEN_NOT_FOUND: NotFound).
        "TOKEN_MISSING",
        "TOKEN_INVALID",
        "TOKEN_EXPIRED",
        "TOKEN_REVOKED",
        "ROLE_NOT_ALLOWED",
        "OUTSIDE_SCOPE",
        "CAP_RAISE_OUTSIDE_SCOPE",
        "TOKEN_NOT_FOUND",
        # A field is malformed or crosses a limit (InvalidArgument).
        "INVALID_FIELD",
        "MISSING_FIELD",
        "STRING_TOO_LONG",
        "NOT_NORMALIZED",
        "CONFUSABLE_IDENTIFIER",
        "INVALID_TEXT",
        "OUT_OF_RANGE",
        "INVALID_STATUS",
        "INVALID_DIGEST",
        "INVALID_TIMESTAMP",
        "INVALID_DURATION",
        # Documents (InvalidArgument).
        "DOCUMENT_TOO_DEEP",
        "DOCUMENT_TOO_LARGE",
        "MAP_TOO_LARGE",
        "NON_FINITE_VALUE",
        "SUMMARY_TOO_LARGE",
        # Step batches (InvalidArgument).
        "EMPTY_BATCH",
        "BATCH_TOO_LARGE",
        "STEPS_NOT_INCREASING",
        "STEP_BEFORE_RESUME",
        "COLUMN_LENGTH_MISMATCH",
        "TOO_MANY_METRICS",
        "INVALID_INDEX",
        "NON_FINITE_METRIC",
        "DUPLICATE_METRIC",
        # Requests on the wire (InvalidArgument).
        "REQUEST_TOO_LARGE",
        "MALFORMED_REQUEST",
        "PAGE_SIZE_TOO_LARGE",
        "INVALID_PAGE_TOKEN",
        "UNKNOWN_EVENT_TYPE",
        # Spend input (InvalidArgument).
        "INVALID_AMOUNT",
        "NEGATIVE_AMOUNT",
        "AMOUNT_TOO_LARGE",
        "INVALID_BASIS",
        "BASIS_AMOUNT_MISMATCH",
        "INVALID_TTL",
        "INVALID_LEASE",
        "CURRENCY_NOT_SUPPORTED",
        "AMOUNT_TEXT_MISMATCH",
        "INVALID_INTERVAL",
        "DUPLICATE_LINE",
        "PARENT_TOO_DEEP",
        "ACCOUNT_NAME_RESERVED",
        "CHECKPOINT_ALREADY_EXPIRED",
        "MAX_STEPS_BELOW_LAST_STEP",
        # Unknown things (NotFound).
        "RUN_NOT_FOUND",
        "ATTEMPT_NOT_FOUND",
        "CHECKPOINT_NOT_FOUND",
        "ACCOUNT_NOT_FOUND",
        "RESERVATION_NOT_FOUND",
        "FAMILY_NOT_FOUND",
        "VERSION_NOT_FOUND",
        "NO_SCORED_CHECKPOINT",
        # The same id with a different payload (AlreadyExists).
        "EXISTS_WITH_DIFFERENT_PAYLOAD",
        "STEP_ALREADY_RECORDED",
        # Rules of the current state (FailedPrecondition): runs and attempts, accounts, the registry.
        "RUN_FINISHED",
        "ATTEMPT_SUPERSEDED",
        "CHECKPOINT_EXPIRED",
        "CHECKPOINT_DELETED",
        "CHECKPOINT_PROTECTED",
        "CHECKPOINT_DIGEST_MISMATCH",
        "RUN_RETRACTED",
        "LOG_SEALED_ALREADY",
        "LOG_UNSEALED",
        "OBJECTIVE_DIFFERS",
        "RUN_ACCOUNT_TAKEN",
        "PARENT_ACCOUNT_DIFFERS",
        "CAP_BELOW_SPEND",
        "RESERVATION_RELEASED",
        "RESERVATION_REFUSED",
        "RESERVATION_CHARGED",
        "RESERVATION_COMMITTED",
        "PLAN_ALREADY_HELD",
        "RESERVATION_IS_PLAN",
        "GATE_NOT_PASSED",
        "GATE_EVIDENCE_MISSING",
        "FAMILY_RETIRED",
        "TOO_MANY_ALIASES",
        "ALIAS_MOVED",
        "INVALID_GATE_RULE",
        "INVALID_QUERY",
        "QUERY_TOO_LARGE",
        "INVALID_ALIAS",
        "INVALID_TAG",
        "TOO_MANY_TAGS",
        "ALREADY_CURRENT",
        "ROLLBACK_NOT_EARLIER",
        "NEVER_PROMOTED",
        # Lost races (Aborted).
        "CURRENT_VERSION_MOVED",
        "WRITE_CONFLICT",
        # Quotas (ResourceExhausted).
        "SPEND_CAP_EXCEEDED",
        "TOO_MANY_WATCHERS",
        "WATCHER_TOO_SLOW",
        "VERIFY_BUSY",
        # The server and its storage (Unavailable): try again after a backoff.
        "UNAVAILABLE",
        "STORAGE_FULL",
        "VIEW_NOT_CAUGHT_UP",
        "PROJECTION_FAILED",
        "SERVER_BUSY",
        "TOO_MANY_STREAMS",
        # A server bug (Internal).
        "INTERNAL",
    }
)
