"""Things that grow with a run's history stay readable over the wire: every accepted write can be
read back under the server's 16 MiB send limit, whatever was accepted before it."""

from __future__ import annotations

from datetime import timedelta

import grpc
import pytest

from ledger import Ledger
from tests.ledger.conftest import FakeClock
from tests.service.support import Served, Stubs, error_info, key, open_run
from trainledger.v1 import common_pb2, events_pb2, events_pb2_grpc, registry_pb2, runs_pb2

SEND_LIMIT = 16 * 1024 * 1024
# A double whose JSON form is as long as a double's can be.
WIDEST_FLOAT = -1.2345678901234567e-300


def refusal(error: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    return error.code(), error_info(error).reason


def run_state(stubs: Stubs, run_id: str, min_position: int = 0) -> runs_pb2.RunState:
    return stubs.runs.GetRunState(
        runs_pb2.GetRunStateRequest(run_id=run_id, min_position=min_position), timeout=30
    ).state


def test_summary_notes_that_keep_growing_are_refused_and_the_run_stays_resumable(stubs: Stubs) -> None:
    opened = open_run(stubs)
    run_id = opened.state.run.run_id
    refusals = set()
    for note in range(24):
        request = runs_pb2.NoteSummaryRequest(run_id=run_id)
        request.summary.update({f"note{note}_{entry}": "x" * 4_000 for entry in range(180)})
        try:
            stubs.runs.NoteSummary(request, timeout=30)
        except grpc.RpcError as error:
            refusals.add(refusal(error))
    assert refusals == {(grpc.StatusCode.INVALID_ARGUMENT, "DOCUMENT_TOO_LARGE")}
    # Notes that each pass stop once the merged summary would cross its cap.
    position = 0
    for note in range(40):
        request = runs_pb2.NoteSummaryRequest(run_id=run_id)
        request.summary.update({f"small{note}_{entry}": "y" * 3_000 for entry in range(15)})
        try:
            position = stubs.runs.NoteSummary(request, timeout=30).position
        except grpc.RpcError as error:
            assert refusal(error) == (grpc.StatusCode.INVALID_ARGUMENT, "SUMMARY_TOO_LARGE")
            break
    else:
        pytest.fail("the merged summary grew without limit")
    assert len(run_state(stubs, run_id, position).run.summary.fields) > 15
    reopened = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=opened.state.run.run_key), timeout=30)
    assert reopened.state.run.run_id == run_id and not reopened.created


def test_run_state_lists_the_most_recent_expired_checkpoints_with_their_count(tmp_path) -> None:
    clock = FakeClock()
    ledger = Ledger.open(str(tmp_path / "expiring.db"), clock=clock)
    served = Served(ledger)
    try:
        stubs = served.stubs
        run_id = open_run(stubs).state.run.run_id
        # 2,200 of these took 17.7 MB in one RunState; the listed ones are bounded however many.
        for step in range(100):
            ledger.save_checkpoint(
                run_id=run_id,
                attempt=1,
                step=step,
                backend="tinker",
                uri=f"tinker://run/{step}/" + "w" * 4_000,
                sampler_uri=f"tinker://run/{step}/sampler/" + "s" * 4_000,
                expires_at=clock.now + timedelta(hours=1, seconds=step),
            )
        clock.advance(days=1)
        state = run_state(stubs, run_id, ledger.head())
        assert not state.HasField("checkpoint") and not state.resume.available
        assert [c.step for c in state.expired_checkpoints] == list(range(84, 100))
        assert state.expired_checkpoint_count == 100 and state.ByteSize() < 16 * 9_000
    finally:
        served.close()
        ledger.close()


def test_a_series_page_is_bounded_by_bytes_and_pages_cover_every_step(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    for step in range(320):
        message = common_pb2.StepBatch(run_id=run_id, attempt=1, steps=[step])
        for column in range(256):
            message.metrics.add(name=f"m{step:03d}.{column:03d}." + "n" * 200, values=[0.5])
        stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=message), timeout=30)
    steps: list[int] = []
    names = 0
    from_step = 0
    while True:
        page = stubs.runs.GetSeries(runs_pb2.GetSeriesRequest(run_id=run_id, from_step=from_step), timeout=60)
        assert page.ByteSize() <= 5 * 1024 * 1024
        steps += page.steps
        names += len(page.metrics)
        if not page.HasField("next_from_step"):
            break
        from_step = page.next_from_step
    assert steps == list(range(320)) and names == 320 * 256


