"""Open streams end when their token stops being valid, over the wire: a RecordSteps stream whose
token is revoked ends with UNAUTHENTICATED (TOKEN_REVOKED) whether it keeps sending batches or
sits idle, a WatchRun whose token expires ends with TOKEN_EXPIRED, and a ReadEvents stream whose
reader pauses past a revocation is ended rather than read to the end of the log."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest

from ledger import Ledger
from services.runtime.auth import CACHE_S, STREAM_RECHECK_S
from tests.service.support import Served, batch, error_info, key
from trainledger.v1 import events_pb2, runs_pb2

WHO = {"principal": "setup", "request_id": ""}
# How long a test waits for a stream to end before calling it open for good: a deadline on the
# call, well past the server's re-check interval.
WAIT_S = 4 * (STREAM_RECHECK_S + CACHE_S)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ledger(tmp_path, clock: Clock) -> Iterator[Ledger]:
    opened = Ledger.open(str(tmp_path / "ledger.db"), clock=clock)
    yield opened
    opened.close()


@pytest.fixture
def served(ledger: Ledger) -> Iterator[Served]:
    server = Served(ledger)
    yield server
    server.close()


def bearer(value: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {value}"),)


def started_run(served: Served, metadata: Any) -> str:
    run_id = served.stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key()), metadata=metadata).state.run.run_id
    served.stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), metadata=metadata)
    return run_id


class Requests:
    """The request side of a RecordSteps call, fed by the test."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue[runs_pb2.RecordStepsRequest | None] = queue.SimpleQueue()

    def send(self, run_id: str, sequence: int) -> None:
        one = batch(run_id, range(sequence, sequence + 1))
        self.queue.put(runs_pb2.RecordStepsRequest(sequence=sequence, batch=one))

    def end(self) -> None:
        self.queue.put(None)

    def __iter__(self) -> Iterator[runs_pb2.RecordStepsRequest]:
        while (request := self.queue.get()) is not None:
            yield request


def ended_with(responses: Iterator[Any]) -> tuple[grpc.StatusCode, str, list[Any]]:
    """Read a stream to its end: its status, its reason and what it delivered on the way."""
    delivered: list[Any] = []
    try:
        for response in responses:
            delivered.append(response)
    except grpc.RpcError as error:
        reason = error_info(error).reason if error.code() != grpc.StatusCode.DEADLINE_EXCEEDED else ""
        return error.code(), reason, delivered
    return grpc.StatusCode.OK, "", delivered


def test_a_revoked_token_ends_its_record_steps_stream_while_it_sends(served: Served, ledger: Ledger) -> None:
    issued = ledger.issue_token(holder="alice", role="trainer", **WHO)
    run_id = started_run(served, bearer(issued.bearer))
    requests = Requests()
    acks = served.stubs.runs.RecordSteps(iter(requests), metadata=bearer(issued.bearer), timeout=WAIT_S + 5)
    requests.send(run_id, 1)
    assert next(acks).sequence == 1
    ledger.revoke_token(token_id=issued.token.token_id, reason="compromised", **WHO)
    stop = threading.Event()

    def keep_sending() -> None:  # A batch every 0.1 s, as a training loop would, for WAIT_S at most.
        sequence = 2
        while not stop.wait(0.1) and sequence < WAIT_S * 10:
            requests.send(run_id, sequence)
            sequence += 1
        requests.end()

    sender = threading.Thread(target=keep_sending, daemon=True)
    sender.start()
    try:
        code, reason, _ = ended_with(acks)
    finally:
        stop.set()
        sender.join(10)
    assert (code, reason) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")


def test_a_revoked_token_ends_its_idle_record_steps_stream(served: Served, ledger: Ledger) -> None:
    issued = ledger.issue_token(holder="alice", role="trainer", **WHO)
    run_id = started_run(served, bearer(issued.bearer))
    requests = Requests()
    acks = served.stubs.runs.RecordSteps(iter(requests), metadata=bearer(issued.bearer), timeout=WAIT_S)
    requests.send(run_id, 1)
    assert next(acks).sequence == 1
    ledger.revoke_token(token_id=issued.token.token_id, **WHO)
    try:
        code, reason, delivered = ended_with(acks)
    finally:
        requests.end()
    assert (code, reason, delivered) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED", [])


def test_an_expired_token_ends_its_watch(served: Served, ledger: Ledger, clock: Clock) -> None:
    writer = ledger.issue_token(holder="bob", role="trainer", **WHO).bearer
    watcher = ledger.issue_token(holder="eve", role="auditor", expires_at=clock.now + timedelta(seconds=6), **WHO)
    run_id = started_run(served, bearer(writer))
    watch = served.stubs.runs.WatchRun(
        runs_pb2.WatchRunRequest(run_id=run_id), metadata=bearer(watcher.bearer), timeout=WAIT_S
    )
    assert next(watch).state.run.run_id == run_id
    appended = runs_pb2.AppendStepsRequest(batch=batch(run_id, range(1, 3)))
    served.stubs.runs.AppendSteps(appended, metadata=bearer(writer))
    assert list(next(watch).steps.steps) == [1, 2]  # Delivered while the token is good.
    clock.now += timedelta(seconds=7)
    code, reason, _ = ended_with(watch)
    assert (code, reason) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_EXPIRED")


def test_a_revoked_token_ends_its_read_of_the_log(served: Served, ledger: Ledger) -> None:
    """A reader that pauses past a revocation is ended, not handed the rest of the log: the events
    (about 0.1 MB each) are far more than the transport buffers for a paused reader."""
    writer = ledger.issue_token(holder="bob", role="trainer", **WHO).bearer
    auditor = ledger.issue_token(holder="eve", role="auditor", **WHO)
    run_id = started_run(served, bearer(writer))
    size = 10_000
    for index in range(100):
        steps = range(1 + index * size, 1 + (index + 1) * size)
        served.stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, steps)), metadata=bearer(writer))
    read = served.stubs.events.ReadEvents(
        events_pb2.ReadEventsRequest(), metadata=bearer(auditor.bearer), timeout=WAIT_S + 30
    )
    next(read)
    ledger.revoke_token(token_id=auditor.token.token_id, **WHO)
    time.sleep(STREAM_RECHECK_S + CACHE_S)
    code, reason, delivered = ended_with(read)
    assert (code, reason) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")
    assert len(delivered) < 100


def test_streams_opened_without_a_token_end_once_authentication_turns_on(served: Served, ledger: Ledger) -> None:
    """A ledger with no token answers calls without one; issuing its first token turns
    authentication on, and the streams opened without a token end then, the writer's too."""
    run_id = started_run(served, ())
    requests = Requests()
    acks = served.stubs.runs.RecordSteps(iter(requests), timeout=WAIT_S + 5)
    requests.send(run_id, 1)
    assert next(acks).sequence == 1
    watch = served.stubs.runs.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), timeout=WAIT_S)
    assert next(watch).state.run.run_id == run_id
    ledger.issue_token(holder="admin", role="admin", **WHO)
    time.sleep(STREAM_RECHECK_S + CACHE_S)
    requests.send(run_id, 2)
    try:
        recorded = ended_with(acks)
    finally:
        requests.end()
    watched = ended_with(watch)
    assert recorded == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_MISSING", [])
    assert watched[:2] == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_MISSING")
