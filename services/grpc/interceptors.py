"""The interceptor every call passes through: who asks, under which request id, how much of the
server a request may take, and what a failure looks like on the wire.

The request id comes from metadata `x-request-id` (else a new uuid4) and goes back in the trailing
metadata; the principal comes from the caller's bearer token when authentication is on
(services.runtime.auth: the token is checked, its role against the method and its scope against the
request, before the servicer runs; a stream's token is checked again while the stream is open,
and a revoked or expired one ends it: Gate.guard), else from `x-principal` (default
"anonymous"). Both live in context variables that servicers hand to ledger commands. A
LedgerError of a kind in the error table ends the call with its status and ErrorInfo
(services.grpc.errors); anything else (another exception, or a kind the table does not list) is
INTERNAL with a generic message, logged with the request id. This is the only try/except around
servicer code.

Requests reach it as bytes (the handlers it returns have no deserializer), so that decoding them
is ours too: a request above its size limit is refused before it is decoded, each one takes its
bytes from the server's budget while it is handled, and bytes that are no message are refused
with INVALID_ARGUMENT and a reason (services.grpc.codec.wire). Each call that streams requests
(RecordSteps) takes one of its client's streams (services.runtime.edge); server streams (WatchRun,
ReadEvents) are bounded by their servicers.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from typing import Any, cast

import grpc
from google.protobuf.descriptor import Descriptor

from ledger.domain.errors import LedgerError
from services.grpc import errors
from services.grpc.codec import wire
from services.runtime.auth import Gate, Identity
from services.runtime.edge import BUSY_WAIT_S, CLIENT, Edge
from services.runtime.logs import CALL_ERROR, CALLER, PRINCIPAL, REQUEST_ID

__all__ = ["SCOPE", "audit", "EdgeInterceptor"]

log = logging.getLogger("trainledger.services")

# The account the caller's token is scoped to ("" for none): the ledger's cap rule reads it.
SCOPE: ContextVar[str] = ContextVar("scope", default="")


def audit() -> dict[str, str]:
    """The principal= and request_id= keyword arguments of a ledger command for this call."""
    return {"principal": PRINCIPAL.get(), "request_id": REQUEST_ID.get()}


def _metadata(context: grpc.aio.ServicerContext[Any, Any]) -> dict[str, str]:
    return {key: value for key, value in (context.invocation_metadata() or ()) if isinstance(value, str)}


async def _identify(gate: Gate | None, method: str, metadata: dict[str, str]) -> Identity:
    """Who calls (services.runtime.auth); the principal of the call becomes the token's."""
    if gate is None:
        return Identity(None)
    identity = await gate.authenticate(method, metadata)
    PRINCIPAL.set(identity.principal(PRINCIPAL.get()))
    SCOPE.set(identity.token.account if identity.token is not None and identity.token.account else "")
    return identity


def _begin(context: grpc.aio.ServicerContext[Any, Any]) -> tuple[str, dict[str, str]]:
    """The call's request id and its metadata, read once for the call."""
    metadata = _metadata(context)
    request_id = metadata.get("x-request-id") or str(uuid.uuid4())
    PRINCIPAL.set(metadata.get("x-principal") or "anonymous")
    REQUEST_ID.set(request_id)
    CALLER.set(None)
    SCOPE.set("")
    CLIENT.set(context.peer() or "unknown")
    context.set_trailing_metadata((("x-request-id", request_id),))
    return request_id, metadata


async def _fail(context: grpc.aio.ServicerContext[Any, Any], method: str, request_id: str, error: Exception) -> None:
    CALL_ERROR.set(error)  # For the call's log line (services.runtime.logs).
    if isinstance(error, LedgerError) and errors.status_code(error) != grpc.StatusCode.INTERNAL:
        await errors.abort(context, error, request_id)
    log.error("unexpected error in %s (request id %s)", method, request_id, exc_info=error)
    await errors.abort_internal(context, request_id)


