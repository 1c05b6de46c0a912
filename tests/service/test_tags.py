"""Run tags over the wire: SetTags sets and removes them, RunState and ListRuns carry them, a
search finds runs by them, and every bound is a clear refusal."""

from __future__ import annotations

import uuid

import grpc
import pytest

from tests.service.support import Stubs, error_info, open_run
from trainledger.v1 import common_pb2, runs_pb2


def set_tags(
    stubs: Stubs, run_id: str, tags: dict[str, str], remove: tuple[str, ...] = (), request_id: str = ""
) -> int:
    metadata = (("x-request-id", request_id or f"req-{uuid.uuid4().hex}"),)
    request = runs_pb2.SetTagsRequest(run_id=run_id, set=tags, remove=list(remove))
    return int(stubs.runs.SetTags(request, metadata=metadata, timeout=30).position)


def refused(stubs: Stubs, run_id: str, tags: dict[str, str], remove: tuple[str, ...] = ()) -> tuple[str, str, dict]:
    with pytest.raises(grpc.RpcError) as caught:
        set_tags(stubs, run_id, tags, remove)
    info = error_info(caught.value)
    return caught.value.code().name, info.reason, dict(info.metadata)


def state(stubs: Stubs, run_id: str, position: int) -> runs_pb2.RunState:
    request = runs_pb2.GetRunStateRequest(run_id=run_id, min_position=position)
    return stubs.runs.GetRunState(request, timeout=30).state


def test_tags_are_set_changed_and_removed_and_read_back(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    set_tags(stubs, run_id, {"team": "vision", "sweep/lr": "3e-4", "stage": "a"})
    position = set_tags(stubs, run_id, {"stage": "b"}, remove=("team",))
    assert dict(state(stubs, run_id, position).tags) == {"sweep/lr": "3e-4", "stage": "b"}
    listed = stubs.runs.ListRuns(runs_pb2.ListRunsRequest(min_position=position), timeout=30).runs
    assert {run.run_id: dict(run.tags) for run in listed}[run_id] == {"sweep/lr": "3e-4", "stage": "b"}


def test_tags_may_change_after_the_finish_but_not_on_a_retracted_run(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    finish = runs_pb2.FinishRunRequest(run_id=run_id, attempt=1, status=common_pb2.RUN_STATUS_DONE)
    stubs.runs.FinishRun(finish, timeout=30)
    position = set_tags(stubs, run_id, {"verdict": "keep"})
    assert dict(state(stubs, run_id, position).tags) == {"verdict": "keep"}
    stubs.runs.RetractRun(runs_pb2.RetractRunRequest(run_id=run_id, reason="bad data"), timeout=30)
    assert refused(stubs, run_id, {"verdict": "drop"})[:2] == ("FAILED_PRECONDITION", "RUN_RETRACTED")


def test_the_same_request_again_answers_as_the_first_time(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    first = set_tags(stubs, run_id, {"team": "vision"}, request_id="req-tags-1")
    later = set_tags(stubs, run_id, {"team": "audio"})
    assert set_tags(stubs, run_id, {"team": "vision"}, request_id="req-tags-1") == first
    with pytest.raises(grpc.RpcError) as caught:
        set_tags(stubs, run_id, {"team": "text"}, request_id="req-tags-1")
    assert error_info(caught.value).reason == "EXISTS_WITH_DIFFERENT_PAYLOAD"
    assert dict(state(stubs, run_id, later).tags) == {"team": "audio"}


@pytest.mark.parametrize(
    ("tags", "remove", "reason", "key"),
    [
        ({"has space": "x"}, (), "INVALID_TAG", "has space"),
        ({"": "x"}, (), "INVALID_TAG", ""),
        ({"k" * 129: "x"}, (), "INVALID_TAG", "k" * 128),
        ({"ok": "v" * 257}, (), "INVALID_TAG", "ok"),
        ({"ok": "line\nbreak"}, (), "INVALID_TAG", "ok"),
        ({}, ("bad key",), "INVALID_TAG", "bad key"),
        ({"both": "x"}, ("both",), "INVALID_TAG", "both"),
        ({f"k{i}": "x" for i in range(40)}, tuple(f"r{i}" for i in range(25)), "TOO_MANY_TAGS", None),
        ({}, (), "MISSING_FIELD", None),
    ],
)
def test_bad_tags_are_refused_with_their_reason(stubs: Stubs, tags, remove, reason, key) -> None:
    run_id = open_run(stubs).state.run.run_id
    code, got, metadata = refused(stubs, run_id, tags, remove)
    assert (code, got) == ("INVALID_ARGUMENT", reason)
    if key is not None:
        assert key.startswith(metadata["key"].rstrip("…")) and len(metadata["key"]) > 64 or metadata["key"] == key


def test_a_run_carries_at_most_64_tags(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    set_tags(stubs, run_id, {f"a{i}": "x" for i in range(60)})
    code, reason, metadata = refused(stubs, run_id, {f"b{i}": "x" for i in range(5)})
    assert (code, reason, metadata["limit"]) == ("INVALID_ARGUMENT", "TOO_MANY_TAGS", "64")
    # Removing as many as are set keeps the count.
    position = set_tags(stubs, run_id, {f"b{i}": "x" for i in range(5)}, remove=tuple(f"a{i}" for i in range(5)))
    assert len(state(stubs, run_id, position).tags) == 60


def test_an_unknown_run_is_not_found(stubs: Stubs) -> None:
    assert refused(stubs, str(uuid.uuid4()), {"team": "x"})[:2] == ("NOT_FOUND", "RUN_NOT_FOUND")
