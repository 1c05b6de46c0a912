"""Checks on the generated trainledger.v1 protobuf/gRPC code."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

MODULES = ("common", "runs", "spend", "registry", "events")

SERVICES = {
    ("runs", "Runs"): [
        "OpenRun",
        "StartAttempt",
        "AppendSteps",
        "RecordSteps",
        "SaveCheckpoint",
        "FinishRun",
        "NoteSummary",
        "SetTags",
        "RecordReport",
        "GetRunState",
        "ListRuns",
        "GetSeries",
        "WatchRun",
        "LinkSession",
        "Heartbeat",
        "GetMetrics",
        "ListCheckpoints",
        "BestCheckpoint",
        "RetractRun",
        "RecordDataset",
        "PlanPrune",
        "DeleteCheckpoint",
    ],
    ("spend", "Spend"): [
        "OpenAccount",
        "SetCap",
        "Reserve",
        "ReservePlan",
        "Commit",
        "Release",
        "Charge",
        "GetAccount",
        "ListReservations",
        "RecordBilledUsage",
        "Reconcile",
        "AdjustToBill",
    ],
    ("registry", "Registry"): [
        "Register",
        "Promote",
        "Rollback",
        "GetCurrent",
        "ListVersions",
        "ListFamilies",
        "ListProtectedStates",
        "MoveAlias",
        "RetireFamily",
    ],
    ("events", "Events"): ["ReadEvents", "GetHead", "Verify", "VerifyStream"],
}

# (client streaming, server streaming) for the RPCs that stream.
STREAMING = {
    ("Runs", "RecordSteps"): (True, True),
    ("Runs", "WatchRun"): (False, True),
    ("Events", "ReadEvents"): (False, True),
    ("Events", "VerifyStream"): (False, True),
}


@pytest.mark.subprocess
def test_generated_code_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "generate_proto.py"), "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", MODULES)
def test_modules_import(name: str) -> None:
    pb2 = importlib.import_module(f"trainledger.v1.{name}_pb2")
    importlib.import_module(f"trainledger.v1.{name}_pb2_grpc")
    assert pb2.DESCRIPTOR.package == "trainledger.v1"


@pytest.mark.parametrize(("key", "rpcs"), list(SERVICES.items()), ids=[s for _, s in SERVICES])
def test_service_has_rpcs(key: tuple[str, str], rpcs: list[str]) -> None:
    module, service = key
    pb2 = importlib.import_module(f"trainledger.v1.{module}_pb2")
    grpc_mod = importlib.import_module(f"trainledger.v1.{module}_pb2_grpc")
    descriptor = pb2.DESCRIPTOR.services_by_name[service]
    assert sorted(descriptor.methods_by_name) == sorted(rpcs)
    for rpc in rpcs:
        method = descriptor.methods_by_name[rpc]
        assert (method.client_streaming, method.server_streaming) == STREAMING.get((service, rpc), (False, False)), rpc
    # The stub, servicer and registration helper exist for every service.
    assert hasattr(grpc_mod, f"{service}Stub")
    assert hasattr(grpc_mod, f"{service}Servicer")
    assert hasattr(grpc_mod, f"add_{service}Servicer_to_server")


def test_step_batch_round_trip() -> None:
    from trainledger.v1 import common_pb2

    batch = common_pb2.StepBatch(
        run_id="run-1",
        attempt=2,
        steps=[10, 11, 12, 13],
        tokens=[4096, 4096, 4100, 0],
        usd_micro=[1_250, 1_250, 1_251, 0],
        metrics=[
            common_pb2.MetricColumn(name="loss", values=[2.5, 2.25, 2.0, 1.875]),
            common_pb2.MetricColumn(name="eval/acc", values=[0.5, 0.625], index=[1, 3]),
        ],
    )
    data = batch.SerializeToString()
    decoded = common_pb2.StepBatch.FromString(data)
    assert decoded == batch
    assert list(decoded.steps) == [10, 11, 12, 13]
    assert list(decoded.metrics[1].index) == [1, 3]
    # proto3 packs repeated scalars: the steps field (3) is one length-delimited record (tag 0x1A).
    assert data.count(b"\x1a\x04\x0a\x0b\x0c\x0d") == 1


def test_optional_fields_track_presence() -> None:
    from trainledger.v1 import runs_pb2, spend_pb2

    assert not runs_pb2.OpenRunRequest().HasField("cap_usd_micro")
    assert runs_pb2.OpenRunRequest(cap_usd_micro=0).HasField("cap_usd_micro")
    assert not runs_pb2.StartAttemptRequest().HasField("resume_from_step")
    assert not runs_pb2.RunState().HasField("last_step")
    assert not spend_pb2.SetCapRequest(account="a").HasField("cap_usd_micro")
