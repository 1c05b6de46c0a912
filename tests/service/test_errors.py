"""Every row of the error table, over the wire: status code and ErrorInfo.reason (never message
text), then proof that the server still serves and nothing acknowledged changed. The expected
status of each error kind is written out here, never read from the table under test."""

from __future__ import annotations

import math
import uuid

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ledger.domain import errors as ledger_errors
from ledger.domain.reasons import Reason
from services.grpc.errors import DOMAIN, status_code
from tests.service.support import Served, Stubs, batch, error_info, key, open_run
from trainledger.v1 import common_pb2, registry_pb2, runs_pb2, spend_pb2

Code = grpc.StatusCode


def refused(call, request, **kwargs) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=kwargs.pop("timeout", 10), **kwargs)
    return caught.value


def assert_refusal(error: grpc.RpcError, code: grpc.StatusCode, reason: str) -> dict[str, str]:
    assert error.code() == code, (error.code(), error.details())
    info = error_info(error)
    assert (info.reason, info.domain) == (reason, DOMAIN)
    return dict(info.metadata)


def state(stubs: Stubs, run_id: str, min_position: int = 0) -> runs_pb2.RunState:
    return stubs.runs.GetRunState(
        runs_pb2.GetRunStateRequest(run_id=run_id, min_position=min_position), timeout=10
    ).state


class Unlisted(ledger_errors.LedgerError):
    """A kind the table does not list: a bug, sent as INTERNAL."""


# Each error kind, the status code it must go out with, and a reason it travels with.
KINDS: list[tuple[type[ledger_errors.LedgerError], grpc.StatusCode, Reason]] = [
    (ledger_errors.Invalid, Code.INVALID_ARGUMENT, Reason.INVALID_FIELD),
    (ledger_errors.NotFound, Code.NOT_FOUND, Reason.RUN_NOT_FOUND),
    (ledger_errors.Conflict, Code.ALREADY_EXISTS, Reason.EXISTS_WITH_DIFFERENT_PAYLOAD),
    (ledger_errors.Refused, Code.FAILED_PRECONDITION, Reason.RUN_FINISHED),
    (ledger_errors.Contended, Code.ABORTED, Reason.CURRENT_VERSION_MOVED),
    (ledger_errors.Exhausted, Code.RESOURCE_EXHAUSTED, Reason.TOO_MANY_WATCHERS),
    (ledger_errors.CapExceeded, Code.RESOURCE_EXHAUSTED, Reason.SPEND_CAP_EXCEEDED),
    (ledger_errors.Unavailable, Code.UNAVAILABLE, Reason.STORAGE_FULL),
    (ledger_errors.Unauthenticated, Code.UNAUTHENTICATED, Reason.TOKEN_REVOKED),
    (ledger_errors.PermissionDenied, Code.PERMISSION_DENIED, Reason.OUTSIDE_SCOPE),
    (Unlisted, Code.INTERNAL, Reason.INTERNAL),
]


def make(kind: type[ledger_errors.LedgerError], reason: Reason) -> ledger_errors.LedgerError:
    if issubclass(kind, ledger_errors.CapExceeded):
        return kind("over", reason=reason, account="acct", remaining_usd_micro=7)
    return kind("refused for a test", reason=reason, field="x")


def test_every_kind_of_the_domain_is_in_the_expected_table() -> None:
    kinds = {
        value
        for value in vars(ledger_errors).values()
        if isinstance(value, type) and issubclass(value, ledger_errors.LedgerError)
    }
    assert kinds - {ledger_errors.LedgerError} == {kind for kind, _, _ in KINDS} - {Unlisted}


def test_kinds_with_a_default_reason_and_an_unknown_reason() -> None:
    assert ledger_errors.Conflict("x").reason is Reason.EXISTS_WITH_DIFFERENT_PAYLOAD
    assert ledger_errors.Unavailable("x").reason is Reason.UNAVAILABLE
    assert ledger_errors.CapExceeded("x", account="a", remaining_usd_micro=0).reason is Reason.SPEND_CAP_EXCEEDED
    # A plain string is looked up in the catalogue: a reason it does not hold is a bug.
    assert ledger_errors.Invalid("x", reason="EMPTY_BATCH").reason is Reason.EMPTY_BATCH  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        ledger_errors.Invalid("x", reason="NO_SUCH_REASON")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind,code,reason", KINDS, ids=lambda v: getattr(v, "__name__", None))
