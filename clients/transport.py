"""What the synchronous and the asyncio clients share on the wire: the channel target and options,
the stubs, the call metadata and the core of an ack stream (the tries of one logical unary call
are clients.retry.Tries). Each client adds only how it waits (a blocking wait or `await`).

Every call carries a deadline, an x-request-id made once per logical call (and reused by its
retries) and the caller's x-principal; a retry resends the very same request object.
"""

from __future__ import annotations

import ipaddress
import socket
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import grpc

from clients import codec
from clients.errors import LedgerClientError, error_from_rpc
from clients.models import StepAck
from trainledger.v1 import events_pb2_grpc, registry_pb2_grpc, runs_pb2, runs_pb2_grpc, spend_pb2_grpc

__all__ = ["CHANNEL_OPTIONS", "STUBS", "channel_target", "record_request", "call_metadata", "AckCore"]

# Reconnect quickly after a ledger restart (gRPC's default backoff grows to two minutes) and
# allow full pages of series and event reads.
CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
)

# The stub class of each service, by the name the methods use.
STUBS: Mapping[str, Callable[[Any], Any]] = {
    "Runs": runs_pb2_grpc.RunsStub,
    "Spend": spend_pb2_grpc.SpendStub,
    "Registry": registry_pb2_grpc.RegistryStub,
    "Events": events_pb2_grpc.EventsStub,
}


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
    resolved = [_resolved(one) for one in addresses]
    if all(ip.version == 4 for ip, _ in resolved):
        return "ipv4:" + ",".join(f"{ip}:{port}" for ip, port in resolved)
    return "ipv6:" + ",".join(f"[{ip if ip.version == 6 else '::ffff:' + str(ip)}]:{port}" for ip, port in resolved)


def _resolved(address: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    host, separator, port = address.rpartition(":")
    if not separator or not port.isdigit():
        raise ValueError(f"an address of several must be host:port: {address!r}")
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host), int(port)
    except ValueError:
        found = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0][4][0]
        return ipaddress.ip_address(found), int(port)


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


def call_metadata(principal: str, request_id: str | None = None) -> tuple[tuple[str, str], ...]:
    """The call metadata: a new request id unless one is given, and the principal."""
    return (("x-request-id", request_id or str(uuid.uuid4())), ("x-principal", principal))


class AckCore:
    """The core of a RecordSteps ack stream, shared by the sync and asyncio streams: each ack as a
    StepAck seen by the client (read-your-writes), a failed call as a LedgerClientError, `cancel()`."""

    def __init__(self, call: Any, observe: Callable[[StepAck], StepAck] | None = None) -> None:
        self._call = call
        self._observe = observe or (lambda ack: ack)

    def _ack(self, response: runs_pb2.RecordStepsResponse) -> StepAck:
        return self._observe(codec.decode(response, StepAck))

    @staticmethod
    def _error(rpc_error: grpc.RpcError) -> LedgerClientError:
        return error_from_rpc(rpc_error)

    def cancel(self) -> None:
        """End the stream; acks not yet read are dropped."""
        self._call.cancel()
