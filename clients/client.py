"""The synchronous client: `LedgerClient`.

Every call carries a deadline, an x-request-id made once per logical call (and reused by its
retries) and the caller's x-principal; a retry resends the very same request object.

Several replicas of one ledger (servers over one PostgreSQL database) are given as a list of
addresses: the channel connects to the first that answers and fails over to the next when it
goes away (gRPC's pick_first over an `ipv4:`/`ipv6:` target; host names are resolved once, here).
A call that failed with the replica answers UNAVAILABLE and is retried on the next; a retry is
answered as a duplicate if the first try did land, so nothing is recorded twice.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import grpc

from clients import codec
from clients.errors import error_from_rpc
from clients.methods_spend import LedgerMethods
from clients.retry import RetryPolicy
from trainledger.v1 import events_pb2_grpc, registry_pb2_grpc, runs_pb2, runs_pb2_grpc, spend_pb2_grpc

__all__ = ["LedgerClient", "AckStream", "CHANNEL_OPTIONS", "record_request", "channel_target"]

# Reconnect quickly after a ledger restart (gRPC's default backoff grows to two minutes) and
# allow full pages of series and event reads.
CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
)

_STUBS = {"Runs": runs_pb2_grpc.RunsStub, "Spend": spend_pb2_grpc.SpendStub,
          "Registry": registry_pb2_grpc.RegistryStub, "Events": events_pb2_grpc.EventsStub}


def channel_target(address: str | Sequence[str]) -> str:
    """The gRPC target of one address ("host:port", or any gRPC target) or of several replicas
    (["host:port", ...] -> "ipv4:ip:port,ip:port", or ipv6: when any of them is IPv6)."""
    if isinstance(address, str):
        return address
    addresses = list(address)
    if not addresses:
        raise ValueError("no address given")
    if len(addresses) == 1:
        return addresses[0]
    resolved: list[tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]] = []
    for one in addresses:
        host, separator, port = one.rpartition(":")
        if not separator or not port.isdigit():
            raise ValueError(f"an address of several must be host:port: {one!r}")
        host = host.strip("[]")
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            ip = ipaddress.ip_address(socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0][4][0])
        resolved.append((ip, int(port)))
    if all(ip.version == 4 for ip, _ in resolved):
        return "ipv4:" + ",".join(f"{ip}:{port}" for ip, port in resolved)
    return "ipv6:" + ",".join(f"[{ip if ip.version == 6 else '::ffff:' + str(ip)}]:{port}" for ip, port in resolved)


def record_request(batch: Any, sequence: int) -> runs_pb2.RecordStepsRequest:
    """A RecordStepsRequest from a StepBatch, a RecordStepsRequest, or a dict of append_steps
    keywords (run_id, attempt, steps, tokens, usd_micro, metrics; optional sequence)."""
    if isinstance(batch, runs_pb2.RecordStepsRequest):
        return batch
    if isinstance(batch, Mapping):
        batch = dict(batch)
        sequence = batch.pop("sequence", sequence)
        batch = codec.step_batch(**batch)
    return runs_pb2.RecordStepsRequest(sequence=sequence, batch=batch)


class AckStream:
    """The acks of a RecordSteps stream, one dict per batch in order; `cancel()` ends it."""

    def __init__(self, call: Any, observe: Any = None) -> None:
        self._call = call
        self._observe = observe or (lambda ack: ack)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        try:
            return self._observe(codec.to_dict(next(self._call)))
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None

    def cancel(self) -> None:
        self._call.cancel()


class LedgerClient(LedgerMethods):
    """A blocking client of one ledger server, or of several replicas given as a list of
    "host:port" (failover in order). `timeout_s` is the deadline of each try; `outage_budget_s`
    how long a call rides out an unreachable ledger (UNAVAILABLE is resent until then, default
    30 s; then it raises Unavailable); `retries` a RetryPolicy, or a number of retries (0: none
    at all). Usable as a context manager (closes the channel). Safe to share between threads."""

    def __init__(self, address: str | Sequence[str] = "127.0.0.1:50051", *, principal: str = "",
                 timeout_s: float = 10.0, retries: RetryPolicy | int | None = None,
                 outage_budget_s: float | None = None, channel: grpc.Channel | None = None,
                 options: Iterable[tuple[str, Any]] = ()) -> None:
        self.address = address
        self.principal = principal
        self.timeout_s = timeout_s
        self.retry_policy = RetryPolicy.of(retries, outage_budget_s=outage_budget_s)
        self._local = threading.local()
        self._channel = channel or grpc.insecure_channel(channel_target(address),
                                                         options=(*CHANNEL_OPTIONS, *options))
        self._stubs = {name: stub(self._channel) for name, stub in _STUBS.items()}
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()
        self._channel.close()

    def __enter__(self) -> LedgerClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def metadata(self, request_id: str | None = None) -> tuple[tuple[str, str], ...]:
        """The call metadata: a new request id unless one is given, and the principal."""
        return (("x-request-id", request_id or str(uuid.uuid4())), ("x-principal", self.principal))

    @property
    def outage_budget_s(self) -> float:
        """How long a call rides out an unreachable ledger before it raises Unavailable."""
        return self.retry_policy.total_s

    @contextmanager
    def retrying(self, retries: RetryPolicy | int | None = None, *,
                 outage_budget_s: float | None = None) -> Iterator[LedgerClient]:
        """Within the block, this thread's calls retry by another policy (or budget), e.g. a
        first try that must not wait out a whole outage; other threads are not affected."""
        previous = getattr(self._local, "policy", None)
        base = self.retry_policy if retries is None else retries
        self._local.policy = RetryPolicy.of(base, outage_budget_s=outage_budget_s)
        try:
            yield self
        finally:
            self._local.policy = previous

    def _unary(self, service: str, method: str, request: Any, *, decode: Any = codec.to_dict,
               idempotent: bool = True, timeout_s: float | None = None) -> Any:
        rpc = getattr(self._stubs[service], method)
        metadata = self.metadata()
        request = self._session(request)
        policy: RetryPolicy = getattr(self._local, "policy", None) or self.retry_policy
        tried, began = 0, time.monotonic()
        while True:
            tried += 1
            try:
                return self._observe(decode(rpc(request, timeout=timeout_s or self.timeout_s, metadata=metadata)))
            except grpc.RpcError as rpc_error:
                error = error_from_rpc(rpc_error)
            elapsed_s = time.monotonic() - began
            if self._closed.is_set() or not policy.should_retry(error, idempotent=idempotent, tried=tried,
                                                                 elapsed_s=elapsed_s):
                raise error
            if self._closed.wait(policy.delay_s(tried, elapsed_s)):
                raise error

    def _server_stream(self, service: str, method: str, request: Any, *, decode: Any,
                       timeout_s: float | None) -> Iterator[Any]:
        call = getattr(self._stubs[service], method)(request, timeout=timeout_s, metadata=self.metadata())
        try:
            for response in call:
                yield decode(response)
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None
        finally:
            call.cancel()

    def record_steps(self, batches: Iterable[Any], *, timeout_s: float | None = None) -> AckStream:
        """Stream batches (see record_request) and get one ack dict per batch, in order. The stream
        is not retried: on an error, resend the unacked batches (an identical batch is a
        duplicate, never recorded twice). No deadline unless `timeout_s` is given."""
        requests = (record_request(batch, number) for number, batch in enumerate(batches, start=1))
        return AckStream(self._stubs["Runs"].RecordSteps(requests, timeout=timeout_s, metadata=self.metadata()),
                         self._observe)

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        """Block until the channel is connected; raises grpc.FutureTimeoutError."""
        grpc.channel_ready_future(self._channel).result(timeout=timeout_s)

