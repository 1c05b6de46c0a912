"""trainledger's core: the domain, the application and the views. Plain Python, no gRPC."""

from ledger.application.ledger import Ledger, Receipt
from ledger.domain.basis import cost_usd_micro
from ledger.domain.errors import (
    # The former names of the error kinds (AbortedError ... UnavailableError) go once the code
    # base uses the kinds' own names.
    AbortedError,
    AlreadyExistsError,
    CapExceeded,
    Conflict,
    Contended,
    Exhausted,
    FailedPreconditionError,
    Invalid,
    InvalidArgumentError,
    LedgerError,
    NotFound,
    NotFoundError,
    Refused,
    ResourceExhaustedError,
    SpendCapExceededError,
    Unavailable,
    UnavailableError,
)
from ledger.domain.reasons import Reason

__all__ = [
    "Ledger",
    "Receipt",
    "cost_usd_micro",
    "LedgerError",
    "Reason",
    "Invalid",
    "NotFound",
    "Conflict",
    "Refused",
    "Contended",
    "Exhausted",
    "CapExceeded",
    "Unavailable",
    # The former names of the error kinds, until the code base uses the kinds' own names.
    "InvalidArgumentError",
    "NotFoundError",
    "AlreadyExistsError",
    "FailedPreconditionError",
    "AbortedError",
    "ResourceExhaustedError",
    "SpendCapExceededError",
    "UnavailableError",
]
