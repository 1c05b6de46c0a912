"""The interceptor every call passes through: who asks, under which request id, and what a failure
looks like on the wire.

The request id comes from metadata `x-request-id` (else a new uuid4) and goes back in the trailing
metadata; the principal comes from `x-principal` (default "anonymous"). Both live in context
variables that servicers hand to ledger commands. A LedgerError ends the call with its status and
ErrorInfo (services.errors); anything else is INTERNAL with a generic message, logged with the
request id. This is the only try/except around servicer code.
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

import grpc

from ledger.errors import LedgerError
from services import errors

__all__ = ["PRINCIPAL", "REQUEST_ID", "audit", "EdgeInterceptor"]

log = logging.getLogger("trainledger.services")

PRINCIPAL: ContextVar[str] = ContextVar("principal", default="anonymous")
REQUEST_ID: ContextVar[str] = ContextVar("request_id", default="")


def audit() -> dict[str, str]:
    """The principal= and request_id= keyword arguments of a ledger command for this call."""
    return {"principal": PRINCIPAL.get(), "request_id": REQUEST_ID.get()}


def _begin(context: grpc.aio.ServicerContext) -> str:
    metadata = {key: value for key, value in (context.invocation_metadata() or ()) if isinstance(value, str)}
    request_id = metadata.get("x-request-id") or str(uuid.uuid4())
    PRINCIPAL.set(metadata.get("x-principal") or "anonymous")
    REQUEST_ID.set(request_id)
    context.set_trailing_metadata((("x-request-id", request_id),))
    return request_id


async def _fail(context: grpc.aio.ServicerContext, method: str, request_id: str, error: Exception) -> None:
    if isinstance(error, LedgerError):
        await errors.abort(context, error, request_id)
    log.error("unexpected error in %s (request id %s)", method, request_id, exc_info=error)
    await errors.abort_internal(context, request_id)


def _wrap(behavior: Callable[..., Any], method: str) -> Callable[..., Any]:
    """Wrap a handler of any shape: an async generator stays one (acks already yielded stand), a
    coroutine (which may use context.write) stays a coroutine."""
    if inspect.isasyncgenfunction(behavior):
        async def stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
            request_id = _begin(context)
            try:
                async for response in behavior(request, context):
                    yield response
            except grpc.aio.AbortError:
                raise
            except Exception as error:
                await _fail(context, method, request_id, error)
        return stream

    async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        request_id = _begin(context)
        try:
            result = behavior(request, context)
            return await result if inspect.isawaitable(result) else result
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _fail(context, method, request_id, error)
    return unary


class EdgeInterceptor(grpc.aio.ServerInterceptor):
    """Request id, principal and the error boundary for every RPC, unary or streaming."""

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        shape = {"request_deserializer": handler.request_deserializer,
                 "response_serializer": handler.response_serializer}
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(_wrap(handler.unary_unary, method), **shape)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(_wrap(handler.unary_stream, method), **shape)
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(_wrap(handler.stream_unary, method), **shape)
        return grpc.stream_stream_rpc_method_handler(_wrap(handler.stream_stream, method), **shape)
