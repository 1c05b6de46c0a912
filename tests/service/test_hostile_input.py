"""Hostile input over the wire: every request that is too large, malformed or out of range is
refused with INVALID_ARGUMENT and a reason, before it costs the server more than reading it, and
the server goes on answering everyone else."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from google.protobuf import duration_pb2, timestamp_pb2

from ledger import Ledger
from ledger.domain.errors import Invalid
from ledger.domain.limits import DOCUMENT_REQUEST_BYTES_MAX, REQUEST_BYTES_MAX
from ledger.domain.reasons import Reason
from services.grpc.codec import encode_token
from tests.service.support import Served, Stubs, error_info, field, key, open_run
from trainledger.v1 import common_pb2, runs_pb2, spend_pb2

NULL_VALUE = b"\x08\x00"  # google.protobuf.Value{null_value: NULL_VALUE}


def flat_struct(entries: int) -> bytes:
    """A Struct with `entries` distinct keys, built on the wire (building it as a message is slow)."""
    return b"".join(field(1, field(1, b"k%d" % n) + field(2, NULL_VALUE)) for n in range(entries))


def nested_struct(depth: int) -> bytes:
    """A Struct holding a Struct ... `depth` levels deep."""
    inner = b""
    for _ in range(depth):
        inner = field(1, field(1, b"a") + field(2, field(5, inner)))
    return inner


def raw_unary(stubs: Stubs, method: str, response: type) -> grpc.UnaryUnaryMultiCallable:
    return stubs.channel.unary_unary(method, request_serializer=None, response_deserializer=response.FromString)


def refusal(call: object) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call()  # type: ignore[operator]
    return caught.value.code(), error_info(caught.value).reason


def open_run_bytes(spec: bytes) -> bytes:
    return field(1, key().encode()) + field(3, spec)


def test_documents_too_large_are_refused_by_size_while_other_calls_go_on(served: Served, stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    raw = raw_unary(stubs, "/trainledger.v1.Runs/OpenRun", runs_pb2.OpenRunResponse)
    huge = open_run_bytes(flat_struct(100_000))  # About 2 MB: 100,000 keys.
    other = served.connect()
    with ThreadPoolExecutor(3) as pool:
        calls = [pool.submit(raw.with_call, huge, timeout=60) for _ in range(3)]
        state = other.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=30).state
        assert state.run.run_id == run_id
        for call in calls:
            error = call.exception()
            assert isinstance(error, grpc.RpcError)
            info = error_info(error)
            assert (error.code(), info.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "DOCUMENT_TOO_LARGE")
            assert info.domain == "trainledger" and info.metadata["limit"] == str(DOCUMENT_REQUEST_BYTES_MAX)
    other.channel.close()


def test_document_shapes_are_refused_with_the_ledger_reasons(stubs: Stubs) -> None:
    wide = runs_pb2.OpenRunRequest(run_key=key())
    wide.spec.update({"model": {f"k{n}": n for n in range(257)}})
    assert refusal(lambda: stubs.runs.OpenRun(wide, timeout=30)) == (grpc.StatusCode.INVALID_ARGUMENT, "MAP_TOO_LARGE")
    nan = runs_pb2.OpenRunRequest(run_key=key())
    nan.spec.update({"lr": float("nan")})
    assert refusal(lambda: stubs.runs.OpenRun(nan, timeout=30)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "NON_FINITE_VALUE",
    )
    raw = raw_unary(stubs, "/trainledger.v1.Runs/OpenRun", runs_pb2.OpenRunResponse)
    for depth in (10, 40, 150):  # Within the ledger's limit of 8 by far, and past protobuf's 100.
        assert refusal(lambda depth=depth: raw(open_run_bytes(nested_struct(depth)), timeout=30)) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "DOCUMENT_TOO_DEEP",
        ), depth
    # Every value kind still round-trips.
    spec = {"name": "tiny", "lr": 0.5, "epochs": 3, "tags": ["a", None, True], "lora": {"r": 8}}
    request = runs_pb2.OpenRunRequest(run_key=key())
    request.spec.update(spec)
    from services.grpc.codec import document

    assert document(stubs.runs.OpenRun(request, timeout=30).state.run.spec) == spec


def test_requests_above_the_size_limit_are_refused_before_they_are_decoded(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    # Nine MiB of one metric's values: not a batch the ledger could take, but too large to look at.
    column = field(1, b"loss") + field(2, b"\x00" * (9 * 1024 * 1024))
    batch = field(1, run_id.encode()) + b"\x10\x01" + field(3, b"\x00") + field(6, column)
    raw = raw_unary(stubs, "/trainledger.v1.Runs/AppendSteps", runs_pb2.AppendStepsResponse)
    with pytest.raises(grpc.RpcError) as caught:
        raw(field(1, batch), timeout=60)
    info = error_info(caught.value)
    assert (caught.value.code(), info.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BATCH_TOO_LARGE")
    assert info.metadata["limit"] == str(REQUEST_BYTES_MAX)
    token = "x" * (REQUEST_BYTES_MAX + 1)
    assert refusal(lambda: stubs.runs.ListRuns(runs_pb2.ListRunsRequest(page_token=token), timeout=60)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "REQUEST_TOO_LARGE",
    )


@pytest.mark.parametrize(
    "method,response",
    [
        ("/trainledger.v1.Runs/OpenRun", runs_pb2.OpenRunResponse),
        ("/trainledger.v1.Runs/AppendSteps", runs_pb2.AppendStepsResponse),
        ("/trainledger.v1.Spend/Reserve", spend_pb2.ReserveResponse),
    ],
)
def test_garbage_bytes_are_malformed_requests(stubs: Stubs, method: str, response: type) -> None:
    for garbage in (b"\xff\xff\xff\xff", b"\x0a\x7f" + b"short", b"\x0c\x0c"):
        assert refusal(lambda garbage=garbage: raw_unary(stubs, method, response)(garbage, timeout=30)) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "MALFORMED_REQUEST",
        )


def test_garbage_on_a_stream_refuses_the_stream_after_the_acks_before_it(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    good = runs_pb2.RecordStepsRequest(sequence=1, batch=common_pb2.StepBatch(run_id=run_id, attempt=1, steps=[0]))
    record = stubs.channel.stream_stream(
        "/trainledger.v1.Runs/RecordSteps",
        request_serializer=None,
        response_deserializer=runs_pb2.RecordStepsResponse.FromString,
    )
    responses = record(iter([good.SerializeToString(), b"\xff\xff\xff"]), timeout=30)
    assert next(responses).sequence == 1
    with pytest.raises(grpc.RpcError) as caught:
        next(responses)
    assert (caught.value.code(), error_info(caught.value).reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "MALFORMED_REQUEST",
    )


@pytest.mark.parametrize(
    "seconds,nanos",
    [
        (253_402_300_800, 0),  # 10000-01-01
        (-62_135_596_801, 0),  # Before the year 1.
        (1_900_000_000, -1),  # Negative nanos.
        (1_900_000_000, 10**9),  # Nanos past a second.
    ],
)
def test_timestamps_outside_the_protobuf_range_are_invalid(stubs: Stubs, seconds: int, nanos: int) -> None:
    run_id = open_run(stubs).state.run.run_id
    request = runs_pb2.SaveCheckpointRequest(
        run_id=run_id,
        attempt=1,
        step=1,
        handle=common_pb2.StateHandle(backend="hf", uri="file:///ck/1"),
        expires_at=timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos),
    )
    assert refusal(lambda: stubs.runs.SaveCheckpoint(request, timeout=30)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_TIMESTAMP",
    )


@pytest.mark.parametrize("seconds,nanos", [(2**62, 0), (-(2**62), 0), (10, -5), (0, 10**9)])
def test_ttls_that_are_no_duration_are_invalid(stubs: Stubs, seconds: int, nanos: int) -> None:
    run_id = open_run(stubs).state.run.run_id
    request = spend_pb2.ReserveRequest(
        account=run_id,
        reservation_id=key(),
        amount_usd_micro=1,
        ttl=duration_pb2.Duration(seconds=seconds, nanos=nanos),
    )
    assert refusal(lambda: stubs.spend.Reserve(request, timeout=30)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_TTL",
    )


@pytest.mark.parametrize(
    "token",
    [
        encode_token(2**70),
        encode_token(2**63),
        base64.urlsafe_b64encode(b"1" * 500).decode(),
    ],
)
def test_page_tokens_with_oversized_positions_are_invalid(stubs: Stubs, token: str) -> None:
    run_id = open_run(stubs).state.run.run_id
    request = spend_pb2.ListReservationsRequest(account=run_id, page_token=token)
    assert refusal(lambda: stubs.spend.ListReservations(request, timeout=30)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_PAGE_TOKEN",
    )


@pytest.mark.parametrize(
    "token",
    [
        base64.urlsafe_b64encode(b"[1" + b"0" * 400 + b', "run"]').decode(),
        base64.urlsafe_b64encode(b'[Infinity, "run"]').decode(),
        base64.urlsafe_b64encode(b'[NaN, "run"]').decode(),
        base64.urlsafe_b64encode(b"[" * 100_000).decode(),
    ],
)
def test_run_page_tokens_out_of_range_are_invalid(stubs: Stubs, token: str) -> None:
    assert refusal(lambda: stubs.runs.ListRuns(runs_pb2.ListRunsRequest(page_token=token), timeout=30)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_PAGE_TOKEN",
    )


def test_a_checkpoint_already_expired_is_refused_over_the_wire(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    past = timestamp_pb2.Timestamp()
    past.FromDatetime(datetime.now(UTC) - timedelta(minutes=1))
    request = runs_pb2.SaveCheckpointRequest(
        run_id=run_id,
        attempt=1,
        step=1,
        handle=common_pb2.StateHandle(backend="tinker", uri="tinker://ck/1"),
        expires_at=past,
    )
    assert refusal(lambda: stubs.runs.SaveCheckpoint(request, timeout=30)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "CHECKPOINT_ALREADY_EXPIRED",
    )
    state = stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=30).state
    assert not state.HasField("checkpoint") and not state.expired_checkpoints


def test_a_retried_checkpoint_save_is_a_duplicate_after_it_expired(tmp_path: Path) -> None:
    now = [datetime(2030, 1, 1, tzinfo=UTC)]
    ledger = Ledger.open(str(tmp_path / "ledger.db"), clock=lambda: now[0])
    try:
        run_id = ledger.open_run(run_key=key(), name="ttl").run_id
        ledger.start_attempt(run_id=run_id, attempt_id="a1")
        expires_at = now[0] + timedelta(hours=1)
        first = ledger.save_checkpoint(
            run_id=run_id, attempt=1, step=5, backend="tinker", uri="tinker://ck/5", expires_at=expires_at
        )
        now[0] += timedelta(hours=2)
        again = ledger.save_checkpoint(
            run_id=run_id, attempt=1, step=5, backend="tinker", uri="tinker://ck/5", expires_at=expires_at
        )
        assert again.duplicate and again.position == first.position
        with pytest.raises(Invalid) as refused:
            ledger.save_checkpoint(
                run_id=run_id, attempt=1, step=6, backend="tinker", uri="tinker://ck/6", expires_at=expires_at
            )
        assert refused.value.reason == Reason.CHECKPOINT_ALREADY_EXPIRED
        assert ledger.head() == first.position  # Nothing was recorded for the refusal.
    finally:
        ledger.close()
