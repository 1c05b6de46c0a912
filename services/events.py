"""The Events service: the log from a position, streamed in pages, for audit and remote projections;
the head of its hash chain (GetHead) and a verification of the whole chain (Verify).

A verification reads the whole log: it runs in one worker thread of the edge, within the calling
client's share (services.edge), so it never blocks the event loop and one auditor cannot take
more than its share of the threads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from ledger.domain.errors import Invalid
from ledger.domain.reasons import Reason
from ledger.domain.topics import check_event_types
from ledger.views import models
from services.codec import messages
from services.edge import Edge
from trainledger.v1 import events_pb2, events_pb2_grpc

__all__ = ["EventsServicer", "EVENTS_PAGE", "EVENTS_PAGE_BYTES"]

EVENTS_PAGE = 1_000
# A page also ends at this many stored bytes (one larger event goes out alone): the server holds
# a page of the log while it streams it, never more, however large the events.
EVENTS_PAGE_BYTES = 1024 * 1024


class EventsServicer(events_pb2_grpc.EventsServicer):
    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.ledger = edge.ledger

    def _page(self, position: int, limit: int, types: list[str]) -> list[events_pb2.Event]:
        # Read and encoded in the worker thread: a page may hold a thousand step batches.
        return [
            messages.event(e)
            for e in self.ledger.read_events(
                from_position=position, limit=limit, types=types, bytes_max=EVENTS_PAGE_BYTES
            )
        ]

    async def ReadEvents(
        self, request: events_pb2.ReadEventsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[events_pb2.Event]:
        """Events from from_position up to the head of the log as it was when the call began."""
        if request.limit < 0 or request.from_position < 0:
            raise Invalid("from_position and limit must not be negative", reason=Reason.OUT_OF_RANGE)
        head = await self.edge.call(self.ledger.head)
        position, left = max(1, request.from_position), request.limit or None
        types = list(request.types)
        check_event_types(types)
        while position <= head and (left is None or left > 0):
            page = await self.edge.call(self._page, position, min(EVENTS_PAGE, left or EVENTS_PAGE), types)
            if not page:
                return
            for event in page:
                if event.position > head:
                    return
                yield event
            position = page[-1].position + 1
            if left is not None:
                left -= len(page)

    async def GetHead(
        self, request: events_pb2.GetHeadRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> events_pb2.GetHeadResponse:
        """The newest sealed position of the log and the chain's digest there."""
        head = await self.edge.call(self.ledger.chain_head)
        return events_pb2.GetHeadResponse(position=head.position, digest=head.digest)

    async def Verify(
        self, request: events_pb2.VerifyRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> events_pb2.VerifyResponse:
        """The chain recomputed from position 1, in a worker thread: OK with the head, or the first
        position where the log breaks. A broken log is an answer (ok false), not an error."""
        expect = None
        if request.HasField("expect_head"):  # Checked by the ledger (Invalid: OUT_OF_RANGE, INVALID_FIELD).
            expect = models.ChainHead(position=request.expect_head.position, digest=request.expect_head.digest)
        outcome = await self.edge.call(self.ledger.verify, expect, views=not request.skip_views)
        return messages.verification(outcome)
