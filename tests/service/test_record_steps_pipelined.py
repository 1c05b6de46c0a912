"""RecordSteps reads ahead: the batches a client has already sent are read while those before them
are recorded, and go to the ledger together (one group commit), with the semantics of one batch
at a time: acks in order, each its own; a refused batch ends the stream with its error and its
sequence, after the acks of those before it, and no batch after it is recorded."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any
from uuid import UUID

import grpc
import pytest

from services.grpc.read_ahead import READ_AHEAD_BATCHES, ReadAhead
from tests.service.support import Served, Stubs, batch, error_info, open_run
from tests.service.test_fairness import connection, edge_of, on_loop, until
from trainledger.v1 import runs_pb2


def recorded_steps(served: Served, run_id: str) -> list[int]:
    """The first step of every batch the run's log holds, in log order."""
    ledger: Any = served.ledger
    return [
        ledger.mapper.to_domain_event(stored).steps[0]
        for stored in ledger.recorder.select_events(UUID(run_id))
        if stored.topic.endswith("StepsRecorded")
    ]


def request(sequence: int, run_id: str, first: int, **fields: Any) -> runs_pb2.RecordStepsRequest:
    return runs_pb2.RecordStepsRequest(sequence=sequence, batch=batch(run_id, range(first, first + 10), **fields))


class Stream:
    """A RecordSteps call in a thread of its own: the acks it got and the error that ended it."""

    def __init__(self, stubs: Stubs, requests: Iterable[runs_pb2.RecordStepsRequest]) -> None:
        self.acks: list[runs_pb2.RecordStepsResponse] = []
        self.error: grpc.RpcError | None = None
        self._thread = threading.Thread(target=self._call, args=(stubs, list(requests)))
        self._thread.start()

    def _call(self, stubs: Stubs, requests: list[runs_pb2.RecordStepsRequest]) -> None:
        try:
            for ack in stubs.runs.RecordSteps(iter(requests), timeout=60):
                self.acks.append(ack)
        except grpc.RpcError as error:
            self.error = error

    def join(self) -> Stream:
        self._thread.join(60)
        assert not self._thread.is_alive()
        return self

    @property
    def sequences(self) -> list[int]:
        return [ack.sequence for ack in self.acks]


def test_batches_read_during_a_commit_go_together_and_a_refused_one_stops_those_after_it(
    served: Served, stubs: Stubs
) -> None:
    run_id = open_run(stubs).state.run.run_id
    stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(10))), timeout=10)
    requests = [request(n, run_id, 10 * n) for n in range(1, 25)]
    requests[4] = request(5, run_id, 0, loss=9.0)  # Steps 0..9 again with another payload: refused.
    budget = edge_of(served).budget
    assert on_loop(served, lambda: budget.used_bytes) == 0
    with served.ledger.writer.lock:  # Every write takes it: the first batch's commit waits, the stream is read.
        stream = Stream(stubs, requests)
        # The first batch, being recorded, and the READ_AHEAD_BATCHES read behind it hold their bytes.
        held = sum(r.ByteSize() for r in requests[: 1 + READ_AHEAD_BATCHES])
        until(lambda: on_loop(served, lambda: budget.used_bytes) == held, "the stream to be read ahead")
    stream.join()
    assert stream.sequences == [1, 2, 3, 4]
    assert stream.error is not None and stream.error.code() == grpc.StatusCode.ALREADY_EXISTS
    info = error_info(stream.error)
    assert (info.reason, info.metadata["sequence"]) == ("EXISTS_WITH_DIFFERENT_PAYLOAD", "5")
    # Batches 2 to 17 went to the ledger together: 6 to 17 were decided after the refused 5, and
    # none of them, nor any batch after them, was recorded.
    assert recorded_steps(served, run_id) == [0, 10, 20, 30, 40]
    positions = [ack.position for ack in stream.acks]
    assert positions == sorted(positions) and [ack.last_step for ack in stream.acks] == [19, 29, 39, 49]
    until(lambda: on_loop(served, lambda: budget.used_bytes) == 0, "the stream's bytes to be released")
    # The client sends the rest again, the refused batch fixed: the last acked is a duplicate, the
    # others are recorded now.
    again = Stream(stubs, [requests[3], request(5, run_id, 50), *requests[5:]]).join()
    assert again.error is None and again.sequences == [4, *range(5, 25)]
    assert again.acks[0].duplicate and again.acks[0].position == stream.acks[3].position
    assert not any(ack.duplicate for ack in again.acks[1:]) and again.acks[-1].last_step == 249
    assert recorded_steps(served, run_id) == list(range(0, 250, 10))


