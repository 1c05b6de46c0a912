"""The synchronous client: `LedgerClient`.

Every call carries a deadline, an x-request-id made once per logical call (and reused by its
retries) and the caller's x-principal; a retry resends the very same request object. The wire
side both clients share (stubs, metadata, the ack-stream core) is in clients.transport, the
tries of a call under a RetryPolicy in clients.retry; this module adds the blocking waits.

Several replicas of one ledger (servers over one PostgreSQL database) are given as a list of
addresses: the channel connects to the first that answers and fails over to the next when it
goes away (gRPC's pick_first over an `ipv4:`/`ipv6:` target; host names are resolved once, here).
A call that failed with the replica answers UNAVAILABLE and is retried on the next; a retry is
answered as a duplicate if the first try did land, so nothing is recorded twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import grpc

from clients.errors import error_from_rpc
from clients.frames_methods import FrameReads
from clients.methods import Decode
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

__all__ = ["LedgerClient", "AckStream", "CHANNEL_OPTIONS", "record_request", "channel_target"]


class AckStream(AckCore):
    """The acks of a RecordSteps stream, one StepAck per batch in order; `cancel()` ends it."""

    def __iter__(self) -> Iterator[StepAck]:
        return self

    def __next__(self) -> StepAck:
        try:
            return self._ack(next(self._call))
        except grpc.RpcError as error:
            raise self._error(error) from None


class LedgerClient(FrameReads, CallIdentity):
    """A blocking client of one ledger server, or of several replicas given as a list of "host:port"
    (failover in order). `timeout_s` is the deadline of each try; `outage_budget_s` how long a call
    rides out an unreachable ledger (UNAVAILABLE is resent until then, default 30 s; then it raises
    Unavailable) once a ledger has answered this client, and `first_contact_s` (default 5 s) before one
    has: a first call to an address where no ledger answers raises Unavailable naming the address and
    the cause; `retries` a RetryPolicy, or a number of retries (0: none at all). `token`: a bearer token
    sent as `authorization: Bearer ...` on every call (default TRAINLEDGER_TOKEN; "" for none), never
    shown in a repr, a log line or an error; with one, the ledger records the token's principal and
    `principal` is not sent. `tls`: True (the system's roots), a clients.tls.TLS (a private CA, a client
    certificate), False (plaintext), or None (the environment's, see clients.tls). Usable as a context
    manager (closes the channel). Safe to share between threads."""

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
        channel: grpc.Channel | None = None,
        options: Iterable[tuple[str, Any]] = (),
    ) -> None:
        self.address = address
        self.principal = principal
        self.timeout_s = timeout_s
        self.retry_policy = RetryPolicy.of(retries, outage_budget_s=outage_budget_s)
        self._contact = FirstContact(first_contact_s)
        self._local = threading.local()
        self._token = token_of(token)
        self.tls = tls_of(tls)
        self._channel = channel or open_channel(channel_target(address), self.tls, (*CHANNEL_OPTIONS, *options))
        self._stubs = {name: stub(self._channel) for name, stub in STUBS.items()}
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()
        self._channel.close()

    def __enter__(self) -> LedgerClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def first_contact_s(self) -> float:
        """How long a call retries while no ledger has ever answered this client (then it raises
        Unavailable naming the address); the outage budget applies once one has."""
        return self._contact.bound_s

    @property
    def outage_budget_s(self) -> float:
        """How long a call rides out an unreachable ledger before it raises Unavailable."""
        return self.retry_policy.total_s

    @contextmanager
    def retrying(
        self, retries: RetryPolicy | int | None = None, *, outage_budget_s: float | None = None
    ) -> Iterator[LedgerClient]:
        """Within the block, this thread's calls retry by another policy (or budget), e.g. a
        first try that must not wait out a whole outage; other threads are not affected."""
        previous = getattr(self._local, "policy", None)
        base = self.retry_policy if retries is None else retries
        self._local.policy = RetryPolicy.of(base, outage_budget_s=outage_budget_s)
        try:
            yield self
        finally:
            self._local.policy = previous

    def _unary(
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
        policy: RetryPolicy = getattr(self._local, "policy", None) or self.retry_policy
        answered = self._contact.answered
        tries = Tries(self._contact.policy(policy), idempotent=idempotent)
        while True:
            try:
                reply = rpc(request, timeout=timeout_s or self.timeout_s, metadata=metadata)
                self._contact.saw(None)
                return self._observe(decode(reply))
            except grpc.RpcError as rpc_error:
                error, delay_s = tries.failed(rpc_error)
            self._contact.saw(error)
            if delay_s is None or self._closed.is_set() or self._closed.wait(delay_s):
                if not (answered or self._contact.answered):
                    error = unreached(error, self.address, time.monotonic() - tries.began)
                raise explained(error, secure=self.tls is not None)

    def _server_stream(
        self, service: str, method: str, request: Any, *, decode: Decode[Any], timeout_s: float | None
    ) -> Iterator[Any]:
        call = getattr(self._stubs[service], method)(request, timeout=timeout_s, metadata=self.metadata())
        try:
            for response in call:
                yield decode(response)
        except grpc.RpcError as error:
            raise explained(error_from_rpc(error), secure=self.tls is not None) from None
        finally:
            call.cancel()

    def record_steps(self, batches: Iterable[Any], *, timeout_s: float | None = None) -> AckStream:
        """Stream batches (see clients.transport.record_request) and get one StepAck per batch, in
        order. The stream is not retried: on an error, resend the unacked batches (an identical
        batch is a duplicate, never recorded twice). No deadline unless `timeout_s` is given."""
        requests = (record_request(batch, number) for number, batch in enumerate(batches, start=1))
        return AckStream(
            self._stubs["Runs"].RecordSteps(requests, timeout=timeout_s, metadata=self.metadata()),
            self._observe,
            secure=self.tls is not None,
        )

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        """Block until the channel is connected; raises grpc.FutureTimeoutError."""
        grpc.channel_ready_future(self._channel).result(timeout=timeout_s)