def test_each_kind_has_its_status_code(kind, code, reason) -> None:
    assert status_code(make(kind, reason)) == code


@pytest.mark.parametrize("kind,code,reason", KINDS, ids=lambda v: getattr(v, "__name__", None))
def test_every_row_of_the_table_maps_to_its_code_with_error_info(
    served: Served, stubs: Stubs, monkeypatch, kind, code, reason
) -> None:
    error = make(kind, reason)

    def refuse(*args, **kwargs):
        raise error

    monkeypatch.setattr(served.ledger, "run_state", refuse)
    caught = refused(stubs.runs.GetRunState, runs_pb2.GetRunStateRequest(run_id="r"))
    if code == Code.INTERNAL:
        # An unlisted kind is a bug: INTERNAL with a generic message, details left in the log.
        assert assert_refusal(caught, code, "INTERNAL").keys() == {"request_id"}
        assert "refused for a test" not in caught.details()
        return
    metadata = assert_refusal(caught, code, reason.value)
    assert metadata == error.metadata and caught.details() == error.message


def test_invalid_argument_bad_field_batch_too_large_non_finite_metric(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    bad = refused(stubs.runs.OpenRun, runs_pb2.OpenRunRequest(run_key=""))
    assert assert_refusal(bad, Code.INVALID_ARGUMENT, "MISSING_FIELD")["field"] == "run_key"
    negative = refused(
        stubs.spend.Reserve, spend_pb2.ReserveRequest(account=run_id, reservation_id="r", amount_usd_micro=-1)
    )
    assert_refusal(negative, Code.INVALID_ARGUMENT, "NEGATIVE_AMOUNT")
    too_large = refused(stubs.runs.AppendSteps, runs_pb2.AppendStepsRequest(batch=batch(run_id, range(10_001))))
    assert assert_refusal(too_large, Code.INVALID_ARGUMENT, "BATCH_TOO_LARGE")["limit"] == "10000"
    nan = refused(stubs.runs.AppendSteps, runs_pb2.AppendStepsRequest(batch=batch(run_id, range(3), loss=math.nan)))
    assert assert_refusal(nan, Code.INVALID_ARGUMENT, "NON_FINITE_METRIC")["metric"] == "loss"
    page = refused(stubs.runs.ListRuns, runs_pb2.ListRunsRequest(page_size=10_001))
    assert_refusal(page, Code.INVALID_ARGUMENT, "PAGE_SIZE_TOO_LARGE")
    assert not state(stubs, run_id).HasField("last_step")


def test_not_found_and_already_exists(stubs: Stubs) -> None:
    missing = refused(stubs.runs.GetRunState, runs_pb2.GetRunStateRequest(run_id=str(uuid.uuid4())))
    assert_refusal(missing, Code.NOT_FOUND, "RUN_NOT_FOUND")
    run_id = open_run(stubs).state.run.run_id
    first = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(10))), timeout=10)
    other = refused(stubs.runs.AppendSteps, runs_pb2.AppendStepsRequest(batch=batch(run_id, range(10), loss=0.9)))
    assert_refusal(other, Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")
    series = stubs.runs.GetSeries(runs_pb2.GetSeriesRequest(run_id=run_id, min_position=first.position), timeout=10)
    assert list(series.metrics[0].values) == [0.5] * 10


def test_failed_precondition_superseded_finished_gate(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=10)
    zombie = refused(stubs.runs.AppendSteps, runs_pb2.AppendStepsRequest(batch=batch(run_id, range(5), attempt=1)))
    assert assert_refusal(zombie, Code.FAILED_PRECONDITION, "ATTEMPT_SUPERSEDED")["current_attempt"] == "2"
    finished = stubs.runs.FinishRun(
        runs_pb2.FinishRunRequest(run_id=run_id, attempt=2, status=common_pb2.RUN_STATUS_DONE), timeout=10
    )
    late = refused(stubs.runs.AppendSteps, runs_pb2.AppendStepsRequest(batch=batch(run_id, range(5), attempt=2)))
    assert_refusal(late, Code.FAILED_PRECONDITION, "RUN_FINISHED")
    family = f"fam-{uuid.uuid4().hex}"
    registered = stubs.registry.Register(
        registry_pb2.RegisterRequest(family=family, artifact_uri="s3://m/1", digest="a" * 64), timeout=10
    )
    gate = refused(
        stubs.registry.Promote,
        registry_pb2.PromoteRequest(
            family=family, version=1, verdict=registry_pb2.GateVerdict(passed=False, reason="eval loss rose")
        ),
    )
    recorded = assert_refusal(gate, Code.FAILED_PRECONDITION, "GATE_NOT_PASSED")["recorded_position"]
    after = state(stubs, run_id, finished.position)
    assert after.run.status == common_pb2.RUN_STATUS_DONE and not after.HasField("last_step")
    versions = stubs.registry.ListVersions(
        registry_pb2.ListVersionsRequest(family=family, min_position=int(recorded)), timeout=10
    )
    # The refusal is recorded in the history; nothing became current.
    assert versions.current == 0 and [p.kind for p in versions.history] == ["refused"]
    assert registered.position < int(recorded)


def test_aborted_when_current_version_moved(stubs: Stubs) -> None:
    family = f"fam-{uuid.uuid4().hex}"
    for digest in ("b" * 64, "c" * 64):
        stubs.registry.Register(
            registry_pb2.RegisterRequest(family=family, artifact_uri="s3://m", digest=digest), timeout=10
        )
    passed = registry_pb2.GateVerdict(passed=True, reason="ok")
    first = stubs.registry.Promote(
        registry_pb2.PromoteRequest(family=family, version=1, expected_current=0, verdict=passed), timeout=10
    )
    lost = refused(
        stubs.registry.Promote,
        registry_pb2.PromoteRequest(family=family, version=2, expected_current=0, verdict=passed),
    )
    assert assert_refusal(lost, Code.ABORTED, "CURRENT_VERSION_MOVED")["current"] == "1"
    current = stubs.registry.GetCurrent(
        registry_pb2.GetCurrentRequest(family=family, min_position=first.position), timeout=10
    )
    assert current.version.version == 1


def test_resource_exhausted_carries_what_remains(stubs: Stubs) -> None:
    run_id = open_run(stubs, cap=1_000, name="sft-demo").state.run.run_id
    held = stubs.spend.Reserve(
        spend_pb2.ReserveRequest(account=run_id, reservation_id="r1", amount_usd_micro=600), timeout=10
    )
    over = refused(
        stubs.spend.Reserve, spend_pb2.ReserveRequest(account=run_id, reservation_id="r2", amount_usd_micro=500)
    )
    metadata = assert_refusal(over, Code.RESOURCE_EXHAUSTED, "SPEND_CAP_EXCEEDED")
    assert metadata["remaining_usd_micro"] == "400" and metadata["account"] == run_id
    # People read dollars and the run's name; programs read the micro-dollars and id above.
    assert over.details() == f"reserving $0.0005 would cross the cap of run sft-demo ({run_id}): $0.0004 remains"
    account = stubs.spend.GetAccount(
        spend_pb2.GetAccountRequest(account=run_id, min_position=held.position), timeout=10
    ).account
    assert (account.pending_usd_micro, account.committed_usd_micro, account.remaining_usd_micro) == (600, 0, 400)


def test_a_parent_cap_refusal_names_the_parent_account_in_dollars(stubs: Stubs) -> None:
    parent = f"team-{key()}"
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=parent, cap_usd_micro=12_500_000), timeout=10)
    run_id = open_run(stubs, name="sft-demo", parent_account=parent).state.run.run_id
    over = refused(
        stubs.spend.Reserve,
        spend_pb2.ReserveRequest(account=run_id, reservation_id="r1", amount_usd_micro=50_000_000),
    )
    metadata = assert_refusal(over, Code.RESOURCE_EXHAUSTED, "SPEND_CAP_EXCEEDED")
    assert (metadata["account"], metadata["remaining_usd_micro"]) == (parent, "12500000")
    assert over.details() == f"reserving $50.00 would cross the cap of account {parent}: $12.50 remains"


