"""Keys that collide once dotted: a spec or summary whose nested key `a.b` and whose key literally
named `a.b` would both be `spec.a.b`. Over the wire, such a run is recorded, searched and listed
like any other, each key reached by its own field name (a key with a dot quoted in backticks, as
docs/search.md spells it), and the ledger's views keep up for every other client."""

from __future__ import annotations

import uuid

from google.protobuf import struct_pb2

from tests.service.support import Stubs, open_run
from trainledger.v1 import common_pb2, runs_pb2


def _struct(value: dict[str, object]) -> struct_pb2.Struct:
    document = struct_pb2.Struct()
    document.update(value)
    return document


def _found(stubs: Stubs, where: str, position: int) -> list[str]:
    request = runs_pb2.ListRunsRequest(where=where, min_position=position)
    return [run.run_id for run in stubs.runs.ListRuns(request, timeout=30).runs]


def test_a_dotted_key_beside_a_nested_one_is_its_own_field(stubs: Stubs) -> None:
    sweep = f"s{uuid.uuid4().hex[:8]}"
    spec = _struct({"a": {"b": 1}, "a.b": 2})
    run_id = open_run(stubs, name="dotted", spec=spec).state.run.run_id
    tagged = runs_pb2.SetTagsRequest(run_id=run_id, set={"sweep": sweep})
    position = int(stubs.runs.SetTags(tagged, timeout=30).position)
    assert _found(stubs, f"tags.sweep = '{sweep}' and spec.a.b = 1", position) == [run_id]
    assert _found(stubs, f"tags.sweep = '{sweep}' and spec.`a.b` = 2", position) == [run_id]
    assert _found(stubs, f"tags.sweep = '{sweep}' and spec.`a.b` = 1", position) == []
    # Another client's run after it is projected too: the views did not stop at the first.
    later = open_run(stubs, name="after", spec=_struct({"lr": 0.5})).state.run.run_id
    again = runs_pb2.SetTagsRequest(run_id=later, set={"sweep": sweep})
    position = int(stubs.runs.SetTags(again, timeout=30).position)
    assert sorted(_found(stubs, f"tags.sweep = '{sweep}'", position)) == sorted([run_id, later])


def test_a_summary_key_with_a_dot_is_not_dropped_by_its_namesake(stubs: Stubs) -> None:
    sweep = f"s{uuid.uuid4().hex[:8]}"
    run_id = open_run(stubs, name="summary").state.run.run_id
    stubs.runs.SetTags(runs_pb2.SetTagsRequest(run_id=run_id, set={"sweep": sweep}), timeout=30)
    finish = runs_pb2.FinishRunRequest(
        run_id=run_id, attempt=1, status=common_pb2.RUN_STATUS_DONE, summary=_struct({"a.b": 2, "a": {"b": 1}})
    )
    position = int(stubs.runs.FinishRun(finish, timeout=30).position)
    assert _found(stubs, f"tags.sweep = '{sweep}' and summary.`a.b` = 2", position) == [run_id]
    assert _found(stubs, f"tags.sweep = '{sweep}' and summary.a.b = 1", position) == [run_id]
