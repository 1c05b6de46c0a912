"""trainledger's core: the domain, the application and the views. Plain Python, no gRPC."""

from ledger.application.ledger import Ledger, Receipt
from ledger.domain.basis import cost_usd_micro
from ledger.domain.errors import (
    AbortedError,
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    LedgerError,
    NotFoundError,
    ResourceExhaustedError,
    SpendCapExceededError,
    UnavailableError,
)

__all__ = [
    "Ledger",
    "Receipt",
    "cost_usd_micro",
    "LedgerError",
    "InvalidArgumentError",
    "NotFoundError",
    "AlreadyExistsError",
    "FailedPreconditionError",
    "AbortedError",
    "ResourceExhaustedError",
    "SpendCapExceededError",
    "UnavailableError",
]
