"""Fuzzing over the wire: every RPC of trainledger.v1, against a `trainledger serve` process.

Each method gets hypothesis-made requests (tests.fuzz.wire: extreme integers, huge and unusual
text, NaN and infinities, repeated fields at and past their limits, deep and wide documents,
out-of-range times) and bytes that are no well-formed request, sent through a generic channel with
identity serializers; RecordSteps streams are also cut short, abandoned half-way and cancelled.
Every answer must be OK or a clear refusal (never UNKNOWN or INTERNAL; exactly one ErrorInfo of
domain "trainledger"), a refusal must leave the log as it was, and health must stay SERVING.

How many examples: the settings profile named by TRAINLEDGER_FUZZ_PROFILE, "wire-ci" (the default:
about 160 per method, the same ones every run) or "wire-long" (random, about sixteen times as
many); bench/fuzz.py explores further and counts instead of stopping.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.test_serve_guards import Servers
from tests.fuzz.wire import METHODS, Judge, Known, Method, frames, message_payloads, raw_payloads, seed
from tests.service.support import Stubs, batch
from trainledger.v1 import runs_pb2

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(600),
    # Shown only with a failing example, whose request may be megabytes long.
    pytest.mark.filterwarnings("ignore:Generating overly large repr"),
    pytest.mark.subprocess,
]

RELAXED = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))
settings.register_profile("wire-ci", max_examples=120, derandomize=True, **RELAXED)  # The same examples each run.
settings.register_profile("wire-long", max_examples=2_000, **RELAXED)
PROFILE = settings.get_profile(os.environ.get("TRAINLEDGER_FUZZ_PROFILE", "wire-ci"))
# Bytes that are no request at all take fewer examples: most fail at the first byte.
RAW = settings(PROFILE, max_examples=max(10, PROFILE.max_examples // 3))
STREAMS = settings(PROFILE, max_examples=max(10, PROFILE.max_examples // 3))
RECORD_STEPS = next(method for method in METHODS if method.name == "Runs.RecordSteps")
APPEND_STEPS = next(method for method in METHODS if method.name == "Runs.AppendSteps")


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    servers = Servers(tmp_path_factory.mktemp("fuzz"))
    try:
        _, listening = servers.start(servers.directory / "ledger.db")
        yield listening
    finally:
        servers.kill_all()


@pytest.fixture(scope="module")
def known(address: str) -> Known:
    return seed(address)


@pytest.fixture(scope="module")
def judge(address: str, known: Known) -> Iterator[Judge]:
    judged = Judge(address, known)
    try:
        yield judged
    finally:
        judged.close()


@pytest.mark.parametrize("method", METHODS, ids=lambda method: method.name)
def test_every_request_gets_ok_or_a_clear_refusal(method: Method, judge: Judge, known: Known) -> None:
    @PROFILE
    @given(payload=message_payloads(method, known))
    def fuzz(payload: bytes | list[bytes]) -> None:
        answer = judge.send(method, payload)
        assert not answer.problem, judge.unclear[-1]

    fuzz()


@pytest.mark.parametrize("method", METHODS, ids=lambda method: method.name)
def test_bytes_that_are_no_request_get_a_clear_refusal(method: Method, judge: Judge, known: Known) -> None:
    @RAW
    @given(payload=raw_payloads(method, known))
    def fuzz(payload: bytes | list[bytes]) -> None:
        answer = judge.send(method, payload)
        assert not answer.problem, judge.unclear[-1]

    fuzz()


class Held:
    """A request iterator that sends its frames, then holds the stream open (or fails) until told."""

    def __init__(self, frames: list[bytes], *, fail: bool) -> None:
        self.frames, self.fail = frames, fail
        self.released = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        yield from self.frames
        self.released.wait(30)
        if self.fail:
            raise RuntimeError("the trainer crashed mid-stream")


def fresh_run(stubs: Stubs, number: int) -> str:
    opened = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=f"stream-{number}-{os.urandom(4).hex()}"), timeout=10)
    stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=opened.state.run.run_id, attempt_id="a1"), timeout=10)
    return opened.state.run.run_id


@STREAMS
@given(
    count=st.integers(1, 6),
    read=st.integers(0, 6),
    how=st.sampled_from(["cancel", "close", "crash", "cut"]),
    number=st.integers(0, 2**32),
)
def test_streams_cut_short_or_abandoned_keep_every_ack_exactly_once(
    address: str, judge: Judge, count: int, read: int, how: str, number: int
) -> None:
    """A RecordSteps stream ends early: the client cancels it after `read` acks, drops its channel,
    its request iterator fails while the stream is open, or its last frame is cut short. The server
    stays up; every ack it sent is in the log; sending every batch again records the missing ones
    once and answers the rest as duplicates."""
    stubs = Stubs(judge.channel)
    before = len(judge.unclear)
    run_id = fresh_run(stubs, number)
    batches = [batch(run_id, range(index * 100, (index + 1) * 100)) for index in range(count)]
    sent = frames(batches)
    acks: list[runs_pb2.RecordStepsResponse] = []
    if how == "cut":
        answer = judge.send(RECORD_STEPS, [*sent[:-1], sent[-1][: len(sent[-1]) // 2]])
        assert not answer.problem, judge.unclear[-1]
    else:
        channel = grpc.insecure_channel(address) if how == "close" else judge.channel
        held = Held(sent, fail=how == "crash")
        call = channel.stream_stream("/trainledger.v1.Runs/RecordSteps")(iter(held), timeout=30)
        try:
            for data in call:
                acks.append(runs_pb2.RecordStepsResponse.FromString(data))
                if len(acks) >= min(read, count):
                    break
            if how == "crash":
                held.released.set()  # The iterator raises: the client cancels the call.
            elif how == "close":
                channel.close()
            else:
                call.cancel()
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.CANCELLED, (error.code(), error.details())
        finally:
            held.released.set()
            call.cancel()
            if how == "close":
                channel.close()
    judge.check_health(RECORD_STEPS)
    assert judge.unclear[before:] == []

    events = {event.position: event for event in judge.events_after(0)}
    for ack in acks:
        assert events[ack.position].type.endswith("StepsRecorded") and events[ack.position].originator_id == run_id
    again = [stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=each), timeout=10) for each in batches]
    assert {ack.position for ack in acks} <= {answer.position for answer in again}
    series = stubs.runs.GetSeries(
        runs_pb2.GetSeriesRequest(run_id=run_id, page_size=10_000, min_position=max(a.position for a in again)),
        timeout=10,
    )
    assert list(series.steps) == list(range(count * 100))
    recorded = [e for e in judge.events_after(0) if e.originator_id == run_id and e.type.endswith("StepsRecorded")]
    assert len(recorded) == count, "a batch was recorded twice"


def test_live_tails_and_reads_abandoned_in_numbers_leave_the_server_serving(
    address: str, judge: Judge, known: Known
) -> None:
    """Thirty WatchRun tails and thirty ReadEvents reads, each dropped after its first answer, twice
    over on channels that are then closed: health stays SERVING and calls are answered."""
    before = len(judge.unclear)
    watch = runs_pb2.WatchRunRequest(run_id=known.run_ids[0]).SerializeToString()
    read = b""  # ReadEventsRequest with every field at its default: the whole log.
    for _ in range(2):
        with grpc.insecure_channel(address) as channel:
            calls = [channel.unary_stream("/trainledger.v1.Runs/WatchRun")(watch, timeout=30) for _ in range(30)]
            calls += [channel.unary_stream("/trainledger.v1.Events/ReadEvents")(read, timeout=30) for _ in range(30)]
            for call in calls:
                next(call)
            for call in calls[::2]:
                call.cancel()
        judge.check_health(RECORD_STEPS)
    stubs = Stubs(judge.channel)
    assert stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=known.run_ids[0]), timeout=10).state.run.run_id
    assert judge.unclear[before:] == []


def test_a_metric_named_twice_with_a_long_name_is_refused_clearly(address: str, known: Known) -> None:
    """A finding of the fuzzer: the refusal echoed the name, unbounded, in its message and ErrorInfo,
    past the client's metadata limit, and the client got RESOURCE_EXHAUSTED without ErrorInfo."""
    request = runs_pb2.AppendStepsRequest(batch=batch(known.run_ids[0], range(7_000, 7_001)))
    request.batch.metrics[0].name = "x" * 10_000
    request.batch.metrics.add(name="x" * 10_000, values=[0.5])
    judged = Judge(address, known)
    try:
        answer = judged.send(APPEND_STEPS, request.SerializeToString())
    finally:
        judged.close()
    assert answer.code == grpc.StatusCode.INVALID_ARGUMENT and not answer.problem, answer
