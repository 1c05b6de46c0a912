"""The RPC methods, written once for both clients.

Each method builds its request from keyword-only Python values and hands it to the transport:
`LedgerClient` answers with the decoded value, `AsyncLedgerClient` with an awaitable of it (and
async iterators for the streams). Client-made ids (attempt_id, reservation_id, charge_id) are made
here when the caller gives none, before the first send, so every retry carries the same id.
"""

from __future__ import annotations

import threading
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
    """What a client supplies: one unary call with retries, and one server-streaming call.

    Read-your-writes: a client remembers the highest log position it has been answered with
    (`seen_position`) and sends it as the `min_position` of every read that names none, so a
    read never misses what this client wrote, whichever server answers it. Pass
    `min_position=...` to ask for another position (a position from another client)."""

    seen_position = 0
    _positions = threading.Lock()

    def _session(self, request: Any) -> Any:
        if "min_position" in request.DESCRIPTOR.fields_by_name and not request.min_position:
            request.min_position = self.seen_position
        return request

    def _observe(self, answer: Any) -> Any:
        position = answer.get("position") if isinstance(answer, dict) else None
        if isinstance(position, int) and position > self.seen_position:
            with self._positions:
                self.seen_position = max(self.seen_position, position)
        return answer

    def _unary(self, service: str, method: str, request: Any, *, decode: Any = codec.to_dict,
               idempotent: bool = True, timeout_s: float | None = None) -> Any:
        raise NotImplementedError

    def _server_stream(self, service: str, method: str, request: Any, *, decode: Any,
                       timeout_s: float | None) -> Any:
        raise NotImplementedError
