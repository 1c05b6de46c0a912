"""The Events RPCs as client methods (see clients.methods): the log read from a position, the
head of its hash chain, and its verification. Each takes `timeout_s`, the per-try deadline (the
client's default when None), and answers with a typed result of clients.models."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from clients.methods import Transport, reply
from clients.models import ChainHead, Event, Verification, VerifyProgress
from trainledger.v1 import events_pb2

__all__ = ["EventsMethods"]


class EventsMethods(Transport):
    """The Events RPCs: the log, its head, and its verification."""

    def read_events(
        self, *, from_position: int = 1, limit: int = 0, types: Sequence[str] = (), timeout_s: float | None = None
    ) -> Iterator[Event]:
        """The log from a position, as Events ("data_json" decoded); under the default deadline."""
        request = events_pb2.ReadEventsRequest(from_position=from_position, limit=limit, types=types)
        return self._stream(
            "Events",
            "ReadEvents",
            request,
            reply(Event),
            timeout_s=timeout_s if timeout_s is not None else getattr(self, "timeout_s", None),
        )

    def get_head(self, *, timeout_s: float | None = None) -> ChainHead:
        """The head of the log's hash chain (position, digest): write it down to prove later, with
        `verify(expect_head=...)`, that nothing up to it changed."""
        return self._ask("Events", "GetHead", events_pb2.GetHeadRequest(), reply(ChainHead), timeout_s=timeout_s)

    def verify(
        self,
        *,
        expect_head: ChainHead | None = None,
        skip_views: bool = False,
        timeout_s: float | None = None,
    ) -> Verification:
        """Have the server recompute the chain from position 1 (and check the stored snapshots and,
        unless `skip_views`, the views against a rebuild); with `expect_head`, the chain must pass
        through that head. A broken log is an answer (ok False, broken_at, problem), not an error.
        It reads the whole log: give a `timeout_s` that fits its size."""
        request = _verify_request(expect_head, skip_views)
        return self._ask("Events", "Verify", request, reply(Verification), timeout_s=timeout_s)

    def verify_progress(
        self,
        *,
        expect_head: ChainHead | None = None,
        skip_views: bool = False,
        timeout_s: float | None = None,
    ) -> Iterator[VerifyProgress]:
        """`verify`, with its progress: VerifyProgress messages as it goes (stage, checked), the
        last one with the outcome. Closing the iterator early cancels the call, which stops the
        verification on the server. One runs at a time per ledger: another is refused with
        VERIFY_BUSY (a ResourceExhausted error)."""
        request = _verify_request(expect_head, skip_views)
        return self._stream("Events", "VerifyStream", request, reply(VerifyProgress), timeout_s=timeout_s)


def _verify_request(expect_head: ChainHead | None, skip_views: bool) -> events_pb2.VerifyRequest:
    head = (
        None if expect_head is None else events_pb2.ChainHead(position=expect_head.position, digest=expect_head.digest)
    )
    return events_pb2.VerifyRequest(expect_head=head, skip_views=skip_views)
