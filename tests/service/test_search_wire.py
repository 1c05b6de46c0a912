"""A run search over the wire: ListRuns with `where`, `order_by` and `descending` answers the runs
the search selects, in its order, a page at a time, its other filters ANDed in; a query refused is
INVALID_ARGUMENT with the position of the fault."""

from __future__ import annotations

import time
import uuid

import grpc
import pytest
from google.protobuf import struct_pb2

from ledger.views.search.grammar import QUERY_DEPTH_MAX
from tests.service.support import Stubs, error_info, key, open_run
from trainledger.v1 import common_pb2, runs_pb2


def opened(stubs: Stubs, name: str, lr: float, tags: dict[str, str] | None = None) -> tuple[str, int]:
    spec = struct_pb2.Struct()
    spec.update({"lr": lr})
    run_id = open_run(stubs, name=name, spec=spec).state.run.run_id
    request = runs_pb2.SetTagsRequest(run_id=run_id, set=tags or {"lr": str(lr)})
    return run_id, int(stubs.runs.SetTags(request, timeout=30).position)


def listed(stubs: Stubs, **fields: object) -> tuple[list[str], str]:
    page = stubs.runs.ListRuns(runs_pb2.ListRunsRequest(**fields), timeout=30)
    return [run.run_id for run in page.runs], page.next_page_token


def refusal(stubs: Stubs, **fields: object) -> tuple[str, str, dict[str, str]]:
    with pytest.raises(grpc.RpcError) as caught:
        stubs.runs.ListRuns(runs_pb2.ListRunsRequest(**fields), timeout=30)
    info = error_info(caught.value)
    return caught.value.code().name, info.reason, dict(info.metadata)


def test_a_search_finds_runs_by_tag_and_forgets_a_removed_tag(stubs: Stubs) -> None:
    team = f"t{uuid.uuid4().hex[:8]}"
    vision, _ = opened(stubs, "v", 0.1, {"team": team})
    _, position = opened(stubs, "a", 0.2, {"team": team + "-audio"})
    assert listed(stubs, where=f"tags.team = '{team}'", min_position=position) == ([vision], "")
    remove = runs_pb2.SetTagsRequest(run_id=vision, remove=["team"])
    position = stubs.runs.SetTags(remove, timeout=30).position
    assert listed(stubs, where=f"tags.team = '{team}'", min_position=position) == ([], "")


def test_a_search_pages_in_its_order_with_offset_tokens(stubs: Stubs) -> None:
    sweep = f"s{uuid.uuid4().hex[:8]}"
    runs = {}
    for lr in (0.3, 0.1, 0.5, 0.2, 0.4):
        run_id, position = opened(stubs, "x", lr, {"sweep": sweep})
        runs[lr] = run_id
    where = f"tags.sweep = '{sweep}'"
    found, token = listed(stubs, where=where, order_by="spec.lr", page_size=2, min_position=position)
    pages = [found]
    while token:
        found, token = listed(stubs, where=where, order_by="spec.lr", page_size=2, page_token=token)
        pages.append(found)
    assert pages == [[runs[0.1], runs[0.2]], [runs[0.3], runs[0.4]], [runs[0.5]]]
    descending, _ = listed(stubs, where=where, order_by="spec.lr", descending=True)
    assert descending == [runs[0.5], runs[0.4], runs[0.3], runs[0.2], runs[0.1]]
    assert listed(stubs, where=where, order_by="spec.lr desc", page_size=1)[0] == [runs[0.5]]


def test_the_other_filters_are_anded_with_the_search(stubs: Stubs) -> None:
    sweep = f"s{uuid.uuid4().hex[:8]}"
    first, _ = opened(stubs, f"alpha-{sweep}", 0.1, {"sweep": sweep})
    opened(stubs, f"alpha-{sweep}-outside", 0.1, {"sweep": "other"})
    second, position = opened(stubs, f"beta-{sweep}", 0.2, {"sweep": sweep})
    finish = runs_pb2.FinishRunRequest(run_id=second, attempt=1, status=common_pb2.RUN_STATUS_DONE)
    position = stubs.runs.FinishRun(finish, timeout=30).position
    where = f"tags.sweep = '{sweep}'"
    assert listed(stubs, where=where, name_contains="ALPHA", min_position=position)[0] == [first]
    assert listed(stubs, where=where, status=common_pb2.RUN_STATUS_DONE)[0] == [second]
    assert listed(stubs, where=where, run_id_prefix=first[:8])[0] == [first]


def test_a_refused_query_carries_the_position_of_its_fault(stubs: Stubs) -> None:
    code, reason, metadata = refusal(stubs, where="name = 'a' and colour = 1")
    assert (code, reason, metadata["position"]) == ("INVALID_ARGUMENT", "INVALID_QUERY", "16")
    code, reason, metadata = refusal(stubs, order_by="colour")
    assert (code, reason, metadata["position"]) == ("INVALID_ARGUMENT", "INVALID_QUERY", "1")
    code, reason, metadata = refusal(stubs, where="not " * (QUERY_DEPTH_MAX + 1) + "attempts = 1")
    assert (code, reason, metadata["position"]) == ("INVALID_ARGUMENT", "QUERY_TOO_LARGE", "1")


def test_tokens_of_a_search_and_of_a_listing_are_not_interchangeable(stubs: Stubs) -> None:
    for _ in range(3):
        _, position = opened(stubs, "t", 0.1)
    _, search_token = listed(stubs, order_by="name", page_size=1, min_position=position)
    _, listing_token = listed(stubs, page_size=1)
    assert search_token and listing_token
    assert refusal(stubs, page_size=1, page_token=search_token)[1] == "INVALID_PAGE_TOKEN"
    assert refusal(stubs, order_by="name", page_size=1, page_token=listing_token)[1] == "INVALID_PAGE_TOKEN"


def test_a_lost_run_is_found_by_its_status(stubs: Stubs) -> None:
    run_id = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key()), timeout=10).state.run.run_id
    start = runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1", lease_s=2)
    stubs.runs.StartAttempt(start, timeout=10)
    deadline = time.monotonic() + 10
    while stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=10).state.run.status != (
        common_pb2.RUN_STATUS_LOST
    ):
        assert time.monotonic() < deadline, "the attempt never read lost"
        time.sleep(0.1)
    prefix = run_id[:8]
    assert listed(stubs, where="status = 'lost'", run_id_prefix=prefix)[0] == [run_id]
    assert listed(stubs, where="status in ('lost', 'failed')", run_id_prefix=prefix)[0] == [run_id]
    assert listed(stubs, where="status = 'running'", run_id_prefix=prefix)[0] == []
