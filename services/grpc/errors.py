"""The one table from the ledger's error kinds to gRPC status codes, and how an error goes on the wire.

Every refusal travels as a google.rpc.Status carrying google.rpc.ErrorInfo(reason, domain
"trainledger", metadata), so clients branch on the reason and never parse message text. The kind
of an error (ledger.domain.errors) decides its status code; its reason (ledger.domain.reasons)
says which refusal it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

from ledger.domain.errors import (
    CapExceeded,
    Conflict,
    Contended,
    Exhausted,
    Invalid,
    LedgerError,
    NotFound,
    PermissionDenied,
    Refused,
    Unauthenticated,
    Unavailable,
)
from ledger.domain.reasons import Reason

__all__ = ["DOMAIN", "STATUS_BY_KIND", "status_code", "rich_status", "abort", "abort_internal"]

DOMAIN = "trainledger"

# Most specific first: the first kind an error is an instance of decides its code. A kind left out
# of the table is a bug and goes out as INTERNAL.
STATUS_BY_KIND: tuple[tuple[type[LedgerError], grpc.StatusCode], ...] = (
    (Invalid, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (Conflict, grpc.StatusCode.ALREADY_EXISTS),
    (Refused, grpc.StatusCode.FAILED_PRECONDITION),
    (Contended, grpc.StatusCode.ABORTED),
    (CapExceeded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (Exhausted, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (Unavailable, grpc.StatusCode.UNAVAILABLE),
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
)


def status_code(error: LedgerError) -> grpc.StatusCode:
    """The status code of a ledger error by its kind; a kind the table does not list: INTERNAL."""
    for kind, code in STATUS_BY_KIND:
        if isinstance(error, kind):
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
    return data[: limit - 3].decode(errors="ignore") + "\u2026"


def rich_status(
    code: grpc.StatusCode, message: str, reason: Reason, metadata: Mapping[str, str] | None = None, request_id: str = ""
) -> grpc.Status:
    """A grpc.Status whose trailing metadata holds google.rpc.Status with ErrorInfo, plus the
    request id (aborting replaces any trailing metadata set before). The message and metadata
    values are cut to a few hundred bytes, so a refusal always fits a client's metadata limit."""
    message = _cut(message, MESSAGE_BYTES_MAX)
    metadata = {
        _cut(key, 64): _cut(value, METADATA_VALUE_BYTES_MAX)
        for key, value in list(dict(metadata or {}).items())[:METADATA_ENTRIES_MAX]
    }
    info = error_details_pb2.ErrorInfo(reason=str(reason), domain=DOMAIN, metadata=metadata)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = rpc_status.to_status(
        status_pb2.Status(code=getattr(code_pb2, code.name), message=message, details=[detail])
    )
    if request_id:
        status = status._replace(  # type: ignore[attr-defined]
            trailing_metadata=(*status.trailing_metadata, ("x-request-id", request_id))
        )
    return status


async def abort(context: grpc.aio.ServicerContext[Any, Any], error: LedgerError, request_id: str = "") -> NoReturn:
    """End the call with the error's status code, message and ErrorInfo."""
    await context.abort_with_status(  # type: ignore[attr-defined]
        rich_status(status_code(error), error.message, error.reason, error.metadata, request_id)
    )
    raise AssertionError("abort_with_status returned")  # pragma: no cover


async def abort_internal(context: grpc.aio.ServicerContext[Any, Any], request_id: str) -> NoReturn:
    """End the call with INTERNAL and a generic message: details stay in the server's log."""
    await context.abort_with_status(  # type: ignore[attr-defined]
        rich_status(
            grpc.StatusCode.INTERNAL,
            f"internal error (request id {request_id})",
            Reason.INTERNAL,
            {"request_id": request_id},
            request_id,
        )
    )
    raise AssertionError("abort_with_status returned")  # pragma: no cover
