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


def test_bad_queries_each_get_a_clear_refusal_with_the_position_of_the_fault(stubs: Stubs) -> None:
    """Each bad input a client may send: refused as INVALID_ARGUMENT with its reason and position
    before anything is read, never a crash or a slow scan."""
    too_large = "QUERY_TOO_LARGE"
    cases: list[tuple[dict[str, str], str, str, str]] = [
        # 10,000 comparisons: past the bytes long before the count of comparisons.
        ({"where": " or ".join(["attempts = 1"] * 10_000)}, too_large, "bytes", "4097"),
        # The 65th comparison: refused at the `or` that joins it.
        ({"where": " or ".join(["attempts = 1"] * 65)}, too_large, "clauses", str(64 * 16 - 2)),
        # Parentheses nested 10,000 deep, and just past the bound within the bytes.
        ({"where": "(" * 10_000 + "attempts = 1" + ")" * 10_000}, too_large, "bytes", "4097"),
        ({"where": "(" * 17 + "attempts = 1" + ")" * 17}, too_large, "depth", "17"),
        # A 1 MB string, in the query and in the order.
        ({"where": "name = '" + "x" * 1_000_000 + "'"}, too_large, "bytes", "4097"),
        ({"order_by": "spec." + "k" * 1_000_000}, too_large, "bytes", "4097"),
        ({"where": "name = '" + "x" * 300 + "'"}, too_large, "literal_length", "8"),
        # A like pattern of more wildcards than a match may multiply.
        ({"where": "name like '" + "%a" * 9 + "b'"}, "INVALID_QUERY", "", "11"),
        # Unknown fields, and field names that are not ASCII.
        ({"where": "colour = 'red'"}, "INVALID_QUERY", "", "1"),
        ({"where": "spec.lr > 1 and metrics.loss.median < 1"}, "INVALID_QUERY", "", "30"),
        ({"where": "spec.t\u00e9 = 1"}, "INVALID_QUERY", "", "7"),
        ({"where": "name = 'a' and \u540d\u524d = 'b'"}, "INVALID_QUERY", "", "16"),
        ({"order_by": "spec.\u00e9"}, "INVALID_QUERY", "", "6"),
    ]
    for fields, reason, limit, position in cases:
        code, got, metadata = refusal(stubs, **fields)
        shown = {name: value[:40] for name, value in fields.items()}
        assert (code, got, metadata["position"]) == ("INVALID_ARGUMENT", reason, position), shown
        assert metadata.get("limit", "") == limit, shown


def test_a_like_pattern_is_no_regular_expression_and_answers(stubs: Stubs) -> None:
    """What a regular expression would make a bomb of is plain text to `like`: matched as
    written, and a pattern of the most wildcards allowed answers too."""
    sweep = f"s{uuid.uuid4().hex[:8]}"
    odd, _ = opened(stubs, "(a+)+$", 0.1, {"sweep": sweep})
    _, position = opened(stubs, "a" * 64, 0.1, {"sweep": sweep})
    where = f"tags.sweep = '{sweep}' and "
    assert listed(stubs, where=where + "name like '(a+)+$'", min_position=position) == ([odd], "")
    assert listed(stubs, where=where + "name like '" + "%a" * 8 + "b'")[0] == []
    assert listed(stubs, where=where + "name like '%(a+)%'")[0] == [odd]


def test_ordering_by_a_key_half_the_runs_lack_puts_them_last_either_way(stubs: Stubs) -> None:
    sweep = f"s{uuid.uuid4().hex[:8]}"
    with_key, lacking = [], []
    for index in range(6):
        spec = struct_pb2.Struct()
        spec.update({"depth": index} if index % 2 else {})
        run_id = open_run(stubs, name=f"h{index}", spec=spec).state.run.run_id
        tags = runs_pb2.SetTagsRequest(run_id=run_id, set={"sweep": sweep})
        position = int(stubs.runs.SetTags(tags, timeout=30).position)
        (with_key if index % 2 else lacking).append(run_id)
    where, newest_first = f"tags.sweep = '{sweep}'", lacking[::-1]
    found, _ = listed(stubs, where=where, order_by="spec.depth", min_position=position)
    assert found == with_key + newest_first
    found, _ = listed(stubs, where=where, order_by="spec.depth desc")
    assert found == with_key[::-1] + newest_first
    pages, token = [], ""
    while True:
        page, token = listed(stubs, where=where, order_by="spec.depth desc", page_size=4, page_token=token)
        pages.append(page)
        if not token:
            break
    assert pages == [with_key[::-1] + newest_first[:1], newest_first[1:]]


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
