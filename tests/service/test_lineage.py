"""Lineage over the wire: a run opened from another run's checkpoint records it (OpenRun's
source_checkpoint), its state names the source run and step, and the source run's state lists the
runs started from it. A source that does not exist is NOT_FOUND with its reason, a run is never
its own source, a source never changes, and nothing is written for a refused open."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from tests.service.support import Stubs, batch, error_info, key, open_run
from trainledger.v1 import common_pb2, runs_pb2


def _trained(stubs: Stubs, name: str, steps: int = 10, saved: tuple[int, ...] = (4, 9)) -> str:
    """A run with `steps` steps and a checkpoint at each step of `saved`."""
    run_id = open_run(stubs, name=name).state.run.run_id
    stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(steps))), timeout=10)
    for step in saved:
        handle = common_pb2.StateHandle(backend="local", uri=f"file:///ckpt/{name}/{step}", fidelity="weights")
        stubs.runs.SaveCheckpoint(
            runs_pb2.SaveCheckpointRequest(run_id=run_id, attempt=1, step=step, handle=handle), timeout=10
        )
    return run_id


def _open_from(stubs: Stubs, source_run_id: str, step: int, *, run_key: str = "", uri: str = "", name: str = ""):
    source = runs_pb2.RunSourceCheckpoint(run_id=source_run_id, step=step, uri=uri)
    request = runs_pb2.OpenRunRequest(run_key=run_key or key(), name=name, source_checkpoint=source)
    return stubs.runs.OpenRun(request, timeout=10)


def _state(stubs: Stubs, run_id: str, position: int = 0) -> runs_pb2.RunState:
    request = runs_pb2.GetRunStateRequest(run_id=run_id, min_position=position)
    return stubs.runs.GetRunState(request, timeout=10).state


def _refusal(stubs: Stubs, source_run_id: str, step: int, **fields: Any) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    """How an OpenRun from (source_run_id, step) is refused."""
    with pytest.raises(grpc.RpcError) as caught:
        _open_from(stubs, source_run_id, step, **fields)
    info = error_info(caught.value)
    return caught.value.code(), info.reason, dict(info.metadata)


def test_a_run_from_a_checkpoint_names_its_source_and_the_source_lists_it(stubs: Stubs) -> None:
    base = _trained(stubs, "lineage-base")
    child = _open_from(stubs, base, 9, uri="file:///ckpt/lineage-base/9", name="lineage-child")
    assert child.created
    source = child.state.source
    assert (source.run_id, source.name, source.step, source.uri) == (
        base,
        "lineage-base",
        9,
        "file:///ckpt/lineage-base/9",
    )
    other = _open_from(stubs, base, 4, name="lineage-other")
    state = _state(stubs, base, other.position)
    assert [(c.name, c.step, c.run_id) for c in state.children] == [
        ("lineage-other", 4, other.state.run.run_id),
        ("lineage-child", 9, child.state.run.run_id),
    ]
    assert state.child_count == 2 and not state.HasField("source")
    assert state.children[1].uri == "file:///ckpt/lineage-base/9" and state.children[1].HasField("opened_at")
    assert not child.state.children and child.state.child_count == 0


def test_opening_again_with_the_same_source_is_the_same_run(stubs: Stubs) -> None:
    base = _trained(stubs, "lineage-again")
    run_key = key()
    first = _open_from(stubs, base, 4, run_key=run_key)
    again = _open_from(stubs, base, 4, run_key=run_key)
    assert (first.created, again.created, again.position) == (True, False, first.position)
    assert again.state.source.step == 4
    # Without a source, an existing run keeps the one it was opened with.
    plain = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=run_key), timeout=10)
    assert plain.state.source.run_id == base
    code, reason, metadata = _refusal(stubs, base, 9, run_key=run_key)
    assert (code, reason) == (grpc.StatusCode.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")
    assert metadata["field"] == "source_checkpoint"


def test_a_source_that_does_not_exist_is_not_found_and_nothing_is_written(stubs: Stubs) -> None:
    base = _trained(stubs, "lineage-missing")
    unknown = "00000000-0000-5000-8000-000000000000"
    for source, step, wanted in ((unknown, 4, "RUN_NOT_FOUND"), (base, 5, "CHECKPOINT_NOT_FOUND")):
        run_key = key()
        code, reason, metadata = _refusal(stubs, source, step, run_key=run_key)
        assert (code, reason, metadata["field"]) == (grpc.StatusCode.NOT_FOUND, wanted, "source_checkpoint")
        listed = stubs.runs.ListRuns(runs_pb2.ListRunsRequest(name_contains=run_key), timeout=10).runs
        assert list(listed) == []
    assert _state(stubs, base).child_count == 0


def test_a_run_is_never_its_own_source(stubs: Stubs) -> None:
    run_key = key()
    opened = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=run_key), timeout=10).state.run.run_id
    stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=opened, attempt_id="a1"), timeout=10)
    stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(opened, range(5))), timeout=10)
    handle = common_pb2.StateHandle(backend="local", uri="file:///ckpt/self/4", fidelity="weights")
    stubs.runs.SaveCheckpoint(
        runs_pb2.SaveCheckpointRequest(run_id=opened, attempt=1, step=4, handle=handle), timeout=10
    )
    code, reason, metadata = _refusal(stubs, opened, 4, run_key=run_key)
    assert (code, reason, metadata["field"]) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", "source_checkpoint")


def test_a_source_is_bounded(stubs: Stubs) -> None:
    base = _trained(stubs, "lineage-bounds")
    code, reason, _ = _refusal(stubs, base, 4, uri="x" * 2_049)
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "STRING_TOO_LONG")
    code, reason, _ = _refusal(stubs, base, -1)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    code, reason, _ = _refusal(stubs, "not a run id", 4)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
