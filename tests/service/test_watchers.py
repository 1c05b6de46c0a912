"""WatchRun under load: the state sent once without the spec and then only as changes, watchers
bounded per caller and in all, a watcher that stops reading dropped rather than buffered, and a
watcher woken only by events of its own run."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from uuid import UUID

import grpc
import pytest

from ledger import Ledger
from services.grpc import watch
from tests.service.support import Served, Stubs, batch, error_info, open_run
from trainledger.v1 import common_pb2, runs_pb2, spend_pb2

WAIT_S = 20


def watching(
    stubs: Stubs, run_id: str, *, principal: str = "viewer", **fields: int
) -> Iterator[runs_pb2.WatchRunResponse]:
    return stubs.runs.WatchRun(
        runs_pb2.WatchRunRequest(run_id=run_id, **fields), timeout=60, metadata=(("x-principal", principal),)
    )


def refusal(stream: Iterator[runs_pb2.WatchRunResponse]) -> tuple[grpc.StatusCode, str, str]:
    """Read a stream to its end, which must be an error: its code, reason and domain."""
    with pytest.raises(grpc.RpcError) as raised:
        for _ in stream:
            pass
    info = error_info(raised.value)
    return raised.value.code(), info.reason, info.domain


def test_the_state_comes_once_without_the_spec_then_only_what_changed(served: Served, stubs: Stubs) -> None:
    spec = {f"part-{n}": "x" * 4_000 for n in range(12)}  # 48 KB
    opened = open_run(stubs, cap=1_000_000, name="wide", spec=spec)
    run_id = opened.state.run.run_id
    stream = watching(stubs, run_id)
    try:
        first = next(stream)
        assert first.event_type == "state" and first.state.run.name == "wide" and first.state.current_attempt == 1
        assert not first.state.run.HasField("spec") and first.ByteSize() < 4_000
        assert {"run.name", "run.status", "attempts", "checkpoint", "spend", "position"} <= set(first.state_mask.paths)
        assert "run.spec" not in first.state_mask.paths
        assert (
            len(stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=10).state.run.spec.fields)
            == 12
        )  # The spec is one call away.

        appended = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(5))), timeout=10)
        steps = next(stream)
        assert steps.position == appended.position and list(steps.steps.steps) == [0, 1, 2, 3, 4]
        assert not steps.HasField("state") and not steps.state_mask.paths

        saved = stubs.runs.SaveCheckpoint(
            runs_pb2.SaveCheckpointRequest(
                run_id=run_id, attempt=1, step=4, handle=common_pb2.StateHandle(backend="local", uri="file:///c/4")
            ),
            timeout=10,
        )
        checkpoint = next(stream)
        assert checkpoint.position == saved.position and checkpoint.event_type.endswith("CheckpointSaved")
        changed = set(checkpoint.state_mask.paths)
        assert {"checkpoint", "resume", "last_step", "position"} <= changed
        assert not changed & {"attempts", "run.name", "run.status", "spend", "current_attempt"}
        assert checkpoint.state.checkpoint.step == 4 and checkpoint.state.resume.available
        assert checkpoint.state.run.name == "" and not checkpoint.state.attempts

        reserved = stubs.spend.Reserve(
            spend_pb2.ReserveRequest(account=run_id, reservation_id="call-1", amount_usd_micro=2_500), timeout=10
        )
        spend = next(stream)  # The run's spend account is watched with the run.
        assert spend.position == reserved.position and "spend" in spend.state_mask.paths
        assert spend.state.spend.pending_usd_micro == 2_500 and "checkpoint" not in spend.state_mask.paths

        stubs.runs.FinishRun(
            runs_pb2.FinishRunRequest(run_id=run_id, attempt=1, status=common_pb2.RUN_STATUS_DONE), timeout=10
        )
        finished = next(stream)
        assert {"run.status", "run.finished_at"} <= set(finished.state_mask.paths)
        assert finished.state.run.status == common_pb2.RUN_STATUS_DONE and not finished.state.run.HasField("spec")
    finally:
        stream.cancel()


def test_a_watch_from_an_earlier_position_gets_the_events_since_then_goes_live(served: Served, stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    first = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(0, 3))), timeout=10)
    second = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(3, 6))), timeout=10)
    saved = stubs.runs.SaveCheckpoint(
        runs_pb2.SaveCheckpointRequest(
            run_id=run_id, attempt=1, step=5, handle=common_pb2.StateHandle(backend="local", uri="file:///c/5")
        ),
        timeout=10,
    )
    stream = watching(stubs, run_id, from_position=second.position)
    try:
        state = next(stream)
        assert state.event_type == "state" and state.state.checkpoint.step == 5 and state.state.last_step == 5
        earlier = [next(stream) for _ in range(2)]
        assert [m.position for m in earlier] == [second.position, saved.position]
        assert list(earlier[0].steps.steps) == [3, 4, 5]
        assert not earlier[1].state_mask.paths  # Already in the state sent first.
        live = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(6, 8))), timeout=10)
        assert next(stream).position == live.position > first.position
    finally:
        stream.cancel()


def test_a_watch_of_no_run_or_from_a_negative_position_is_refused(stubs: Stubs) -> None:
    code, reason, _ = refusal(watching(stubs, "4d1c4a8e-0000-5000-8000-000000000000"))
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND")
    run_id = open_run(stubs).state.run.run_id
    assert refusal(watching(stubs, run_id, from_position=-1))[:2] == (grpc.StatusCode.INVALID_ARGUMENT, "OUT_OF_RANGE")


def test_watchers_are_bounded_per_caller_and_in_all(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "WATCHERS_PER_CALLER_MAX", 2)
    monkeypatch.setattr(watch, "WATCHERS_MAX", 3)
    ledger = Ledger.open(str(tmp_path / "bounded.db"))
    served = Served(ledger)
    streams = []
    try:
        run_id = open_run(served.stubs).state.run.run_id
        for principal in ("alice", "alice", "bob"):
            streams.append(watching(served.stubs, run_id, principal=principal))
            assert next(streams[-1]).event_type == "state"
        code, reason, domain = refusal(watching(served.stubs, run_id, principal="alice"))
        assert (code, reason, domain) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_WATCHERS", "trainledger")
        assert refusal(watching(served.stubs, run_id, principal="carol"))[:2] == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "TOO_MANY_WATCHERS",
        )  # The server's bound.
        streams.pop(0).cancel()  # A watcher that leaves frees its place.
        deadline = time.monotonic() + WAIT_S
        while True:
            stream = watching(served.stubs, run_id, principal="carol")
            try:
                assert next(stream).event_type == "state"
                streams.append(stream)
                break
            except grpc.RpcError as error:
                assert error_info(error).reason == "TOO_MANY_WATCHERS" and time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        for stream in streams:
            stream.cancel()
        served.close()
        ledger.close()


def wide_batch(run_id: str, first: int, steps: int = 10_000, metrics: int = 12) -> dict:
    """A step batch of about 1 MB on the wire."""
    return {
        "run_id": run_id,
        "attempt": 1,
        "steps": list(range(first, first + steps)),
        "metrics": {f"m{n}": [float(n)] * steps for n in range(metrics)},
    }


def test_a_watcher_that_stops_reading_is_dropped_not_buffered(served: Served, stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    # A client window that stays at 64 KB: the server cannot hand a 1 MB message to this client
    # until it reads.
    slow_channel = grpc.insecure_channel(served.address, options=[("grpc.http2.bdp_probe", 0)])
    slow = watching(Stubs(slow_channel), run_id)
    fast = watching(stubs, run_id)
    batches = 8
    received: list[runs_pb2.WatchRunResponse] = []

    def read_fast() -> None:
        for message in fast:
            received.append(message)
            if sum(1 for m in received if m.HasField("steps")) == batches:
                return

    try:
        assert next(slow).event_type == "state" and next(fast).event_type == "state"
        reader = threading.Thread(target=read_fast)
        reader.start()
        for n in range(batches):
            served.ledger.append_steps(**wide_batch(run_id, n * 10_000))
        reader.join(WAIT_S)
        assert not reader.is_alive()  # A watcher that keeps up gets every batch.
        assert [m.steps.steps[0] for m in received if m.HasField("steps")] == [n * 10_000 for n in range(batches)]
        code, reason, domain = refusal(slow)
        assert (code, reason, domain) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "WATCHER_TOO_SLOW", "trainledger")
    finally:
        slow.cancel()
        fast.cancel()
        slow_channel.close()


def test_a_watcher_is_woken_only_by_events_of_its_own_run(served: Served, stubs: Stubs) -> None:
    watched = open_run(stubs).state.run.run_id
    other = open_run(stubs).state.run.run_id
    stream = watching(stubs, watched)
    try:
        assert next(stream).event_type == "state"
        watchers = watch.Watchers.of(served.server.edge)
        before = watchers.reads_of(watched)
        last = None
        for step in range(30):
            last = stubs.runs.AppendSteps(
                runs_pb2.AppendStepsRequest(batch=batch(other, range(step, step + 1))), timeout=10
            )
        assert last is not None and served.ledger.projector.wait(last.position, WAIT_S)
        appended = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(watched, range(3))), timeout=10)
        assert next(stream).position == appended.position
        # The other run's thirty writes woke nothing here: the watched run's one write costs a read
        # that finds it and one that finds nothing more (and one read may still follow joining).
        assert watchers.reads_of(watched) - before <= 3
    finally:
        stream.cancel()


def test_the_projector_tells_which_aggregates_each_chunk_touched(served: Served, stubs: Stubs) -> None:
    watched = open_run(stubs).state.run.run_id
    other = open_run(stubs).state.run.run_id
    seen: list[frozenset[UUID] | None] = []
    arrived = threading.Event()

    def listener(originator_ids: frozenset[UUID] | None) -> None:
        seen.append(originator_ids)
        if originator_ids is not None and UUID(other) in originator_ids:
            arrived.set()

    served.ledger.projector.originator_listeners.append(listener)
    try:
        stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(other, range(2))), timeout=10)
        assert arrived.wait(WAIT_S)
        assert all(ids is not None and UUID(watched) not in ids for ids in seen)
    finally:
        served.ledger.projector.originator_listeners.remove(listener)
