"""The Python client of trainledger: sync and asyncio clients side by side, the trainer-facing
RunRecorder, and run keys. Talks to a server over gRPC only; never imports ledger/ or services/."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clients.client import LedgerClient
from clients.errors import (
    Aborted,
    AlreadyExists,
    AttemptSuperseded,
    Cancelled,
    CheckpointProtected,
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
    RunRetracted,
    SpendCapExceeded,
    Unauthenticated,
    Unavailable,
    WatcherTooSlow,
    error_from_rpc,
)
from clients.frames import FrameTooLarge
from clients.models import RunSourceCheckpoint, SourceCheckpoint
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
    "SourceCheckpoint",
    "RunSourceCheckpoint",
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
    "RunRetracted",
    "CheckpointProtected",
    "GateNotPassed",
    "FrameTooLarge",
]

if TYPE_CHECKING:
    from clients.aio import AsyncLedgerClient
    from clients.recorder import Hold, RunRecorder, exit_status

# Imported on first use: the asyncio client and the recorder cost a command-line read their
# import time (asyncio, threads) and it needs neither.
_LAZY = {
    "AsyncLedgerClient": "clients.aio",
    "Hold": "clients.recorder",
    "RunRecorder": "clients.recorder",
    "exit_status": "clients.recorder",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
