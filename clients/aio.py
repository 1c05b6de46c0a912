"""The asyncio client: `AsyncLedgerClient`, the same methods as LedgerClient, awaited.

Unary methods return awaitables of the same typed results; watch_run, read_events and record_steps
return async iterators. Deadlines, request ids, principal and retries behave exactly as in
LedgerClient: both run on clients.transport (stubs, metadata, the ack-stream core) and loop on
clients.retry.Tries; this module adds the awaited waits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Sequence
from typing import Any

import grpc

from clients.errors import error_from_rpc
from clients.frames_methods import AsyncFrameReads
from clients.methods import Decode, next_page
from clients.models import StepAck
from clients.retry import FirstContact, RetryPolicy, Tries
from clients.tls import TLS, tls_of
from clients.transport import (
    CHANNEL_OPTIONS,
    STUBS,
    AckCore,
    CallIdentity,
    channel_target,
    explained,
    open_channel,
    record_request,
    token_of,
    unreached,
)

__all__ = ["AsyncLedgerClient", "AsyncAckStream"]


class AsyncAckStream(AckCore):
    """The acks of a RecordSteps stream, one StepAck per batch in order; `cancel()` ends it."""

    def __aiter__(self) -> AsyncIterator[StepAck]:
        return self

    async def __anext__(self) -> StepAck:
        try:
            response = await self._call.read()
        except grpc.RpcError as error:
            raise self._error(error) from None
        if response is grpc.aio.EOF:  # type: ignore[attr-defined]
            raise StopAsyncIteration
        return self._ack(response)


class AsyncLedgerClient(AsyncFrameReads, CallIdentity):
    """An asyncio client of one ledger server, or of several replicas (a list of "host:port",
    as LedgerClient); create it inside the event loop that uses it. Usable as an async context
    manager (closes the channel). `token`, `tls`, `timeout_s`, `outage_budget_s`, `first_contact_s`
    and `retries` as LedgerClient."""

    def __init__(
        self,
        address: str | Sequence[str] = "127.0.0.1:50051",
        *,
        principal: str = "",
        token: str | None = None,
        tls: bool | TLS | None = None,
        timeout_s: float = 10.0,
        retries: RetryPolicy | int | None = None,
        outage_budget_s: float | None = None,
        first_contact_s: float | None = None,
        channel: grpc.aio.Channel | None = None,
        options: Iterable[tuple[str, Any]] = (),
    ) -> None:
        self.address = address
        self.principal = principal
        self.timeout_s = timeout_s
        self.retry_policy = RetryPolicy.of(retries, outage_budget_s=outage_budget_s)
        self._contact = FirstContact(first_contact_s)
        self._token = token_of(token)
        self.tls = tls_of(tls)
        self._channel = channel or open_channel(
            channel_target(address), self.tls, (*CHANNEL_OPTIONS, *options), aio=True
        )
        self._stubs = {name: stub(self._channel) for name, stub in STUBS.items()}
        self._closed = False

    @property
    def first_contact_s(self) -> float:
        """How long a call retries while no ledger has ever answered this client (then it raises
        Unavailable naming the address); the outage budget applies once one has."""
        return self._contact.bound_s

    @property
    def outage_budget_s(self) -> float:
        """How long a call rides out an unreachable ledger before it raises Unavailable."""
        return self.retry_policy.total_s

    async def close(self) -> None:
        self._closed = True
        await self._channel.close(None)

    async def __aenter__(self) -> AsyncLedgerClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _unary(
        self,
        service: str,
        method: str,
        request: Any,
        *,
        decode: Decode[Any],
        idempotent: bool = True,
        timeout_s: float | None = None,
    ) -> Any:
        rpc = getattr(self._stubs[service], method)
        metadata = self.metadata()
        request = self._session(request)
        answered = self._contact.answered
        tries = Tries(self._contact.policy(self.retry_policy), idempotent=idempotent)
        while True:
            try:
                reply = await rpc(request, timeout=timeout_s or self.timeout_s, metadata=metadata)
                self._contact.saw(None)
                return self._observe(decode(reply))
            except grpc.RpcError as rpc_error:
                error, delay_s = tries.failed(rpc_error)
            self._contact.saw(error)
            if delay_s is None or self._closed:
                if not (answered or self._contact.answered):
                    error = unreached(error, self.address, time.monotonic() - tries.began)
                raise explained(error, secure=self.tls is not None)
            await asyncio.sleep(delay_s)

    async def _unary_pages(
        self,
        service: str,
        method: str,
        request: Any,
        *,
        decode: Decode[Any],
        items: Callable[[Any], Sequence[Any]],
        timeout_s: float | None,
    ) -> list[Any]:
        found: list[Any] = []
        while True:
            page = await self._unary(service, method, request, decode=decode, timeout_s=timeout_s)
            found += items(page)
            if not page.next_page_token:
                return found
            request = next_page(request, page.next_page_token)

    async def _server_stream(
        self, service: str, method: str, request: Any, *, decode: Decode[Any], timeout_s: float | None
    ) -> AsyncIterator[Any]:
        call = getattr(self._stubs[service], method)(request, timeout=timeout_s, metadata=self.metadata())
        try:
            async for response in call:
                yield decode(response)
        except grpc.RpcError as error:
            raise explained(error_from_rpc(error), secure=self.tls is not None) from None
        finally:
            call.cancel()

    def record_steps(
        self, batches: Iterable[Any] | AsyncIterable[Any], *, timeout_s: float | None = None
    ) -> AsyncAckStream:
        """Stream batches (see clients.transport.record_request) and get one StepAck per batch."""

        async def requests() -> AsyncIterator[Any]:
            number = 0
            if isinstance(batches, AsyncIterable):
                async for batch in batches:
                    number += 1
                    yield record_request(batch, number)
            else:
                for batch in batches:
                    number += 1
                    yield record_request(batch, number)

        call = self._stubs["Runs"].RecordSteps(requests(), timeout=timeout_s, metadata=self.metadata())
        return AsyncAckStream(call, self._observe, secure=self.tls is not None)
