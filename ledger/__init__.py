"""trainledger's core: the domain, the application and the views. Plain Python, no gRPC."""

from ledger.application.ledger import Ledger, Receipt
from ledger.domain.basis import cost_usd_micro
from ledger.domain.errors import (
    CapExceeded,
    Conflict,
    Contended,
    Exhausted,
    Invalid,
    LedgerError,
    NotFound,
    Refused,
    Unavailable,
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
]
