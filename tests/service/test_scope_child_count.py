"""A scoped token is told how many runs were started from a run's checkpoints only as far as it
may know them: past the children a state lists, the unlisted ones may lie outside its scope, so
the count it is told must not reveal them (GetRunState and WatchRun alike, over the wire)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from ledger import Ledger
from ledger.views.provenance.lineage import CHILDREN_LISTED
from tests.service.support import Served
from trainledger.v1 import runs_pb2

WHO = {"principal": "setup", "request_id": ""}


class World:
    def __init__(self, path: str) -> None:
        self.ledger = Ledger.open(path)
        self.ledger.open_account(account="org", cap_usd_micro=None, **WHO)
        for team in ("team-a", "team-b"):
            self.ledger.open_account(account=team, parent="org", cap_usd_micro=None, **WHO)
        self.bearer = self.ledger.issue_token(holder="b-auditor", role="auditor", account="team-b", **WHO).bearer
        self.unscoped = self.ledger.issue_token(holder="auditor", role="auditor", account=None, **WHO).bearer
        self.served = Served(self.ledger)

    def open_run(self, account: str, name: str, source: str | None = None) -> object:
        return self.ledger.open_run(
            run_key=uuid.uuid4().hex,
            name=name,
            spec={},
            parent_account=account,
            cap_usd_micro=None,
            source_checkpoint={"run_id": source, "step": 2} if source else None,
            **WHO,
        )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    built = World(str(tmp_path_factory.mktemp("child-count") / "ledger.db"))
    try:
        yield built
    finally:
        built.served.close()
        built.ledger.close()


def test_a_scoped_reader_is_not_counted_children_outside_its_scope(world: World) -> None:
    """team-b's run has one child under team-a (opened first, by an unscoped caller), then more
    under team-b than a state lists: a token scoped to team-b must not be told a count that
    includes the team-a child, which it could not otherwise know exists."""
    source = world.open_run("team-b", "b-source").run_id  # type: ignore[attr-defined]
    world.ledger.start_attempt(run_id=source, **WHO)
    world.ledger.save_checkpoint(run_id=source, attempt=1, step=2, backend="local", uri="file:///b/2", **WHO)
    world.open_run("team-a", "a-hidden-child", source)
    last = None
    for n in range(CHILDREN_LISTED):
        last = world.open_run("team-b", f"b-child-{n}", source)
    head = last.position  # type: ignore[attr-defined]
    metadata = (("authorization", f"Bearer {world.bearer}"),)
    runs = world.served.stubs.runs
    read = runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=source, min_position=head), metadata=metadata)
    assert len(read.state.children) == CHILDREN_LISTED
    assert read.state.child_count <= CHILDREN_LISTED
    stream = runs.WatchRun(runs_pb2.WatchRunRequest(run_id=source), metadata=metadata, timeout=30)
    try:
        first = next(stream)
    finally:
        stream.cancel()
    assert first.state.child_count <= CHILDREN_LISTED
    # Unscoped, every child is counted.
    request = runs_pb2.GetRunStateRequest(run_id=source, min_position=head)
    unscoped = runs.GetRunState(request, metadata=(("authorization", f"Bearer {world.unscoped}"),))
    assert unscoped.state.child_count == CHILDREN_LISTED + 1


def _watched_until(world: World, bearer: str, run_id: str, from_position: int, last: int) -> list[Any]:
    """The messages of one WatchRun from `from_position` until one at position `last` or after."""
    metadata = (("authorization", f"Bearer {bearer}"),)
    request = runs_pb2.WatchRunRequest(run_id=run_id, from_position=from_position)
    stream = world.served.stubs.runs.WatchRun(request, metadata=metadata, timeout=30)
    told = []
    try:
        for message in stream:
            told.append(message)
            if message.event_type != "state" and message.position >= last:
                break
    finally:
        stream.cancel()
    return told


def test_a_watcher_resuming_from_a_position_is_told_each_child_opened_since(world: World) -> None:
    """A watcher that lost its stream watches again from the position after the last message it
    had: every run opened from the run's checkpoints since comes as Run.ChildOpened at its own
    position, once, as a live watcher was told; one scoped to team-b is told only team-b's."""
    source = world.open_run("team-b", "b-resumed").run_id  # type: ignore[attr-defined]
    world.ledger.start_attempt(run_id=source, **WHO)
    saved = world.ledger.save_checkpoint(run_id=source, attempt=1, step=2, backend="local", uri="file:///b/r2", **WHO)
    resume = saved.position + 1
    opened = [
        world.open_run(account, name, source)
        for account, name in (("team-b", "b-gap-1"), ("team-a", "a-gap-hidden"), ("team-b", "b-gap-2"))
    ]
    positions = [child.position for child in opened]  # type: ignore[attr-defined]
    # A step batch after them, so that the run's own events follow the gap.
    world.ledger.save_checkpoint(run_id=source, attempt=1, step=3, backend="local", uri="file:///b/r3", **WHO)
    last = world.ledger.head()

    def children_told(bearer: str) -> list[int]:
        told = _watched_until(world, bearer, source, resume, last)
        assert told[0].event_type == "state"
        return [m.position for m in told[1:] if m.event_type == "Run.ChildOpened"]

    assert children_told(world.unscoped) == positions
    assert children_told(world.bearer) == [positions[0], positions[2]]