def test_a_cap_below_the_spend_is_refused_in_dollars_naming_the_run(stubs: Stubs) -> None:
    run_id = open_run(stubs, cap=50_000_000, name="sft-demo").state.run.run_id
    stubs.spend.Reserve(
        spend_pb2.ReserveRequest(account=run_id, reservation_id="r1", amount_usd_micro=49_970_000), timeout=10
    )
    below = refused(stubs.spend.SetCap, spend_pb2.SetCapRequest(account=run_id, cap_usd_micro=12_500_000))
    metadata = assert_refusal(below, Code.FAILED_PRECONDITION, "CAP_BELOW_SPEND")
    assert metadata["minimum_cap_usd_micro"] == "49970000"
    assert below.details() == (f"cap $12.50 of run sft-demo ({run_id}) is below the $49.97 already committed and held")


def test_an_amount_above_the_limit_is_refused_in_dollars(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    huge = refused(
        stubs.spend.Reserve,
        spend_pb2.ReserveRequest(account=run_id, reservation_id="r1", amount_usd_micro=10**13 + 1),
    )
    assert assert_refusal(huge, Code.INVALID_ARGUMENT, "AMOUNT_TOO_LARGE")["field"] == "amount_usd_micro"
    assert huge.details() == "amount_usd_micro is above the limit of $10,000,000.00"


def test_unavailable_when_the_view_never_reaches_the_position(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    error = refused(
        stubs.runs.GetRunState, runs_pb2.GetRunStateRequest(run_id=run_id, min_position=10**12), timeout=0.5
    )
    assert assert_refusal(error, Code.UNAVAILABLE, "VIEW_NOT_CAUGHT_UP")["position"] == str(10**12)


def test_internal_for_an_unexpected_exception(served: Served, stubs: Stubs, monkeypatch) -> None:
    run_id = open_run(stubs).state.run.run_id

    def explode(*args, **kwargs):
        raise RuntimeError("secret detail that must not leak")

    monkeypatch.setattr(served.ledger, "append_steps", explode)
    error = refused(
        stubs.runs.AppendSteps,
        runs_pb2.AppendStepsRequest(batch=batch(run_id, range(3))),
        metadata=(("x-request-id", "req-123"),),
    )
    metadata = assert_refusal(error, Code.INTERNAL, "INTERNAL")
    assert metadata["request_id"] == "req-123"
    assert "secret" not in error.details() and "req-123" in error.details()
    assert ("x-request-id", "req-123") in tuple(error.trailing_metadata())
    monkeypatch.undo()
    # The server still serves, and the failed call recorded nothing.
    health = health_pb2_grpc.HealthStub(stubs.channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    assert not state(stubs, run_id).HasField("last_step")
    ok = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(3))), timeout=10)
    assert ok.last_step == 2 and not ok.duplicate


