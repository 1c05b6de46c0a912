"""The Python client of trainledger: sync and asyncio clients side by side, the trainer-facing
RunRecorder, and run keys. Talks to a server over gRPC only; never imports ledger/ or services/."""

from clients.aio import AsyncLedgerClient
from clients.client import LedgerClient
from clients.errors import (
    Aborted,
    AlreadyExists,
    AttemptSuperseded,
    Cancelled,
    CurrentVersionMoved,
    DeadlineExceeded,
    FailedPrecondition,
    GateNotPassed,
    Internal,
    InvalidArgument,
    LedgerClientError,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    RunEnded,
    RunFinished,
    SpendCapExceeded,
    Unauthenticated,
    Unavailable,
    WatcherTooSlow,
    error_from_rpc,
)
from clients.recorder import Hold, RunRecorder, exit_status
from clients.retry import RetryPolicy
from clients.runkey import dataset_digest, file_digest, run_key
from clients.tls import TLS

__all__ = [
    "LedgerClient",
    "AsyncLedgerClient",
    "TLS",
    "RunRecorder",
    "Hold",
    "exit_status",
    "RetryPolicy",
    "run_key",
    "file_digest",
    "dataset_digest",
    "error_from_rpc",
    "LedgerClientError",
    "InvalidArgument",
    "NotFound",
    "AlreadyExists",
    "FailedPrecondition",
    "Aborted",
    "ResourceExhausted",
    "Unavailable",
    "DeadlineExceeded",
    "Cancelled",
    "Unauthenticated",
    "PermissionDenied",
    "Internal",
    "SpendCapExceeded",
    "AttemptSuperseded",
    "RunFinished",
    "RunEnded",
    "CurrentVersionMoved",
    "WatcherTooSlow",
    "GateNotPassed",
]
