"""The one table from ledger errors to gRPC status codes, and how an error goes on the wire.

Every refusal travels as a google.rpc.Status carrying google.rpc.ErrorInfo(reason, domain
"trainledger", metadata), so clients branch on the reason and never parse message text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

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

__all__ = ["DOMAIN", "STATUS_BY_ERROR", "status_code", "rich_status", "abort", "abort_internal"]

DOMAIN = "trainledger"

# Most specific first: the first class an error is an instance of decides its code.
STATUS_BY_ERROR: tuple[tuple[type[LedgerError], grpc.StatusCode], ...] = (
    (InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFoundError, grpc.StatusCode.NOT_FOUND),
    (AlreadyExistsError, grpc.StatusCode.ALREADY_EXISTS),
    (FailedPreconditionError, grpc.StatusCode.FAILED_PRECONDITION),
    (AbortedError, grpc.StatusCode.ABORTED),
    (SpendCapExceededError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (ResourceExhaustedError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (UnavailableError, grpc.StatusCode.UNAVAILABLE),
)


def status_code(error: LedgerError) -> grpc.StatusCode:
    """The status code of a ledger error; an unlisted LedgerError subclass is a bug: INTERNAL."""
    for error_class, code in STATUS_BY_ERROR:
        if isinstance(error, error_class):
            return code
    return grpc.StatusCode.INTERNAL


# What one refusal carries is bounded in bytes: the message and ErrorInfo travel in trailing
# metadata, which gRPC clients cap (8 KiB by default), and a message may quote the request.
MESSAGE_BYTES_MAX = 256
METADATA_VALUE_BYTES_MAX = 96
METADATA_ENTRIES_MAX = 8


def _cut(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, on a character boundary, marked with an ellipsis."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit - 3].decode(errors="ignore") + "\u2026"


def rich_status(code: grpc.StatusCode, message: str, reason: str, metadata: Mapping[str, str] = (),
                request_id: str = "") -> grpc.Status:
    """A grpc.Status whose trailing metadata holds google.rpc.Status with ErrorInfo, plus the
    request id (aborting replaces any trailing metadata set before). The message and metadata
    values are cut to a few hundred bytes, so a refusal always fits a client's metadata limit."""
    message = _cut(message, MESSAGE_BYTES_MAX)
    metadata = {_cut(key, 64): _cut(value, METADATA_VALUE_BYTES_MAX)
                for key, value in list(dict(metadata).items())[:METADATA_ENTRIES_MAX]}
    info = error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN, metadata=metadata)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = rpc_status.to_status(status_pb2.Status(code=getattr(code_pb2, code.name), message=message,
                                                    details=[detail]))
    if request_id:
        status = status._replace(trailing_metadata=(*status.trailing_metadata, ("x-request-id", request_id)))
    return status


async def abort(context: grpc.aio.ServicerContext, error: LedgerError, request_id: str = "") -> NoReturn:
    """End the call with the error's status code, message and ErrorInfo."""
    await context.abort_with_status(
        rich_status(status_code(error), error.message, error.reason, error.metadata, request_id))
    raise AssertionError("abort_with_status returned")  # pragma: no cover


async def abort_internal(context: grpc.aio.ServicerContext, request_id: str) -> NoReturn:
    """End the call with INTERNAL and a generic message: details stay in the server's log."""
    await context.abort_with_status(rich_status(
        grpc.StatusCode.INTERNAL, f"internal error (request id {request_id})", "INTERNAL",
        {"request_id": request_id}, request_id))
    raise AssertionError("abort_with_status returned")  # pragma: no cover