def test_an_error_on_a_streamed_batch_ends_the_stream_and_earlier_acks_stand(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    requests = [
        runs_pb2.RecordStepsRequest(sequence=1, batch=batch(run_id, range(0, 10))),
        runs_pb2.RecordStepsRequest(sequence=2, batch=batch(run_id, range(10, 20), loss=math.inf)),
        runs_pb2.RecordStepsRequest(sequence=3, batch=batch(run_id, range(20, 30))),
    ]
    call = stubs.runs.RecordSteps(iter(requests), timeout=10)
    acks = []
    with pytest.raises(grpc.RpcError) as caught:
        for ack in call:
            acks.append(ack)
    assert [a.sequence for a in acks] == [1]
    metadata = assert_refusal(caught.value, Code.INVALID_ARGUMENT, "NON_FINITE_METRIC")
    assert metadata["sequence"] == "2"
    after = stubs.runs.GetRunState(
        runs_pb2.GetRunStateRequest(run_id=run_id, min_position=acks[0].position), timeout=10
    ).state
    assert after.last_step == 9


def test_after_a_barrage_of_refusals_the_server_serves_and_nothing_acknowledged_changed(stubs: Stubs) -> None:
    run_id = open_run(stubs, cap=1_000).state.run.run_id
    appended = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(20))), timeout=10)
    handle = common_pb2.StateHandle(backend="local", uri="file:///c/19")
    stubs.runs.SaveCheckpoint(
        runs_pb2.SaveCheckpointRequest(run_id=run_id, attempt=1, step=19, handle=handle), timeout=10
    )
    held = stubs.spend.Reserve(
        spend_pb2.ReserveRequest(account=run_id, reservation_id="held", amount_usd_micro=300), timeout=10
    )
    before = stubs.runs.GetRunState(
        runs_pb2.GetRunStateRequest(run_id=run_id, min_position=held.position), timeout=10
    ).state
    refusals = [
        (stubs.runs.AppendSteps, runs_pb2.AppendStepsRequest(batch=batch(run_id, range(10), loss=0.1))),
        (stubs.runs.AppendSteps, runs_pb2.AppendStepsRequest(batch=batch(run_id, range(20, 30), loss=math.nan))),
        (stubs.runs.AppendSteps, runs_pb2.AppendStepsRequest(batch=batch(run_id, range(20, 30), attempt=7))),
        (
            stubs.runs.SaveCheckpoint,
            runs_pb2.SaveCheckpointRequest(
                run_id=run_id, attempt=1, step=19, handle=common_pb2.StateHandle(backend="local", uri="file:///other")
            ),
        ),
        (stubs.runs.FinishRun, runs_pb2.FinishRunRequest(run_id=run_id, attempt=1)),
        (stubs.spend.Reserve, spend_pb2.ReserveRequest(account=run_id, reservation_id="big", amount_usd_micro=5_000)),
        (stubs.spend.Commit, spend_pb2.CommitRequest(account=run_id, reservation_id="unknown", actual_usd_micro=1)),
        (stubs.spend.Reserve, spend_pb2.ReserveRequest(account=run_id, reservation_id="held", amount_usd_micro=301)),
    ]
    for call, request in refusals:
        error_info(refused(call, request))
    health = health_pb2_grpc.HealthStub(stubs.channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    after = stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=10).state
    before.ClearField("position")
    after.ClearField("position")
    assert after == before and after.last_step == 19 and after.spend.pending_usd_micro == 300
    retried = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(20))), timeout=10)
    assert retried.duplicate and retried.position == appended.position


def test_a_refusal_quoting_a_huge_request_still_fits_the_clients_metadata_limit(
    served: Served, stubs: Stubs, monkeypatch
) -> None:
    """A message and metadata that quote the request are cut to a few hundred bytes: the client
    gets the refusal's own code and ErrorInfo, not a RESOURCE_EXHAUSTED about trailer size."""
    error = ledger_errors.Invalid(
        "é" * 5_000, reason=Reason.INVALID_TEXT, field="ü" * 5_000, **{f"key{n}": "x" * 1_000 for n in range(40)}
    )

    def refuse(*args, **kwargs):
        raise error

    monkeypatch.setattr(served.ledger, "run_state", refuse)
    caught = refused(stubs.runs.GetRunState, runs_pb2.GetRunStateRequest(run_id="r"))
    metadata = assert_refusal(caught, Code.INVALID_ARGUMENT, "INVALID_TEXT")
    assert len(caught.details().encode()) <= 256 and caught.details().startswith("é")
    assert 0 < len(metadata) <= 8 and all(len(value.encode()) <= 96 for value in metadata.values())
