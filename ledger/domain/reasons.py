"""The one catalogue of refusal reasons: every reason the server can send, and what each means.

A refusal travels as google.rpc.ErrorInfo(reason, domain "trainledger", metadata); clients branch
on the reason, never on the message text, so a reason's string is part of the wire protocol and
never changes. Each member's value is its own name (`Reason.RUN_FINISHED == "RUN_FINISHED"`) and
each carries its meaning (`Reason.RUN_FINISHED.meaning`). The client keeps its own list of these
strings (clients/errors.py: it cannot import ledger); tests/contract/test_reasons.py holds the two
equal, so a reason added here and forgotten there fails a test.

Members are grouped by area; the error kind a reason usually travels with (ledger.domain.errors)
is named in each group's heading.
"""

from __future__ import annotations

import enum

__all__ = ["Reason"]


class Reason(enum.StrEnum):
    """A stable reason of a refusal. Define a member as `NAME = "NAME", "what it means"`."""

    _meaning: str

    def __new__(cls, value: str, meaning: str) -> Reason:
        member = str.__new__(cls, value)
        member._value_ = value
        member._meaning = meaning
        return member

    @property
    def meaning(self) -> str:
        """What the refusal means, in a sentence."""
        return self._meaning

    # Fields and limits (Invalid): a field is malformed or crosses a limit of ledger.domain.limits.
    INVALID_FIELD = "INVALID_FIELD", "A field has the wrong type or holds a value it cannot take."
    MISSING_FIELD = "MISSING_FIELD", "A required field is empty or absent."
    STRING_TOO_LONG = "STRING_TOO_LONG", "A string is longer than its limit."
    NOT_NORMALIZED = "NOT_NORMALIZED", "An identifier is not in Unicode NFC form."
    CONFUSABLE_IDENTIFIER = (
        "CONFUSABLE_IDENTIFIER",
        "An identifier mixes scripts, holds compatibility characters or is spelled with letters that look Latin.",
    )
    INVALID_TEXT = "INVALID_TEXT", "Free text holds control, line separator or bidi characters."
    OUT_OF_RANGE = "OUT_OF_RANGE", "A number (a step, a position, a page size) is outside the range it may take."
    INVALID_STATUS = "INVALID_STATUS", "A finish status is not one of done, failed, stopped."
    INVALID_DIGEST = "INVALID_DIGEST", 'A digest is not "sha256:" followed by 64 lowercase hex digits.'
    INVALID_TIMESTAMP = "INVALID_TIMESTAMP", "A time lies outside the years 1 to 9999 or has nanos out of range."
    INVALID_DURATION = "INVALID_DURATION", "A duration is outside protobuf's range or has nanos out of range."
    INVALID_GATE_RULE = (
        "INVALID_GATE_RULE",
        "A gate rule does not parse or crosses its size limits; metadata names the position.",
    )
    INVALID_QUERY = (
        "INVALID_QUERY",
        "A run search does not parse, names an unknown field or compares a field with a literal of another type;"
        " metadata names the 1-based position and what was expected there.",
    )
    QUERY_TOO_LARGE = (
        "QUERY_TOO_LARGE",
        "A run search crosses a bound (bytes, comparisons, nesting, literal length, in-list values);"
        " metadata names the limit, its maximum and the position.",
    )
    INVALID_ALIAS = (
        "INVALID_ALIAS",
        "An alias is not a lowercase letter then up to 63 lowercase letters, digits, - or _.",
    )
    INVALID_TAG = (
        "INVALID_TAG",
        "A run tag's key is not 1 to 128 letters, digits, _ - . or /, or its value is not text of at most 256"
        " characters; metadata names the key.",
    )
    TOO_MANY_TAGS = (
        "TOO_MANY_TAGS",
        "A run would carry more tags than its limit, or one request changes more tags than its limit.",
    )

    # Documents (Invalid): metadata, summaries, verdicts and other free-form mappings.
    DOCUMENT_TOO_DEEP = "DOCUMENT_TOO_DEEP", "A document is nested more deeply than its limit."
    DOCUMENT_TOO_LARGE = "DOCUMENT_TOO_LARGE", "A document (or a request carrying one) is larger than its limit."
    MAP_TOO_LARGE = "MAP_TOO_LARGE", "A mapping has more entries than its limit."
    NON_FINITE_VALUE = "NON_FINITE_VALUE", "A document holds NaN or an infinity."
    SUMMARY_TOO_LARGE = "SUMMARY_TOO_LARGE", "A run's summary, with the notes merged in, is larger than its limit."

    # Step batches (Invalid): the column-wise batches of step records.
    EMPTY_BATCH = "EMPTY_BATCH", "A batch of steps holds no step."
    BATCH_TOO_LARGE = "BATCH_TOO_LARGE", "A batch of steps (or a request carrying one) is larger than its limit."
    STEPS_NOT_INCREASING = "STEPS_NOT_INCREASING", "The steps of a batch, or a batch after the last, do not increase."
    STEP_BEFORE_RESUME = "STEP_BEFORE_RESUME", "A step or checkpoint is not after the attempt's resume point."
    COLUMN_LENGTH_MISMATCH = "COLUMN_LENGTH_MISMATCH", "A column of a batch does not have one value per step."
    TOO_MANY_METRICS = "TOO_MANY_METRICS", "A batch carries more metrics than its limit."
    INVALID_INDEX = "INVALID_INDEX", "A metric's step index does not point at a step of its batch in order."
    NON_FINITE_METRIC = "NON_FINITE_METRIC", "A metric value is NaN or an infinity."
    DUPLICATE_METRIC = "DUPLICATE_METRIC", "A metric is named twice in one batch."

    # Requests on the wire (Invalid): refused by the edge before they are decoded or handled.
    REQUEST_TOO_LARGE = "REQUEST_TOO_LARGE", "A request is larger than the limit of its type."
    MALFORMED_REQUEST = "MALFORMED_REQUEST", "The request's bytes are not a valid protobuf message of its type."
    PAGE_SIZE_TOO_LARGE = "PAGE_SIZE_TOO_LARGE", "A page size is above the largest page the server gives."
    INVALID_PAGE_TOKEN = "INVALID_PAGE_TOKEN", "A page token is not one this server gave for this query."
    UNKNOWN_EVENT_TYPE = "UNKNOWN_EVENT_TYPE", "An event type filter names no type of the ledger's events."

    # Spend input (Invalid): amounts, cost bases, holds and accounts.
    INVALID_AMOUNT = "INVALID_AMOUNT", "An amount is not integer micro-dollars."
    NEGATIVE_AMOUNT = "NEGATIVE_AMOUNT", "An amount is negative."
    AMOUNT_TOO_LARGE = "AMOUNT_TOO_LARGE", "An amount is above the largest the ledger records."
    INVALID_BASIS = "INVALID_BASIS", "A cost basis is not a mapping of the known fields and token lines."
    BASIS_AMOUNT_MISMATCH = (
        "BASIS_AMOUNT_MISMATCH",
        "A cost basis does not work out (by trainledger.pricing) to the amount it is given with.",
    )
    INVALID_TTL = "INVALID_TTL", "A reservation's time to live is not positive or is above 7 days."
    INVALID_LEASE = (
        "INVALID_LEASE",
        "An attempt's lease (lease_s) is outside the range it may take: from 2 seconds to 1 day.",
    )
    CURRENCY_NOT_SUPPORTED = (
        "CURRENCY_NOT_SUPPORTED",
        "A bill line is in a currency other than USD: the ledger holds US dollars only.",
    )
    AMOUNT_TEXT_MISMATCH = (
        "AMOUNT_TEXT_MISMATCH",
        "A bill line's micro-dollars are not its figure as text rounded half-even.",
    )
    INVALID_INTERVAL = (
        "INVALID_INTERVAL",
        "A bill line's interval is missing, ends before it starts or spans over a year.",
    )
    DUPLICATE_LINE = (
        "DUPLICATE_LINE",
        "A request holds the same bill line (line id and interval) twice with different payloads.",
    )
    PARENT_TOO_DEEP = "PARENT_TOO_DEEP", "Accounts would nest more deeply than their limit."
    ACCOUNT_NAME_RESERVED = "ACCOUNT_NAME_RESERVED", "Account names in the form of a uuid are kept for runs' accounts."
    CHECKPOINT_ALREADY_EXPIRED = (
        "CHECKPOINT_ALREADY_EXPIRED",
        "A checkpoint was saved with an expiry that has already passed: it could never be resumed from.",
    )
    MAX_STEPS_BELOW_LAST_STEP = (
        "MAX_STEPS_BELOW_LAST_STEP",
        "A run's planned max_steps is below the step it has already reached (or the attempt's resume point).",
    )

    # Unknown things (NotFound).
    RUN_NOT_FOUND = "RUN_NOT_FOUND", "No run has this id."
    ATTEMPT_NOT_FOUND = "ATTEMPT_NOT_FOUND", "The run has no attempt of this number."
    CHECKPOINT_NOT_FOUND = "CHECKPOINT_NOT_FOUND", "The run has no checkpoint at the step to resume from."
    ACCOUNT_NOT_FOUND = "ACCOUNT_NOT_FOUND", "No account has this name."
    RESERVATION_NOT_FOUND = "RESERVATION_NOT_FOUND", "The account has no reservation of this id."
    FAMILY_NOT_FOUND = "FAMILY_NOT_FOUND", "No registry family has this name."
    VERSION_NOT_FOUND = "VERSION_NOT_FOUND", "The family has no version of this number."
    NO_SCORED_CHECKPOINT = (
        "NO_SCORED_CHECKPOINT",
        "No usable checkpoint of the run has a score on the metric (or the run has no objective).",
    )

    # Ids used twice (Conflict): the same id with a different payload.
    EXISTS_WITH_DIFFERENT_PAYLOAD = (
        "EXISTS_WITH_DIFFERENT_PAYLOAD",
        "The id (a run, step, checkpoint, reservation, charge or digest) was used before with another payload.",
    )
    STEP_ALREADY_RECORDED = (
        "STEP_ALREADY_RECORDED",
        "The steps overlap steps this attempt recorded earlier, with another payload or batching.",
    )

    # Runs and attempts (Refused): a rule of the run's current state forbids the request.
    RUN_FINISHED = "RUN_FINISHED", "The run has finished: it takes no new attempt or record."
    ATTEMPT_SUPERSEDED = (
        "ATTEMPT_SUPERSEDED",
        "A newer attempt of the run has started; this one may no longer write (its pending holds were"
        " settled by the ledger).",
    )
    CHECKPOINT_EXPIRED = "CHECKPOINT_EXPIRED", "The checkpoint to resume from has expired."
    CHECKPOINT_DELETED = (
        "CHECKPOINT_DELETED",
        "The checkpoint's state was deleted: it cannot be resumed from or registered.",
    )
    CHECKPOINT_PROTECTED = (
        "CHECKPOINT_PROTECTED",
        "The checkpoint is the live resume point, the best on the run's objective or a registered version's source.",
    )
    CHECKPOINT_DIGEST_MISMATCH = (
        "CHECKPOINT_DIGEST_MISMATCH",
        "The digest named for a source checkpoint is not the digest the checkpoint was saved with.",
    )
    RUN_RETRACTED = "RUN_RETRACTED", "The run was retracted by an operator: it takes no more writes."
    LOG_SEALED_ALREADY = (
        "LOG_SEALED_ALREADY",
        "The log holds seals already: only a log without any is sealed; verify it instead.",
    )
    LOG_UNSEALED = (
        "LOG_UNSEALED",
        "The log has events without seals: it takes no write until an admin seals it (trainledger seal).",
    )
    OBJECTIVE_DIFFERS = (
        "OBJECTIVE_DIFFERS",
        "The run was opened with another objective: a run's objective never changes.",
    )

    # Accounts and reservations (Refused).
    RUN_ACCOUNT_TAKEN = "RUN_ACCOUNT_TAKEN", "The run's account name is taken by an account that is not the run's."
    PARENT_ACCOUNT_DIFFERS = (
        "PARENT_ACCOUNT_DIFFERS",
        "The run's account is under another parent: an account's parent never changes.",
    )
    CAP_BELOW_SPEND = "CAP_BELOW_SPEND", "A new cap is below what the account has already committed and holds."
    RESERVATION_RELEASED = "RESERVATION_RELEASED", "The reservation was released: it can no longer be committed."
    RESERVATION_REFUSED = "RESERVATION_REFUSED", "The reservation was refused at its cap: it holds nothing to commit."
    RESERVATION_CHARGED = "RESERVATION_CHARGED", "The id is a charge's, not a reservation's."
    RESERVATION_COMMITTED = "RESERVATION_COMMITTED", "The reservation was committed: it can no longer be released."
    PLAN_ALREADY_HELD = (
        "PLAN_ALREADY_HELD",
        "The account holds a pending plan already: one plan at a time, release it before reserving another.",
    )
    RESERVATION_IS_PLAN = "RESERVATION_IS_PLAN", "The id is a plan's: a plan is drawn by holds, never committed."

    # Registry (Refused).
    GATE_NOT_PASSED = "GATE_NOT_PASSED", "A promotion's gate verdict did not pass."
    ALREADY_CURRENT = "ALREADY_CURRENT", "The version to promote is the current one already."
    ROLLBACK_NOT_EARLIER = "ROLLBACK_NOT_EARLIER", "A rollback names the current version, not one current before."
    NEVER_PROMOTED = "NEVER_PROMOTED", "A rollback names a version that was never promoted."
    GATE_EVIDENCE_MISSING = (
        "GATE_EVIDENCE_MISSING",
        "A gate rule has no scores to be evaluated on: the version names no source checkpoint of a known run.",
    )
    FAMILY_RETIRED = (
        "FAMILY_RETIRED",
        "The family was retired: it takes no more registrations, promotions, rollbacks or alias moves.",
    )
    TOO_MANY_ALIASES = "TOO_MANY_ALIASES", "A family holds as many aliases as it may."

    # Lost races (Contended): a compare-and-set lost or a write race outlived its retries.
    CURRENT_VERSION_MOVED = "CURRENT_VERSION_MOVED", "Another version became current before this promotion."
    ALIAS_MOVED = "ALIAS_MOVED", "The alias names another version than the one the move expected."
    WRITE_CONFLICT = "WRITE_CONFLICT", "The write kept conflicting with concurrent writers past its retries."

    # Quotas (Exhausted).
    SPEND_CAP_EXCEEDED = (
        "SPEND_CAP_EXCEEDED",
        "A reservation would cross the cap of its account or of a parent; the refusal is recorded for audit.",
    )
    TOO_MANY_WATCHERS = "TOO_MANY_WATCHERS", "The server, or this caller, has as many watchers open as it allows."
    WATCHER_TOO_SLOW = (
        "WATCHER_TOO_SLOW",
        "A watcher fell too far behind its run and was dropped: watch again from next_position.",
    )
    VERIFY_BUSY = "VERIFY_BUSY", "A verification of this ledger is running already: one runs at a time; try later."

    # The server and its storage (Unavailable): try again after a backoff; ids make resending safe.
    UNAVAILABLE = "UNAVAILABLE", "Storage could not be reached or failed the operation."
    STORAGE_FULL = "STORAGE_FULL", "Storage has no room for the write (the disk or the database is full)."
    VIEW_NOT_CAUGHT_UP = "VIEW_NOT_CAUGHT_UP", "The views did not reach the requested position within the deadline."
    PROJECTION_FAILED = "PROJECTION_FAILED", "The views are stopped by a projection failure; reads cannot be served."
    SERVER_BUSY = "SERVER_BUSY", "The server holds as many request bytes as it allows: try again shortly."
    TOO_MANY_STREAMS = "TOO_MANY_STREAMS", "This connection has as many request streams open as it allows."

    # Identity (Unauthenticated; PermissionDenied): who asks, and whether that caller may.
    TOKEN_MISSING = "TOKEN_MISSING", "Authentication is on and the call carries no bearer token."
    TOKEN_INVALID = "TOKEN_INVALID", "The bearer token is malformed, unknown, or its secret does not match."
    TOKEN_EXPIRED = "TOKEN_EXPIRED", "The bearer token has passed its expiry."
    TOKEN_REVOKED = "TOKEN_REVOKED", "The bearer token was revoked."
    ROLE_NOT_ALLOWED = "ROLE_NOT_ALLOWED", "The token's role may not call this method."
    OUTSIDE_SCOPE = "OUTSIDE_SCOPE", "The run or account asked about is outside the token's account scope."
    CAP_RAISE_OUTSIDE_SCOPE = (
        "CAP_RAISE_OUTSIDE_SCOPE",
        "A token scoped to an account may lower that account's cap, never raise or lift it.",
    )
    TOKEN_NOT_FOUND = "TOKEN_NOT_FOUND", "No token has this id."

    # Anything else.
    INTERNAL = "INTERNAL", "A server bug: the message is generic and the request id finds the details in the log."
