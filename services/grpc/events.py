"""The Events service: the log from a position, streamed in pages, for audit and remote projections;
the head of its hash chain (GetHead) and a verification of the whole chain (Verify).

A verification reads the whole log, a page at a time. It runs in a thread of its own, never in the
edge's shared pool, so the other calls keep their threads and their latency; one runs at a time
(another waits up to VERIFY_WAIT_S, then is refused: RESOURCE_EXHAUSTED, VERIFY_BUSY), and a
caller that cancels stops it at its next page. VerifyStream tells its progress as it goes (the
latest progress only: a slow reader is sent fewer messages, never a backlog), then its outcome."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

import grpc

from ledger.application.integrity import Progress, Stopped
from ledger.domain.errors import Exhausted, Invalid
from ledger.domain.reasons import Reason
from ledger.domain.topics import check_event_types
from ledger.views import models
from services.grpc.codec import messages
from services.runtime.edge import Edge
from trainledger.v1 import events_pb2, events_pb2_grpc

log = logging.getLogger("trainledger.services")

__all__ = ["EventsServicer", "EVENTS_PAGE", "EVENTS_PAGE_BYTES", "VERIFY_WAIT_S"]

EVENTS_PAGE = 1_000
# A page also ends at this many stored bytes (one larger event goes out alone): the server holds
# a page of the log while it streams it, never more, however large the events.
EVENTS_PAGE_BYTES = 1024 * 1024
#: How long a verification waits for the one running to end before it is refused (VERIFY_BUSY).
VERIFY_WAIT_S = 2.0
VERIFY_POLL_S = 0.05
# After each page a verification leaves the interpreter to the server's other calls for half the
# time the page took: it runs a third slower, and the other clients keep their latency.
VERIFY_YIELD_SHARE = 0.5


class EventsServicer(events_pb2_grpc.EventsServicer):
    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.ledger = edge.ledger
        # The verification's own thread: it never takes one of the edge's shared workers.
        self._verifier = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainledger-verify")
        self._verifying = asyncio.Lock()

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
        """The chain recomputed from position 1: OK with the head, or the first position where the
        log breaks. A broken log is an answer (ok false), not an error."""
        return messages.verification(await self._verified(request, None))

    async def VerifyStream(
        self, request: events_pb2.VerifyRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[events_pb2.VerifyProgress]:
        """Verify, with a message of progress as it goes, then one with the outcome."""
        loop = asyncio.get_running_loop()
        latest: list[tuple[str, int]] = []
        changed = asyncio.Event()

        def note(stage: str, checked: int) -> None:
            latest[:] = [(stage, checked)]
            changed.set()

        def progress(stage: str, checked: int) -> None:  # In the verification's thread.
            with contextlib.suppress(RuntimeError):  # The loop closed: nobody listens.
                loop.call_soon_threadsafe(note, stage, checked)

        verified = asyncio.ensure_future(self._verified(request, progress))
        try:
            while not verified.done():
                waiter = asyncio.ensure_future(changed.wait())
                await asyncio.wait((verified, waiter), return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                if changed.is_set() and latest:
                    changed.clear()
                    stage, checked = latest[0]
                    yield events_pb2.VerifyProgress(stage=stage, checked=checked)
            yield events_pb2.VerifyProgress(outcome=messages.verification(verified.result()))
        finally:
            if not verified.done():
                verified.cancel()
                with contextlib.suppress(BaseException):
                    await verified

    async def _verified(self, request: events_pb2.VerifyRequest, progress: Progress | None) -> models.Verification:
        """Run one verification in the verifier's thread once the one before it has ended (within
        VERIFY_WAIT_S, else Exhausted: VERIFY_BUSY); a cancelled caller stops it at its next page,
        and the next one starts only once it has stopped."""
        expect = None
        if request.HasField("expect_head"):  # Checked by the ledger (Invalid: OUT_OF_RANGE, INVALID_FIELD).
            expect = models.ChainHead(position=request.expect_head.position, digest=request.expect_head.digest)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + VERIFY_WAIT_S
        while self._verifying.locked():
            if loop.time() >= deadline:
                raise Exhausted(
                    "a verification of this ledger is running already: one runs at a time; try later",
                    reason=Reason.VERIFY_BUSY,
                )
            await asyncio.sleep(VERIFY_POLL_S)
        async with self._verifying:  # Free: taken at once, with no await between the look and the take.
            stop = threading.Event()
            work = functools.partial(
                self.ledger.verify,
                expect,
                views=not request.skip_views,
                stop=stop,
                progress=progress,
                yield_share=VERIFY_YIELD_SHARE,
            )
            running = loop.run_in_executor(self._verifier, contextvars.copy_context().run, work)
            try:
                return await asyncio.shield(running)
            except asyncio.CancelledError:
                stop.set()
                try:
                    await running  # Ends at its next page.
                except Stopped as stopped:
                    log.info("a verification was cancelled by its caller: %s", stopped)
                except BaseException:
                    pass
                raise
