"""The RPC methods, written once for both clients.

Each method builds its request from keyword-only Python values and hands it to the transport:
`LedgerClient` answers with the decoded value, `AsyncLedgerClient` with an awaitable of it (and
async iterators for the streams). Client-made ids (attempt_id, reservation_id, charge_id) are made
here when the caller gives none, before the first send, so every retry carries the same id.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from clients import codec

__all__ = ["Transport", "Doc", "new_id", "unwrap", "merged"]

Doc = Mapping[str, Any]


def new_id() -> str:
    """A client-made id: made once per logical call, before the first send."""
    return str(uuid.uuid4())


def unwrap(field: str) -> Any:
    """A decoder answering one field of the response."""
    return lambda response: codec.to_dict(response)[field]


def merged(**extra: Any) -> Any:
    """A decoder answering the response's fields plus `extra` (the ids the client made)."""
    return lambda response: {**codec.to_dict(response), **extra}


class Transport:
    """What a client supplies: one unary call with retries, and one server-streaming call."""

    def _unary(self, service: str, method: str, request: Any, *, decode: Any = codec.to_dict,
               idempotent: bool = True, timeout_s: float | None = None) -> Any:
        raise NotImplementedError

    def _server_stream(self, service: str, method: str, request: Any, *, decode: Any,
                       timeout_s: float | None) -> Any:
        raise NotImplementedError
