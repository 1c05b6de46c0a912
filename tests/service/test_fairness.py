"""No client can starve the others: a connection gets a bounded number of streams and a bounded
share of the worker threads, and the bytes of the requests the server holds are bounded, a
request past the budget waiting briefly and then refused as SERVER_BUSY."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator

import grpc
import pytest

from ledger.domain.errors import Unavailable
from ledger.domain.reasons import Reason
from services.runtime.edge import STREAMS_PER_CLIENT_MAX, WORKER_THREADS_PER_CLIENT, ByteBudget, Edge
from tests.service.support import Served, Stubs, batch, error_info, open_run
from trainledger.v1 import runs_pb2, spend_pb2

# Each channel on a connection of its own: grpc shares connections between a process's channels.
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]


def connection(served: Served) -> Stubs:
    return Stubs(grpc.insecure_channel(served.address, options=OWN_CONNECTION))


def edge_of(served: Served) -> Edge:
    return served.server.edge  # type: ignore[no-any-return]


def until(condition: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def on_loop(served: Served, read: Callable[[], int]) -> int:
    async def value() -> int:
        return read()

    return served.run(value())


class HeldStream:
    """A RecordSteps stream that sends one batch, reads its ack, then holds the stream open."""

    def __init__(self, stubs: Stubs, run_id: str, sequence: int) -> None:
        self.done = threading.Event()
        request = runs_pb2.RecordStepsRequest(sequence=sequence, batch=batch(run_id, range(sequence, sequence + 1)))
        self.responses = stubs.runs.RecordSteps(self._requests(request), timeout=60)

    def _requests(self, first: runs_pb2.RecordStepsRequest) -> Iterator[runs_pb2.RecordStepsRequest]:
        yield first
        self.done.wait(60)

    def ack(self) -> runs_pb2.RecordStepsResponse:
        return next(self.responses)

    def close(self) -> None:
        self.done.set()
        for _ in self.responses:
            pass


def test_a_connection_gets_a_bounded_number_of_streams_and_others_still_get_theirs(served: Served) -> None:
    greedy, other = connection(served), connection(served)
    run_id = open_run(other).state.run.run_id
    held = []
    for sequence in range(STREAMS_PER_CLIENT_MAX):
        held.append(HeldStream(greedy, run_id, sequence))
        assert held[-1].ack().sequence == sequence
    refused = HeldStream(greedy, run_id, 1_000)
    with pytest.raises(grpc.RpcError) as caught:
        refused.ack()
    assert (caught.value.code(), error_info(caught.value).reason) == (grpc.StatusCode.UNAVAILABLE, "TOO_MANY_STREAMS")
    refused.done.set()
    # Another connection still opens streams, and unary calls of the greedy one still go through.
    mine = HeldStream(other, run_id, 2_000)
    assert mine.ack().sequence == 2_000
    assert greedy.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=30).state.run.run_id == run_id
    for stream in (*held, mine):
        stream.close()
    until(lambda: on_loop(served, lambda: edge_of(served).streams_open) == 0, "the streams to end")
    again = HeldStream(greedy, run_id, 3_000)
    assert again.ack().sequence == 3_000
    again.close()
    assert on_loop(served, lambda: edge_of(served).budget.used_bytes) == 0
    for stubs in (greedy, other):
        stubs.channel.close()


def test_a_client_whose_calls_all_wait_holds_only_its_share_of_the_threads(served: Served) -> None:
    greedy, other = connection(served), connection(served)
    run_id = open_run(other).state.run.run_id
    workers = edge_of(served).workers
    lock = served.ledger.writer.lock  # Every write takes it: holding it makes the greedy client's calls wait.
    with lock:
        pending = [
            greedy.spend.Reserve.future(
                spend_pb2.ReserveRequest(account=run_id, reservation_id=f"hold-{n}", amount_usd_micro=1), timeout=60
            )
            for n in range(40)
        ]
        until(lambda: workers.busy >= WORKER_THREADS_PER_CLIENT, "the greedy calls to take threads")
        time.sleep(0.2)  # Room for more of them to take threads, were they allowed to.
        assert workers.busy <= WORKER_THREADS_PER_CLIENT + 1  # (+1: the reservation sweep)
        state = other.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=10).state
        assert state.run.run_id == run_id and not any(call.done() for call in pending)
    assert all(not call.result(timeout=60).duplicate for call in pending)
    for stubs in (greedy, other):
        stubs.channel.close()


def test_requests_past_the_byte_budget_wait_briefly_then_are_refused_as_busy(served: Served, stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    budget = edge_of(served).budget
    request = runs_pb2.GetRunStateRequest(run_id=run_id)
    held = served.run(budget.acquire(budget.capacity_bytes, 1.0))  # As if other requests filled it.
    try:
        with pytest.raises(grpc.RpcError) as caught:
            stubs.runs.GetRunState(request, timeout=30)
        assert (caught.value.code(), error_info(caught.value).reason) == (grpc.StatusCode.UNAVAILABLE, "SERVER_BUSY")
        waiting = stubs.runs.GetRunState.future(request, timeout=30)
        until(lambda: on_loop(served, lambda: budget.waiting) == 1, "the call to wait for room")
    finally:
        served.loop.call_soon_threadsafe(budget.release, held)
    assert waiting.result(timeout=30).state.run.run_id == run_id
    assert on_loop(served, lambda: budget.used_bytes) == 0


def test_the_byte_budget_grants_in_order_and_gives_back_what_a_refused_wait_took() -> None:
    async def scenario() -> None:
        budget = ByteBudget(10)
        first = await budget.acquire(6, 1.0)
        second = asyncio.create_task(budget.acquire(6, 5.0))
        third = asyncio.create_task(budget.acquire(1, 5.0))  # Fits, but waits behind the second.
        await asyncio.sleep(0)
        assert budget.waiting == 2 and not second.done() and not third.done()
        with pytest.raises(Unavailable) as refused:
            await budget.acquire(4, 0.01)
        assert refused.value.reason == Reason.SERVER_BUSY and budget.waiting == 2
        budget.release(first)
        assert (await second, await third) == (6, 1) and budget.used_bytes == 7
        cancelled = asyncio.create_task(budget.acquire(5, 5.0))
        await asyncio.sleep(0)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert budget.waiting == 0
        budget.release(6)
        budget.release(1)
        assert budget.used_bytes == 0 and await budget.acquire(50, 0.01) == 10  # At most the whole budget.

    asyncio.run(scenario())