def test_a_long_stream_is_acked_in_order_each_batch_with_its_own_answer(stubs: Stubs, served: Served) -> None:
    run_id = open_run(stubs).state.run.run_id
    requests = [request(n, run_id, 10 * n) for n in range(200)]
    for retried in (3, 50, 120):  # Retries in the stream answer as the first time.
        requests.insert(retried + 5, requests[retried])
    stream = Stream(stubs, requests).join()
    assert stream.error is None and stream.sequences == [r.sequence for r in requests]
    first: dict[int, runs_pb2.RecordStepsResponse] = {}
    for ack in stream.acks:
        if ack.sequence in first:
            assert ack.duplicate and ack.position == first[ack.sequence].position
            assert ack.last_step >= first[ack.sequence].last_step
        else:
            assert not ack.duplicate and ack.last_step == 10 * ack.sequence + 9
            first[ack.sequence] = ack
    positions = [first[n].position for n in range(200)]
    assert positions == sorted(positions) and len(set(positions)) == 200
    assert recorded_steps(served, run_id) == list(range(0, 2_000, 10))


def test_streams_on_several_runs_at_once_keep_each_its_order_and_its_refusal(served: Served) -> None:
    clients = [connection(served) for _ in range(4)]
    runs = [open_run(client).state.run.run_id for client in clients]
    plans = []
    for index, run_id in enumerate(runs):
        requests = [request(n, run_id, 10 * n) for n in range(60)]
        if index % 2:
            requests[25] = request(25, run_id, 0, loss=9.0)  # Refused: those streams stop at 25.
        plans.append(requests)
    streams = [Stream(client, plan) for client, plan in zip(clients, plans, strict=True)]
    for index, (stream, run_id) in enumerate(zip(streams, runs, strict=True)):
        stream.join()
        if index % 2:
            assert stream.sequences == list(range(25)) and stream.error is not None
            assert error_info(stream.error).metadata["sequence"] == "25"
            assert recorded_steps(served, run_id) == list(range(0, 250, 10))
        else:
            assert stream.error is None and stream.sequences == list(range(60))
            assert recorded_steps(served, run_id) == list(range(0, 600, 10))
    for client in clients:
        client.channel.close()


def test_a_batch_of_a_fenced_attempt_ends_the_stream_and_nothing_after_it_is_recorded(
    served: Served, stubs: Stubs
) -> None:
    run_id = open_run(stubs).state.run.run_id
    requests = [request(n, run_id, 10 * n) for n in range(1, 5)]
    stream = Stream(stubs, requests[:2]).join()
    assert stream.sequences == [1, 2]
    stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=10)
    late = Stream(stubs, [*requests[2:], request(5, run_id, 50, attempt=2)]).join()
    assert late.sequences == [] and late.error is not None
    assert (error_info(late.error).reason, error_info(late.error).metadata["sequence"]) == ("ATTEMPT_SUPERSEDED", "3")
    assert recorded_steps(served, run_id) == [10, 20]


@pytest.mark.parametrize("batches,size_batches", [(3, 10), (10, 2)])
def test_read_ahead_holds_at_most_its_batches_and_its_bytes(batches: int, size_batches: int) -> None:
    messages = [request(n, "run", 10 * n) for n in range(20)]
    size = messages[0].ByteSize()
    read: list[int] = []

    async def requests() -> AsyncIterator[runs_pb2.RecordStepsRequest]:
        for message in messages:
            read.append(message.sequence)
            yield message

    async def scenario() -> list[list[int]]:
        ahead = ReadAhead(requests(), batches=batches, size_bytes=size * size_batches)
        taken = []
        try:
            while True:
                for _ in range(50):  # Let the reader read all it may.
                    await asyncio.sleep(0)
                held = min(batches, size_batches)
                assert len(read) - sum(map(len, taken)) <= held
                group = await ahead.take()
                if not group:
                    return taken
                assert len(group) <= held
                taken.append([message.sequence for message in group])
        finally:
            await ahead.close()

    taken = asyncio.run(scenario())
    assert [n for group in taken for n in group] == list(range(20))
    assert max(map(len, taken)) == min(batches, size_batches)


def test_a_stream_cancelled_while_batches_are_read_ahead_gives_back_their_bytes(served: Served, stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    budget = edge_of(served).budget
    sent = threading.Event()
    stop = threading.Event()

    def requests() -> Iterator[runs_pb2.RecordStepsRequest]:
        for n in range(6):
            yield request(n, run_id, 10 * n)
        sent.set()
        stop.wait(30)

    with served.ledger.writer.lock:  # The first batch's commit waits: the others are read ahead meanwhile.
        call = stubs.runs.RecordSteps(requests(), timeout=60)
        assert sent.wait(30)
        until(lambda: on_loop(served, lambda: budget.used_bytes) > 0, "the stream to be read")
        call.cancel()
    stop.set()
    until(lambda: on_loop(served, lambda: edge_of(served).streams_open) == 0, "the stream to end")
    until(lambda: on_loop(served, lambda: budget.used_bytes) == 0, "the stream's bytes to be given back")
    # The server still takes the run's batches, in order, from where the cancelled stream got to.
    again = Stream(stubs, [request(n, run_id, 10 * n) for n in range(6)]).join()
    assert again.error is None and again.sequences == list(range(6))
    assert recorded_steps(served, run_id) == list(range(0, 60, 10))