class _Requests:
    """How requests of one method arrive: their decoder and size limit, and their admission into
    the server (size, then room in the byte budget, then decoding)."""

    def __init__(self, edge: Edge, deserializer: Callable[[bytes], Any] | None) -> None:
        self.edge, self.deserializer = edge, deserializer
        message_class = getattr(deserializer, "__self__", None)
        self.descriptor: Descriptor | None = getattr(message_class, "DESCRIPTOR", None)
        self.limit = wire.request_limit(self.descriptor)

    async def admit(self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> tuple[Any, int]:
        """The request decoded and the bytes it holds of the budget (the caller releases them)."""
        wire.check_request_size(len(data), self.limit)
        held = await self.edge.budget.acquire(len(data), min(BUSY_WAIT_S, self.edge.timeout_s(context)))
        try:
            if self.deserializer is None:
                return data, held
            return wire.decode(data, self.deserializer, self.descriptor), held
        except BaseException:
            self.edge.budget.release(held)
            raise

    @contextlib.asynccontextmanager
    async def one(self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
        request, held = await self.admit(data, context)
        try:
            yield request
        finally:
            self.edge.budget.release(held)

    async def stream(
        self, raw: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any], holding: list[int]
    ) -> AsyncIterator[Any]:
        """A request stream decoded. Each request holds its bytes until it is answered (one
        answer per request, in order: the caller releases the oldest of `holding` with each
        answer, and all of them when the call ends), so the requests a servicer reads ahead of
        its answers (services.grpc.read_ahead.ReadAhead) are in the budget too."""
        async for data in raw:
            request, held = await self.admit(data, context)
            holding.append(held)
            yield request

    def release(self, holding: list[int]) -> None:
        while holding:
            self.edge.budget.release(holding.pop())

    def answered(self, holding: list[int]) -> None:
        if holding:
            self.edge.budget.release(holding.pop(0))


class _Wrapped:
    """One method's handler with the edge around it: identify, admit the request's bytes into the
    budget, authorize, call, and turn what it raises into a status (_fail)."""

    def __init__(
        self,
        behavior: Callable[..., Any],
        method: str,
        requests: _Requests,
        *,
        streaming_requests: bool,
        streaming_responses: bool,
        gate: Gate | None,
    ) -> None:
        self.behavior, self.method, self.requests, self.gate = behavior, method, requests, gate
        self.edge = requests.edge
        self.streaming_requests, self.streaming_responses = streaming_requests, streaming_responses

    @contextlib.asynccontextmanager
    async def authorized(
        self, request: Any, context: grpc.aio.ServicerContext[Any, Any], holding: list[int], metadata: dict[str, str]
    ) -> AsyncIterator[tuple[Identity, Any]]:
        gate = self.gate
        identity = await _identify(gate, self.method, metadata)
        async with self.admitted(request, context, holding) as decoded:
            if gate is None:
                yield identity, decoded
            elif self.streaming_requests:
                yield identity, gate.authorize_stream(self.method, identity, decoded)
            else:
                await gate.authorize(self.method, identity, decoded)
                yield identity, decoded

    @contextlib.asynccontextmanager
    async def admitted(
        self, request: Any, context: grpc.aio.ServicerContext[Any, Any], holding: list[int]
    ) -> AsyncIterator[Any]:
        requests = self.requests
        if self.streaming_requests:
            with self.edge.stream(CLIENT.get()):
                try:
                    yield requests.stream(request, context, holding)
                finally:
                    requests.release(holding)
        elif self.streaming_responses:
            # A server stream holds its request's bytes only while it is decoded.
            decoded, held = await requests.admit(request, context)
            self.edge.budget.release(held)
            yield decoded
        else:
            async with requests.one(request, context) as decoded:
                yield decoded

    async def stream(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        """An async generator stays one: the acks already yielded stand."""
        request_id, metadata = _begin(context)
        holding: list[int] = []
        try:
            async with self.authorized(request, context, holding, metadata) as (identity, decoded):
                responses = self.behavior(decoded, context)
                if self.gate is not None:  # Ended once its token is revoked or expires.
                    responses = self.gate.guard(identity, responses)
                async for response in responses:
                    self.requests.answered(holding)  # The oldest request is handled.
                    yield response
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _fail(context, self.method, request_id, error)

    async def shaped(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        """A coroutine of a streaming method (which may use context.write) stays a coroutine."""
        request_id, metadata = _begin(context)
        try:
            async with self.authorized(request, context, [], metadata) as (_, decoded):
                result = self.behavior(decoded, context)
                return await result if inspect.isawaitable(result) else result
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _fail(context, self.method, request_id, error)

    async def unary(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        # authorized() and admitted() written out for the commonest shape, one request and one
        # answer: the same steps in the same order, without three context managers per call.
        request_id, metadata = _begin(context)
        gate, requests = self.gate, self.requests
        try:
            identity = await _identify(gate, self.method, metadata)
            decoded, held = await requests.admit(request, context)
            try:
                if gate is not None:
                    await gate.authorize(self.method, identity, decoded)
                result = self.behavior(decoded, context)
                return await result if inspect.isawaitable(result) else result
            finally:
                self.edge.budget.release(held)
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _fail(context, self.method, request_id, error)


def _wrap(
    behavior: Callable[..., Any],
    method: str,
    requests: _Requests,
    *,
    streaming_requests: bool,
    streaming_responses: bool,
    gate: Gate | None = None,
) -> Callable[..., Any]:
    """Wrap a handler of any shape: an async generator stays one (acks already yielded stand), a
    coroutine (which may use context.write) stays a coroutine."""
    wrapped = _Wrapped(
        behavior,
        method,
        requests,
        streaming_requests=streaming_requests,
        streaming_responses=streaming_responses,
        gate=gate,
    )
    if inspect.isasyncgenfunction(behavior):
        return wrapped.stream
    if streaming_requests or streaming_responses:
        return wrapped.shaped
    return wrapped.unary


class EdgeInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Request id, principal, request limits and the error boundary for every RPC, unary or
    streaming."""

    def __init__(self, edge: Edge, gate: Gate | None = None, metrics: Any = None) -> None:
        self.edge, self.gate = edge, gate
        self.metrics = metrics  # services.runtime.metrics.Metrics: each call counted and timed.
        # By method: the servicer's handler and the one made of it, made once (the server hands
        # the same handler for a method every call).
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler[Any, Any], grpc.RpcMethodHandler[Any, Any]]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any]]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any]:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        made = self._wrapped.get(method)
        if made is not None and made[0] is handler:
            return made[1]
        wrapped = self._wrap(method, handler)
        if self.metrics is not None:
            wrapped = self.metrics.instrument(method, wrapped)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def _wrap(self, method: str, handler: grpc.RpcMethodHandler[Any, Any]) -> grpc.RpcMethodHandler[Any, Any]:
        requests = _Requests(self.edge, handler.request_deserializer)
        # Requests come as bytes: decoding them is the wrapper's (see _Requests).
        shape = {"request_deserializer": None, "response_serializer": handler.response_serializer}
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(
                _wrap(
                    handler.unary_unary,
                    method,
                    requests,
                    streaming_requests=False,
                    streaming_responses=False,
                    gate=self.gate,
                ),
                **shape,
            )
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                _wrap(
                    handler.unary_stream,
                    method,
                    requests,
                    streaming_requests=False,
                    streaming_responses=True,
                    gate=self.gate,
                ),
                **shape,
            )
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(
                _wrap(
                    handler.stream_unary,
                    method,
                    requests,
                    streaming_requests=True,
                    streaming_responses=False,
                    gate=self.gate,
                ),
                **shape,
            )
        # The last shape: a handler has exactly one of the four behaviors.
        behavior = cast(Callable[..., Any], handler.stream_stream)
        return grpc.stream_stream_rpc_method_handler(
            _wrap(behavior, method, requests, streaming_requests=True, streaming_responses=True, gate=self.gate),
            **shape,
        )
