"""What the synchronous and the asyncio clients share on the wire: the channel target and options,
the stubs, the call metadata and the core of an ack stream (the tries of one logical unary call
are clients.retry.Tries). Each client adds only how it waits (a blocking wait or `await`).

Every call carries a deadline, an x-request-id made once per logical call (and reused by its
retries), and the caller's bearer token (`authorization: Bearer ...`) or, without one, its
x-principal; a retry resends the very same request object. The token is kept out of every repr,
log line and error message.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import grpc

from clients import codec
from clients.errors import LedgerClientError, Unavailable, error_from_rpc
from clients.models import StepAck
from clients.tls import TLS
from trainledger.v1 import events_pb2_grpc, registry_pb2_grpc, runs_pb2, runs_pb2_grpc, spend_pb2_grpc

__all__ = [
    "CHANNEL_OPTIONS",
    "STUBS",
    "ENV_TOKEN",
    "channel_target",
    "open_channel",
    "token_of",
    "explained",
    "unreached",
    "record_request",
    "call_metadata",
    "AckCore",
]

ENV_TOKEN = "TRAINLEDGER_TOKEN"

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


def call_metadata(principal: str, request_id: str | None = None, token: str = "") -> tuple[tuple[str, str], ...]:
    """The call metadata: a new request id unless one is given, then the bearer token when there
    is one (the ledger records the token's principal), else the principal."""
    request = ("x-request-id", request_id or str(uuid.uuid4()))
    if token:
        return (request, ("authorization", f"Bearer {token}"))
    return (request, ("x-principal", principal))


def token_of(token: str | None) -> str:
    """A client's bearer token: the one given, else TRAINLEDGER_TOKEN ("" = none at all)."""
    if token is None:
        token = os.environ.get(ENV_TOKEN, "")
    token = token.strip()
    if any(character.isspace() or not character.isprintable() for character in token):
        raise ValueError("a bearer token is one word of printable characters")
    return token


def open_channel(target: str, tls: TLS | None, options: tuple[tuple[str, Any], ...], *, aio: bool = False) -> Any:
    """A channel to `target`: plaintext, or TLS as `tls` says (sync, or grpc.aio's with aio=True)."""
    if tls is None:
        return (grpc.aio.insecure_channel if aio else grpc.insecure_channel)(target, options=options)
    options = (*options, *tls.options())
    return (grpc.aio.secure_channel if aio else grpc.secure_channel)(target, tls.credentials(), options=options)


def explained(error: LedgerClientError, *, secure: bool) -> LedgerClientError:
    """`error`, its message extended with the likely cause when the connection failed in a way
    that a TLS mismatch causes: a TLS server closes a plaintext connection at once (so does a
    mutual-TLS server a client without an accepted certificate), and a handshake fails against
    a certificate not signed by a trusted CA or a server that does not speak TLS."""
    if not isinstance(error, Unavailable):
        return error
    text = error.message.lower()
    if "handshake" in text or "ssl" in text or "verification" in text:
        hint = (
            "the TLS handshake failed: is the server's certificate signed by a CA the client trusts "
            "(tls=TLS(ca_file=...)), issued for this host name (or TLS(server_name=...)), "
            "and does the server speak TLS?"
        )
    elif "socket closed" not in text:
        return error
    elif secure:
        hint = (
            "the server closed the connection during the TLS handshake: it may require a client certificate "
            "signed by its CA (mutual TLS: tls=TLS(cert_file=..., key_file=...))"
        )
    else:
        hint = (
            "the server closed the connection at once: it may speak TLS, and this client connects in "
            "plaintext (pass tls=True, or tls=TLS(ca_file=...) for a private CA)"
        )
    return type(error)(error.reason, f"{error.message} ({hint})", error.metadata, error.code)


def unreached(error: LedgerClientError, address: str | Sequence[str], waited_s: float) -> LedgerClientError:
    """`error` (Unavailable) of a client that no ledger has answered yet, its message naming the
    address it tried and how long (VIEW_NOT_CAUGHT_UP comes from a ledger that answered: its
    message says so and hints at the projection worker); any other error unchanged."""
    if not isinstance(error, Unavailable):
        return error
    where = address if isinstance(address, str) else ", ".join(address)
    if error.reason == "VIEW_NOT_CAUGHT_UP":  # A ledger answered: its views lag.
        message = (
            f"the ledger at {where} answered, but its views did not catch up in {waited_s:.1f} s: {error.message} "
            "(is a projection worker running? `serve --no-project` needs `trainledger project`)"
        )
        return type(error)(error.reason, message, error.metadata, error.code)
    message = f"no ledger answered at {where} (never answered in {waited_s:.1f} s): {error.message}"
    return type(error)(error.reason, message, error.metadata, error.code)


class CallIdentity:
    """Who a client's calls come from, shared by the sync and asyncio clients: the metadata each
    call carries (its request id, and the bearer token or the principal) and a repr that never
    shows the token."""

    address: str | Sequence[str]
    principal: str
    tls: TLS | None
    _token: str

    def metadata(self, request_id: str | None = None) -> tuple[tuple[str, str], ...]:
        """The call metadata: a new request id unless one is given, and the token or the principal."""
        return call_metadata(self.principal, request_id, self._token)

    @property
    def has_token(self) -> bool:
        """Whether calls carry a bearer token (the token itself is never shown)."""
        return bool(self._token)

    def __repr__(self) -> str:
        token = ", token=<hidden>" if self._token else ""
        return f"{type(self).__name__}({self.address!r}, tls={self.tls is not None}{token})"


class AckCore:
    """The core of a RecordSteps ack stream, shared by the sync and asyncio streams: each ack as a
    StepAck seen by the client (read-your-writes), a failed call as a LedgerClientError, `cancel()`."""

    def __init__(self, call: Any, observe: Callable[[StepAck], StepAck] | None = None, *, secure: bool = False) -> None:
        self._call = call
        self._observe = observe or (lambda ack: ack)
        self._secure = secure

    def _ack(self, response: runs_pb2.RecordStepsResponse) -> StepAck:
        return self._observe(codec.decode(response, StepAck))

    def _error(self, rpc_error: grpc.RpcError) -> LedgerClientError:
        return explained(error_from_rpc(rpc_error), secure=self._secure)

    def cancel(self) -> None:
        """End the stream; acks not yet read are dropped."""
        self._call.cancel()
