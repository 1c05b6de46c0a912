"""The whole role matrix over the wire: every RPC x every role x (unscoped, scoped to the account
asked about, scoped to another account). The expected outcome of each cell is written out below,
not read from services.runtime.auth.

A cell is three characters, one per token: unscoped, scoped to team-a asking about team-a's
things, scoped to team-a asking about team-b's things. "+" is let through (whatever the call
then answers: OK or a business refusal, never UNAUTHENTICATED or PERMISSION_DENIED), "R" is
PERMISSION_DENIED ROLE_NOT_ALLOWED, "S" is PERMISSION_DENIED OUTSIDE_SCOPE.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2

from ledger import Ledger
from tests.service.support import Served, Stubs, error_info
from trainledger.v1 import common_pb2, events_pb2, registry_pb2, runs_pb2, spend_pb2

ROLES = ("trainer", "operator", "auditor", "admin")

#  method                         trainer operator auditor admin
MATRIX = [
    ("Runs/OpenRun", "++S", "++S", "RRR", "++S"),
    ("Runs/StartAttempt", "++S", "++S", "RRR", "++S"),
    ("Runs/AppendSteps", "++S", "++S", "RRR", "++S"),
    ("Runs/RecordSteps", "++S", "++S", "RRR", "++S"),
    ("Runs/SaveCheckpoint", "++S", "++S", "RRR", "++S"),
    ("Runs/FinishRun", "++S", "++S", "RRR", "++S"),
    ("Runs/NoteSummary", "++S", "++S", "RRR", "++S"),
    ("Runs/RecordReport", "++S", "++S", "RRR", "++S"),
    ("Runs/GetRunState", "++S", "++S", "++S", "++S"),
    ("Runs/ListRuns", "RRR", "++S", "++S", "++S"),
    ("Runs/GetSeries", "++S", "++S", "++S", "++S"),
    ("Runs/WatchRun", "++S", "++S", "++S", "++S"),
    ("Runs/LinkSession", "++S", "++S", "RRR", "++S"),
    ("Runs/GetMetrics", "++S", "++S", "++S", "++S"),
    ("Runs/ListCheckpoints", "++S", "++S", "++S", "++S"),
    ("Runs/BestCheckpoint", "++S", "++S", "++S", "++S"),
    ("Runs/RetractRun", "RRR", "++S", "RRR", "++S"),
    ("Runs/RecordDataset", "++S", "++S", "RRR", "++S"),
    ("Runs/PlanPrune", "++S", "++S", "++S", "++S"),
    ("Runs/DeleteCheckpoint", "++S", "++S", "RRR", "++S"),
    ("Runs/Heartbeat", "++S", "++S", "RRR", "++S"),
    ("Runs/SetTags", "++S", "++S", "RRR", "++S"),
    ("Spend/OpenAccount", "RRR", "++S", "RRR", "++S"),
    ("Spend/SetCap", "RRR", "++S", "RRR", "++S"),
    ("Spend/Reserve", "++S", "++S", "RRR", "++S"),
    ("Spend/ReservePlan", "++S", "++S", "RRR", "++S"),
    ("Spend/Commit", "++S", "++S", "RRR", "++S"),
    ("Spend/Release", "++S", "++S", "RRR", "++S"),
    ("Spend/Charge", "++S", "++S", "RRR", "++S"),
    ("Spend/GetAccount", "++S", "++S", "++S", "++S"),
    ("Spend/ListReservations", "++S", "++S", "++S", "++S"),
    ("Spend/RecordBilledUsage", "RRR", "+SS", "RRR", "+SS"),
    ("Spend/Reconcile", "RRR", "+SS", "+SS", "+SS"),
    ("Spend/AdjustToBill", "RRR", "+SS", "RRR", "+SS"),
    ("Registry/Register", "RRR", "+SS", "RRR", "+SS"),
    ("Registry/Promote", "RRR", "+SS", "RRR", "+SS"),
    ("Registry/Rollback", "RRR", "+SS", "RRR", "+SS"),
    ("Registry/MoveAlias", "RRR", "+SS", "RRR", "+SS"),
    ("Registry/RetireFamily", "RRR", "+SS", "RRR", "+SS"),
    ("Registry/GetCurrent", "RRR", "+SS", "+SS", "+SS"),
    ("Registry/ListVersions", "RRR", "+SS", "+SS", "+SS"),
    ("Registry/ListFamilies", "RRR", "+SS", "+SS", "+SS"),
    ("Registry/ListProtectedStates", "RRR", "+SS", "RRR", "+SS"),
    ("Events/ReadEvents", "RRR", "RRR", "+SS", "+SS"),
    ("Events/GetHead", "RRR", "RRR", "+SS", "+SS"),
    ("Events/Verify", "RRR", "RRR", "+SS", "+SS"),
    ("Events/VerifyStream", "RRR", "RRR", "+SS", "+SS"),
]
EXPECTED = {"+": None, "R": "ROLE_NOT_ALLOWED", "S": "OUTSIDE_SCOPE"}
CELLS = [
    (method, role, variant, cell[index])
    for method, *cells in MATRIX
    for role, cell in zip(ROLES, cells, strict=True)
    for index, variant in enumerate(("unscoped", "in-scope", "out-of-scope"))
]


class World:
    """A served ledger with two team accounts, a run under each, and a token per role and scope."""

    def __init__(self, path: str) -> None:
        self.ledger = Ledger.open(path)
        who = {"principal": "setup", "request_id": ""}
        for team in ("team-a", "team-b"):
            self.ledger.open_account(account=team, **who)
        self.runs = {}
        self.spare_runs = {}  # Retracted by the RetractRun cells: the other cells' run stays writable.
        for team in ("team-a", "team-b"):
            receipt = self.ledger.open_run(
                run_key=f"run-{team}", name=team, spec={}, parent_account=team, cap_usd_micro=None, **who
            )
            self.ledger.start_attempt(run_id=receipt.run_id, attempt_id=f"attempt-{team}", label="", **who)
            self.runs[team] = receipt.run_id
            spare = self.ledger.open_run(
                run_key=f"spare-{team}", name=team, spec={}, parent_account=team, cap_usd_micro=None, **who
            )
            self.spare_runs[team] = spare.run_id
        self.tokens = {}
        for role in ROLES:
            self.tokens[role, "unscoped"] = self.ledger.issue_token(holder=f"{role}-all", role=role, **who).bearer
            scoped = self.ledger.issue_token(holder=f"{role}-a", role=role, account="team-a", **who).bearer
            self.tokens[role, "in-scope"] = self.tokens[role, "out-of-scope"] = scoped
        self.served = Served(self.ledger)

    def close(self) -> None:
        self.served.close()
        self.ledger.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    built = World(str(tmp_path_factory.mktemp("roles") / "ledger.db"))
    try:
        yield built
    finally:
        built.close()


def _unique() -> str:
    return uuid.uuid4().hex[:12]


def _calls(stubs: Stubs, team: str, run_id: str, spare_run_id: str) -> dict[str, Callable[[Any], Any]]:
    """One call per method about `team`'s things; each takes the call's metadata."""
    basis = common_pb2.CostBasis(price_sheet="test")
    batch = common_pb2.StepBatch(run_id=run_id, attempt=1, steps=[1], tokens=[1])

    def stream(call: Any, request: Any, metadata: Any) -> Any:
        try:
            return next(iter(call(request, metadata=metadata, timeout=0.5)))
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                return None  # Let through: the stream waited for something to send.
            raise

    r, s, g, e = stubs.runs, stubs.spend, stubs.registry, stubs.events
    return {
        "Runs/OpenRun": lambda m: r.OpenRun(
            runs_pb2.OpenRunRequest(run_key=f"k-{_unique()}", name="n", parent_account=team), metadata=m
        ),
        "Runs/StartAttempt": lambda m: r.StartAttempt(
            runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id=_unique()), metadata=m
        ),
        "Runs/AppendSteps": lambda m: r.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch), metadata=m),
        "Runs/RecordSteps": lambda m: list(
            r.RecordSteps(iter([runs_pb2.RecordStepsRequest(sequence=1, batch=batch)]), metadata=m, timeout=5)
        ),
        "Runs/SaveCheckpoint": lambda m: r.SaveCheckpoint(
            runs_pb2.SaveCheckpointRequest(
                run_id=run_id,
                attempt=1,
                step=1,
                handle=common_pb2.StateHandle(backend="s3", uri="s3://x", fidelity="weights"),
            ),
            metadata=m,
        ),
        "Runs/FinishRun": lambda m: r.FinishRun(
            runs_pb2.FinishRunRequest(run_id=run_id, attempt=1, status=common_pb2.RUN_STATUS_DONE), metadata=m
        ),
        "Runs/NoteSummary": lambda m: r.NoteSummary(runs_pb2.NoteSummaryRequest(run_id=run_id), metadata=m),
        "Runs/RecordReport": lambda m: r.RecordReport(
            runs_pb2.RecordReportRequest(run_id=run_id, kind="notes"), metadata=m
        ),
        "Runs/GetRunState": lambda m: r.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), metadata=m),
        "Runs/ListRuns": lambda m: r.ListRuns(runs_pb2.ListRunsRequest(page_size=1, account=team), metadata=m),
        "Runs/GetSeries": lambda m: r.GetSeries(runs_pb2.GetSeriesRequest(run_id=run_id), metadata=m),
        "Runs/WatchRun": lambda m: stream(r.WatchRun, runs_pb2.WatchRunRequest(run_id=run_id), m),
        "Runs/GetMetrics": lambda m: r.GetMetrics(runs_pb2.GetMetricsRequest(run_id=run_id), metadata=m),
        "Runs/ListCheckpoints": lambda m: r.ListCheckpoints(runs_pb2.ListCheckpointsRequest(run_id=run_id), metadata=m),
        "Runs/BestCheckpoint": lambda m: r.BestCheckpoint(runs_pb2.BestCheckpointRequest(run_id=run_id), metadata=m),
        "Runs/RetractRun": lambda m: r.RetractRun(
            runs_pb2.RetractRunRequest(run_id=spare_run_id, reason="a test of roles"), metadata=m
        ),
        "Runs/RecordDataset": lambda m: r.RecordDataset(
            runs_pb2.RecordDatasetRequest(
                run_id=run_id,
                dataset=runs_pb2.Dataset(
                    role=runs_pb2.DATASET_ROLE_TRAIN, digest="sha256:" + "1" * 64, format="sft", rows=1
                ),
            ),
            metadata=m,
        ),
        "Runs/PlanPrune": lambda m: r.PlanPrune(runs_pb2.PlanPruneRequest(run_id=run_id), metadata=m),
        "Runs/DeleteCheckpoint": lambda m: r.DeleteCheckpoint(
            runs_pb2.DeleteCheckpointRequest(run_id=run_id, attempt=1, step=1), metadata=m
        ),
        "Runs/Heartbeat": lambda m: r.Heartbeat(runs_pb2.HeartbeatRequest(run_id=run_id, attempt=1), metadata=m),
        "Runs/SetTags": lambda m: r.SetTags(runs_pb2.SetTagsRequest(run_id=run_id, set={"team": "a"}), metadata=m),
        "Runs/LinkSession": lambda m: r.LinkSession(
            runs_pb2.LinkSessionRequest(run_id=run_id, provider="tinker", session_id=_unique()), metadata=m
        ),
        "Spend/RecordBilledUsage": lambda m: s.RecordBilledUsage(
            spend_pb2.RecordBilledUsageRequest(
                provider="tinker",
                lines=[
                    spend_pb2.BilledLine(
                        line_id=_unique(),
                        interval_start=timestamp_pb2.Timestamp(seconds=1_800_000_000),
                        interval_end=timestamp_pb2.Timestamp(seconds=1_800_003_600),
                        amount_usd_micro=1,
                        run_id=run_id,
                    )
                ],
            ),
            metadata=m,
        ),
        "Spend/Reconcile": lambda m: s.Reconcile(spend_pb2.ReconcileRequest(page_size=1), metadata=m),
        "Spend/AdjustToBill": lambda m: s.AdjustToBill(spend_pb2.AdjustToBillRequest(run_id=run_id), metadata=m),
        "Spend/OpenAccount": lambda m: s.OpenAccount(
            spend_pb2.OpenAccountRequest(account=f"sub-{_unique()}", parent=team), metadata=m
        ),
        "Spend/SetCap": lambda m: s.SetCap(spend_pb2.SetCapRequest(account=run_id), metadata=m),
        "Spend/ReservePlan": lambda m: s.ReservePlan(
            spend_pb2.ReservePlanRequest(account=run_id, reservation_id=_unique(), amount_usd_micro=1, basis=basis),
            metadata=m,
        ),
        "Spend/Reserve": lambda m: s.Reserve(
            spend_pb2.ReserveRequest(account=run_id, reservation_id=_unique(), amount_usd_micro=1, basis=basis),
            metadata=m,
        ),
        "Spend/Commit": lambda m: s.Commit(
            spend_pb2.CommitRequest(account=run_id, reservation_id=_unique(), actual_usd_micro=1), metadata=m
        ),
        "Spend/Release": lambda m: s.Release(
            spend_pb2.ReleaseRequest(account=run_id, reservation_id=_unique()), metadata=m
        ),
        "Spend/Charge": lambda m: s.Charge(
            spend_pb2.ChargeRequest(account=run_id, charge_id=_unique(), amount_usd_micro=1, basis=basis, reason="r"),
            metadata=m,
        ),
        "Spend/GetAccount": lambda m: s.GetAccount(spend_pb2.GetAccountRequest(account=team), metadata=m),
        "Spend/ListReservations": lambda m: s.ListReservations(
            spend_pb2.ListReservationsRequest(account=run_id), metadata=m
        ),
        "Registry/Register": lambda m: g.Register(
            registry_pb2.RegisterRequest(family="fam", artifact_uri="s3://m", digest="sha256:" + "0" * 64), metadata=m
        ),
        "Registry/Promote": lambda m: g.Promote(
            registry_pb2.PromoteRequest(family="fam", version=1, verdict=registry_pb2.GateVerdict(passed=False)),
            metadata=m,
        ),
        "Registry/Rollback": lambda m: g.Rollback(
            registry_pb2.RollbackRequest(family="fam", version=1, reason="r"), metadata=m
        ),
        "Registry/MoveAlias": lambda m: g.MoveAlias(
            registry_pb2.MoveAliasRequest(family="fam-unknown", alias="staging", version=1), metadata=m
        ),
        "Registry/RetireFamily": lambda m: g.RetireFamily(
            registry_pb2.RetireFamilyRequest(family="fam-unknown", reason="r"), metadata=m
        ),
        "Registry/GetCurrent": lambda m: g.GetCurrent(registry_pb2.GetCurrentRequest(family="fam"), metadata=m),
        "Registry/ListVersions": lambda m: g.ListVersions(registry_pb2.ListVersionsRequest(family="fam"), metadata=m),
        "Registry/ListFamilies": lambda m: g.ListFamilies(registry_pb2.ListFamiliesRequest(), metadata=m),
        "Registry/ListProtectedStates": lambda m: g.ListProtectedStates(
            registry_pb2.ListProtectedStatesRequest(), metadata=m
        ),
        "Events/ReadEvents": lambda m: stream(e.ReadEvents, events_pb2.ReadEventsRequest(limit=1), m),
        "Events/GetHead": lambda m: e.GetHead(events_pb2.GetHeadRequest(), metadata=m),
        "Events/Verify": lambda m: e.Verify(events_pb2.VerifyRequest(), metadata=m),
        "Events/VerifyStream": lambda m: stream(e.VerifyStream, events_pb2.VerifyRequest(), m),
    }


def test_the_matrix_lists_every_rpc_of_every_service() -> None:
    methods = {
        f"{service.name}/{method.name}"
        for module in (runs_pb2, spend_pb2, registry_pb2, events_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }
    assert {method for method, *_ in MATRIX} == methods


@pytest.mark.parametrize("method,role,variant,cell", CELLS, ids=[f"{m}-{r}-{v}" for m, r, v, _ in CELLS])
def test_role_matrix(world: World, method: str, role: str, variant: str, cell: str) -> None:
    team = "team-b" if variant == "out-of-scope" else "team-a"
    call = _calls(world.served.stubs, team, world.runs[team], world.spare_runs[team])[method]
    metadata = (("authorization", f"Bearer {world.tokens[role, variant]}"),)
    try:
        call(metadata)
        outcome = None
    except grpc.RpcError as error:
        code = error.code()
        if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
            assert code == grpc.StatusCode.PERMISSION_DENIED, error
            outcome = error_info(error).reason
        else:
            outcome = None  # A business answer: the call was let through.
    assert outcome == EXPECTED[cell]


def test_a_role_refusal_is_logged_with_the_tokens_principal_and_id(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """A valid token refused by its role is logged as its holder with its token id, never as
    "anonymous", and never with its secret."""
    import logging
    import time

    from ledger.domain.tokens import parse_bearer

    bearer = world.tokens["auditor", "unscoped"]
    token_id, secret = parse_bearer(bearer)
    stubs = world.served.stubs
    request_id = f"refused-{_unique()}"
    metadata = (("authorization", f"Bearer {bearer}"), ("x-request-id", request_id))
    with caplog.at_level(logging.INFO, logger="trainledger.services"):
        with pytest.raises(grpc.RpcError) as refused:
            stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=_unique()), timeout=10, metadata=metadata)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        deadline = time.monotonic() + 10
        while not [r for r in caplog.records if getattr(r, "request_id", "") == request_id]:
            assert time.monotonic() < deadline, "no log line for the refused call"
            time.sleep(0.02)
    (line,) = [r for r in caplog.records if getattr(r, "request_id", "") == request_id]
    assert (line.principal, line.token_id, line.reason) == ("auditor-all", token_id, "ROLE_NOT_ALLOWED")
    assert secret not in line.getMessage() and secret not in str(vars(line))
