"""RecordReport over the wire: a watcher of a finished run is told of a report recorded after the
finish as a change of `reports` alone (the status stays), and a retracted run refuses reports."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import struct_pb2

from tests.service.support import Stubs, error_info, open_run
from trainledger.v1 import common_pb2, runs_pb2


def _holdout(run_id: str, after: float) -> runs_pb2.RecordReportRequest:
    report = struct_pb2.Struct()
    report.update({"metric": "loss", "before": 2.5, "after": after})
    return runs_pb2.RecordReportRequest(run_id=run_id, kind="holdout", report=report)


def test_a_watcher_of_a_finished_run_sees_a_report_as_a_change_of_reports(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    stubs.runs.FinishRun(
        runs_pb2.FinishRunRequest(run_id=run_id, attempt=1, status=common_pb2.RUN_STATUS_DONE), timeout=10
    )
    stream = stubs.runs.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), timeout=60)
    try:
        first = next(stream)
        assert first.state.run.status == common_pb2.RUN_STATUS_DONE and not first.state.HasField("reports")
        recorded = stubs.runs.RecordReport(_holdout(run_id, 1.75), timeout=10)
        change = next(stream)
        assert change.position == recorded.position and change.event_type.endswith("ReportRecorded")
        assert "reports" in change.state_mask.paths and "run.status" not in change.state_mask.paths
        assert dict(change.state.reports["holdout"]) == {"metric": "loss", "before": 2.5, "after": 1.75}
    finally:
        stream.cancel()
    again = stubs.runs.RecordReport(_holdout(run_id, 1.75), timeout=10)
    assert again.position == recorded.position  # a retry is a duplicate


def test_a_retracted_run_refuses_reports(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    stubs.runs.RetractRun(runs_pb2.RetractRunRequest(run_id=run_id, reason="leaked eval data"), timeout=10)
    with pytest.raises(grpc.RpcError) as raised:
        stubs.runs.RecordReport(_holdout(run_id, 1.75), timeout=10)
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_info(raised.value).reason == "RUN_RETRACTED"
