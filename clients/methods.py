"""The RPC methods, written once for both clients.

Each method builds its request from keyword-only Python values and hands it to the transport with
the typed result (clients.models) to decode the answer into: `LedgerClient` answers with that
result, `AsyncLedgerClient` with an awaitable of it (and async iterators for the streams).
Client-made ids (attempt_id, reservation_id, charge_id) are made here when the caller gives none,
before the first send, so every retry carries the same id. A read that answers in pages and whose
method returns the whole list (get_metrics, plan_prune) reads page after page with `_all_pages`,
each page a call of its own within the deadline.
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

from google.protobuf.message import Message

from clients import codec

__all__ = ["Transport", "Doc", "Decode", "new_id", "reply", "field_of", "next_page"]

Doc = Mapping[str, Any]
T = TypeVar("T")
P = TypeVar("P")
Decode = Callable[[Any], T]


def new_id() -> str:
    """A client-made id: made once per logical call, before the first send."""
    return str(uuid.uuid4())


def reply(model: type[T], **extra: Any) -> Decode[T]:
    """A decoder answering the response as `model`, with `extra` fields (the ids the client made)."""
    return lambda response: codec.decode(response, model, **extra)


def field_of(name: str, model: type[T]) -> Decode[T | None]:
    """A decoder answering one message field of the response as `model`; None when it is unset."""

    def decode(response: Message) -> T | None:
        return codec.decode(getattr(response, name), model) if response.HasField(name) else None

    return decode


def next_page(request: Message, token: str) -> Any:
    """A copy of a paged read's request asking for the page after `token` (the one sent stays as
    it was, for a retry of it)."""
    following: Any = copy.deepcopy(request)
    following.page_token = token
    return following


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

    def _observe(self, answer: T) -> T:
        position = getattr(answer, "position", None)
        if isinstance(position, int) and position > self.seen_position:
            with self._positions:
                self.seen_position = max(self.seen_position, position)
        return answer

    def _ask(
        self,
        service: str,
        method: str,
        request: Any,
        decode: Decode[T],
        *,
        idempotent: bool = True,
        timeout_s: float | None = None,
    ) -> T:
        """A unary call answering `decode(response)` (an awaitable of it on the asyncio client)."""
        return cast(T, self._unary(service, method, request, decode=decode, idempotent=idempotent, timeout_s=timeout_s))

    def _all_pages(
        self,
        service: str,
        method: str,
        request: Any,
        decode: Decode[P],
        items: Callable[[P], Sequence[T]],
        *,
        timeout_s: float | None = None,
    ) -> list[T]:
        """The `items` of every page of a paged read, in order, from `request` on, each next page
        asked for with the last one's next_page_token (an awaitable of the list on asyncio)."""
        return cast(
            list[T], self._unary_pages(service, method, request, decode=decode, items=items, timeout_s=timeout_s)
        )

    def _unary_pages(
        self,
        service: str,
        method: str,
        request: Any,
        *,
        decode: Decode[Any],
        items: Callable[[Any], Sequence[Any]],
        timeout_s: float | None,
    ) -> Any:
        found: list[Any] = []
        while True:
            page = self._unary(service, method, request, decode=decode, timeout_s=timeout_s)
            found += items(page)
            if not page.next_page_token:
                return found
            request = next_page(request, page.next_page_token)

    def _stream(
        self, service: str, method: str, request: Any, decode: Decode[T], timeout_s: float | None
    ) -> Iterator[T]:
        """A server-streaming call: an iterator of `decode(response)` (an async one on asyncio)."""
        return cast(Iterator[T], self._server_stream(service, method, request, decode=decode, timeout_s=timeout_s))

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
        raise NotImplementedError

    def _server_stream(
        self, service: str, method: str, request: Any, *, decode: Decode[Any], timeout_s: float | None
    ) -> Any:
        raise NotImplementedError