def test_a_step_batch_whose_event_could_not_be_read_back_is_refused(served: Served, stubs: Stubs) -> None:
    from ledger.domain.limits import BATCH_BYTES_MAX

    run_id = open_run(stubs).state.run.run_id
    steps = list(range(10_000))

    def batch_of(metrics: int) -> runs_pb2.AppendStepsRequest:
        message = common_pb2.StepBatch(run_id=run_id, attempt=1, steps=steps)
        for column in range(metrics):
            message.metrics.add(name=f"metric_{column}", values=[WIDEST_FLOAT] * len(steps))
        return runs_pb2.AppendStepsRequest(batch=message)

    with pytest.raises(grpc.RpcError) as caught:
        stubs.runs.AppendSteps(batch_of(190), timeout=60)
    assert refusal(caught.value) == (grpc.StatusCode.INVALID_ARGUMENT, "BATCH_TOO_LARGE")
    # The largest batch of this shape that is accepted reads back as one event.
    widest = (BATCH_BYTES_MAX - 8 * len(steps) - 64 * 16) // (8 * len(steps) + 16)
    response = stubs.runs.AppendSteps(batch_of(widest), timeout=60)
    # Read as the project's client reads (it accepts answers up to the server's send limit).
    with grpc.insecure_channel(served.address, options=[("grpc.max_receive_message_length", SEND_LIMIT)]) as channel:
        event = next(
            iter(
                events_pb2_grpc.EventsStub(channel).ReadEvents(
                    events_pb2.ReadEventsRequest(from_position=response.position, limit=1), timeout=60
                )
            )
        )
    assert event.type.endswith("StepsRecorded") and len(event.data_json) < SEND_LIMIT * 3 // 4


def test_verdicts_too_large_are_refused_and_versions_come_in_pages(stubs: Stubs) -> None:
    family = f"fam-{key()}"
    for version in range(1, 26):
        request = registry_pb2.RegisterRequest(
            family=family, artifact_uri=f"s3://models/{version}", digest=f"{version:064x}"
        )
        request.metadata.update({"card": "c" * 4_000})
        stubs.registry.Register(request, timeout=30)
    promoted = stubs.registry.Promote(
        registry_pb2.PromoteRequest(
            family=family,
            version=1,
            expected_current=0,
            verdict=registry_pb2.GateVerdict(passed=True, reason="checked"),
        ),
        timeout=30,
    )
    huge = registry_pb2.PromoteRequest(
        family=family, version=2, expected_current=1, verdict=registry_pb2.GateVerdict(passed=True, reason="checked")
    )
    huge.verdict.stats.update({f"s{index}": ["x" * 4_000] * 256 for index in range(9)})
    with pytest.raises(grpc.RpcError) as caught:
        stubs.registry.Promote(huge, timeout=30)
    assert refusal(caught.value) == (grpc.StatusCode.INVALID_ARGUMENT, "DOCUMENT_TOO_LARGE")
    for version in range(2, 14):
        promoted = stubs.registry.Promote(
            registry_pb2.PromoteRequest(
                family=family,
                version=version,
                expected_current=version - 1,
                verdict=registry_pb2.GateVerdict(passed=True, reason=f"gate {version}"),
            ),
            timeout=30,
        )
    versions, history, token, pages = [], [], "", 0
    while True:
        page = stubs.registry.ListVersions(
            registry_pb2.ListVersionsRequest(
                family=family, page_size=10, page_token=token, min_position=promoted.position
            ),
            timeout=30,
        )
        versions += [v.version for v in page.versions]
        history += [p.version for p in page.history]
        assert page.current == 13 and len(page.versions) <= 10 and len(page.history) <= 10
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert versions == list(range(1, 26)) and history == list(range(1, 14)) and pages == 3


def test_list_versions_pages_are_bounded_by_bytes(stubs: Stubs) -> None:
    family = f"fam-{key()}"
    position = 0
    for version in range(1, 81):
        request = registry_pb2.RegisterRequest(
            family=family, artifact_uri=f"s3://models/{version}", digest=f"{version:064x}"
        )
        request.metadata.update({f"field{index}": "m" * 4_000 for index in range(15)})
        position = stubs.registry.Register(request, timeout=30).position
    first = stubs.registry.ListVersions(
        registry_pb2.ListVersionsRequest(family=family, min_position=position), timeout=30
    )
    assert first.next_page_token and first.ByteSize() <= 5 * 1024 * 1024
    versions = [v.version for v in first.versions]
    token = first.next_page_token
    while token:
        page = stubs.registry.ListVersions(
            registry_pb2.ListVersionsRequest(family=family, page_token=token), timeout=30
        )
        versions += [v.version for v in page.versions]
        token = page.next_page_token
    assert versions == list(range(1, 81))
