"""The service over the wire: idempotent retries, streamed acks, the live tail, the whole log in
pages, read-your-writes across channels, paging tokens, health and reflection."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import grpc
from google.protobuf import duration_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from ledger import Ledger
from services.grpc.codec import document
from tests.service.support import Served, Stubs, batch, key, open_run
from trainledger.v1 import common_pb2, events_pb2, runs_pb2, spend_pb2


def test_open_run_is_idempotent_and_documents_round_trip(stubs: Stubs) -> None:
    spec = {"lr": 0.001, "epochs": 3, "model": {"name": "tiny", "layers": [1, 2.5]}}
    request = runs_pb2.OpenRunRequest(run_key=key(), name="tiny", cap_usd_micro=5_000)
    request.spec.update(spec)
    first = stubs.runs.OpenRun(request, timeout=10)
    again = stubs.runs.OpenRun(request, timeout=10)
    assert (first.created, again.created) == (True, False)
    assert again.position == first.position and again.state.run.run_id == first.state.run.run_id
    assert document(again.state.run.spec) == spec
    assert again.state.spend.cap_usd_micro == 5_000 and again.state.run.status == common_pb2.RUN_STATUS_RUNNING


def test_same_batch_again_is_a_duplicate_with_the_first_position(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    request = runs_pb2.AppendStepsRequest(batch=batch(run_id, range(100), tokens=list(range(100))))
    first = stubs.runs.AppendSteps(request, timeout=10)
    again = stubs.runs.AppendSteps(request, timeout=10)
    assert (first.duplicate, again.duplicate) == (False, True)
    assert again.position == first.position and again.last_step == 99


def test_same_reservation_id_again_gets_the_same_answer(stubs: Stubs) -> None:
    run_id = open_run(stubs, cap=10_000).state.run.run_id
    request = spend_pb2.ReserveRequest(
        account=run_id, reservation_id="call-1", amount_usd_micro=1_500, ttl=duration_pb2.Duration(seconds=600)
    )
    request.basis.price_sheet = "sheet-1"
    request.basis.tokens.add(token_class="sample", tokens=1_000, usd_micro_per_million_tokens=1_500_000)
    first = stubs.spend.Reserve(request, timeout=10)
    again = stubs.spend.Reserve(request, timeout=10)
    assert (first.duplicate, again.duplicate) == (False, True)
    assert (again.position, again.expires_at) == (first.position, first.expires_at)
    assert again.account.pending_usd_micro == 1_500 and again.account.remaining_usd_micro == 8_500
    expiry = first.expires_at.ToDatetime(tzinfo=UTC) - datetime.now(UTC)
    assert timedelta(minutes=9) < expiry <= timedelta(minutes=10)
    commit = spend_pb2.CommitRequest(account=run_id, reservation_id="call-1", actual_usd_micro=1_700)
    committed = stubs.spend.Commit(commit, timeout=10)
    assert stubs.spend.Commit(commit, timeout=10).position == committed.position
    assert committed.overrun_usd_micro == 200 and committed.account.committed_usd_micro == 1_700
    listed = stubs.spend.ListReservations(
        spend_pb2.ListReservationsRequest(account=run_id, min_position=committed.position), timeout=10
    ).reservations
    assert [(r.reservation_id, r.state, r.actual_usd_micro) for r in listed] == [("call-1", "committed", 1_700)]
    assert listed[0].basis.tokens[0].tokens == 1_000 and listed[0].basis.price_sheet == "sheet-1"


def test_record_steps_acks_every_batch_in_order(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    requests = [
        runs_pb2.RecordStepsRequest(sequence=10 + n, batch=batch(run_id, range(n * 50, n * 50 + 50))) for n in range(6)
    ]
    requests.append(requests[2])  # A retried batch is acknowledged as a duplicate.
    acks = list(stubs.runs.RecordSteps(iter(requests), timeout=10))
    assert [a.sequence for a in acks] == [10, 11, 12, 13, 14, 15, 12]
    positions = [a.position for a in acks[:6]]
    assert positions == sorted(positions) and len(set(positions)) == 6
    assert acks[-1].duplicate and acks[-1].position == acks[2].position
    assert acks[5].last_step == 299


def test_watch_run_sees_appends_live(served: Served, stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    watch = stubs.runs.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), timeout=20)
    first = next(watch)
    assert first.event_type == "state" and first.state.current_attempt == 1
    other = served.connect()
    try:
        appended = other.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(5))), timeout=10)
        steps = next(watch)
        assert steps.position == appended.position and steps.event_type.endswith("StepsRecorded")
        assert list(steps.steps.steps) == [0, 1, 2, 3, 4] and steps.steps.metrics[0].name == "loss"
        saved = other.runs.SaveCheckpoint(
            runs_pb2.SaveCheckpointRequest(
                run_id=run_id, attempt=1, step=4, handle=common_pb2.StateHandle(backend="local", uri="file:///c/4")
            ),
            timeout=10,
        )
        checkpoint = next(watch)
        assert checkpoint.position == saved.position and checkpoint.state.checkpoint.step == 4
        assert checkpoint.state.resume.available and checkpoint.state.last_step == 4
    finally:
        watch.cancel()
        other.channel.close()


def test_read_events_streams_the_whole_log_in_pages(served: Served, stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    for step in range(1_100):
        served.ledger.append_steps(run_id=run_id, attempt=1, steps=[step], metrics={"loss": [1.0]})
    head = served.ledger.head()
    events = list(stubs.events.ReadEvents(events_pb2.ReadEventsRequest(from_position=1), timeout=30))
    assert [e.position for e in events] == list(range(1, head + 1))
    last = events[-1]
    assert last.type.endswith("StepsRecorded") and json.loads(last.data_json)["steps"] == [1_099]
    limited = list(
        stubs.events.ReadEvents(events_pb2.ReadEventsRequest(from_position=head - 1_049, limit=1_010), timeout=30)
    )
    assert [e.position for e in limited] == list(range(head - 1_049, head - 39))
    typed = list(stubs.events.ReadEvents(events_pb2.ReadEventsRequest(types=["AttemptStarted"]), timeout=30))
    assert typed and all(e.type.endswith("AttemptStarted") for e in typed)


def test_read_your_writes_across_two_channels(served: Served, stubs: Stubs) -> None:
    reader = served.connect()
    try:
        for n in range(5):
            run_id = open_run(stubs, attempt=False).state.run.run_id
            started = stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id), timeout=10)
            written = stubs.runs.AppendSteps(
                runs_pb2.AppendStepsRequest(batch=batch(run_id, range(n * 7 + 1))), timeout=10
            )
            seen = reader.runs.GetRunState(
                runs_pb2.GetRunStateRequest(run_id=run_id, min_position=written.position), timeout=10
            ).state
            assert seen.position >= written.position and seen.last_step == n * 7
            assert seen.current_attempt == started.attempt == 1
    finally:
        reader.channel.close()


def test_pages_of_runs_and_series(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    written = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(250))), timeout=10)
    seen, token = [], ""
    while True:
        page = stubs.runs.ListRuns(
            runs_pb2.ListRunsRequest(page_size=2, page_token=token, min_position=written.position), timeout=10
        )
        seen += [r.run_id for r in page.runs]
        token = page.next_page_token
        if not token:
            break
    assert run_id in seen and len(seen) == len(set(seen))
    steps, from_step = [], 0
    while from_step is not None:
        page = stubs.runs.GetSeries(
            runs_pb2.GetSeriesRequest(run_id=run_id, from_step=from_step, page_size=100, min_position=written.position),
            timeout=10,
        )
        steps += list(page.steps)
        from_step = page.next_from_step if page.HasField("next_from_step") else None
    assert steps == list(range(250))


def test_request_id_and_principal_are_recorded(stubs: Stubs) -> None:
    metadata = (("x-request-id", "req-audit-1"), ("x-principal", "alice"))
    response, call = stubs.runs.OpenRun.with_call(runs_pb2.OpenRunRequest(run_key=key()), metadata=metadata, timeout=10)
    assert ("x-request-id", "req-audit-1") in tuple(call.trailing_metadata())
    event = next(
        iter(
            stubs.events.ReadEvents(events_pb2.ReadEventsRequest(from_position=response.position, limit=1), timeout=10)
        )
    )
    assert (event.principal, event.request_id) == ("alice", "req-audit-1")
    _, anonymous = stubs.runs.GetRunState.with_call(
        runs_pb2.GetRunStateRequest(run_id=response.state.run.run_id), timeout=10
    )
    assert dict(anonymous.trailing_metadata())["x-request-id"]


def test_health_and_reflection_answer(stubs: Stubs) -> None:
    health = health_pb2_grpc.HealthStub(stubs.channel)
    for service in ("", "trainledger.v1.Runs", "trainledger.v1.Spend"):
        answer = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
    reflection = reflection_pb2_grpc.ServerReflectionStub(stubs.channel)
    responses = reflection.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10
    )
    names = {s.name for r in responses for s in r.list_services_response.service}
    assert {
        "trainledger.v1.Runs",
        "trainledger.v1.Spend",
        "trainledger.v1.Registry",
        "trainledger.v1.Events",
        "grpc.health.v1.Health",
    } <= names


def test_unknown_method_is_unimplemented(stubs: Stubs) -> None:
    call = stubs.channel.unary_unary("/trainledger.v1.Runs/NoSuchMethod")
    try:
        call(b"", timeout=10)
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.UNIMPLEMENTED
    else:
        raise AssertionError("an unknown method answered")


def test_shutdown_turns_health_not_serving_and_ends_live_streams(tmp_path) -> None:
    ledger = Ledger.open(str(tmp_path / "shutdown.db"))
    served = Served(ledger)
    try:
        run_id = open_run(served.stubs).state.run.run_id
        health = health_pb2_grpc.HealthStub(served.stubs.channel).Watch(health_pb2.HealthCheckRequest(), timeout=20)
        assert next(health).status == health_pb2.HealthCheckResponse.SERVING
        watch = served.stubs.runs.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), timeout=20)
        assert next(watch).event_type == "state"
        stopping = asyncio.run_coroutine_threadsafe(served.server.stop(10), served.loop)
        assert next(health).status == health_pb2.HealthCheckResponse.NOT_SERVING
        health.cancel()
        assert list(watch) == []  # The live tail ends cleanly instead of holding the shutdown up.
        stopping.result(5)
    finally:
        served.close()
        ledger.close()
