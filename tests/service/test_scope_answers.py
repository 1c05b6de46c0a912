"""Outside its scope a token hears the same answer whether a thing exists or not, over the wire.

Tokens scoped to team-a ask about team-b's run, account and family, and about ones that do not
exist: each pair of answers must be the same status, message, reason and metadata, and must name
nothing of team-b's. Opening a run by the key of team-b's run, or an account by the name of one
under team-b, under team-a is refused like opening one under team-b: never told where it lives.
The same holds for an operator scoped to team-a changing caps: it may lower the cap of its own
scope root, never raise or lift it (a token scoped above it, or unscoped, may).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from ledger import Ledger
from tests.service.support import Served, Stubs, error_info
from trainledger.v1 import events_pb2, registry_pb2, runs_pb2, spend_pb2

WHO = {"principal": "setup", "request_id": ""}


class World:
    def __init__(self, path: str) -> None:
        self.ledger = Ledger.open(path)
        self.ledger.open_account(account="org", cap_usd_micro=None, **WHO)
        self.ledger.open_account(account="team-a", parent="org", cap_usd_micro=5_000_000, **WHO)
        self.ledger.open_account(account="team-b", parent="org", cap_usd_micro=None, **WHO)
        self.ledger.open_account(account="team-b-secret", parent="team-b", cap_usd_micro=None, **WHO)
        self.b_key = "run-key-of-team-b"
        self.b_run = self.ledger.open_run(
            run_key=self.b_key, name="b-run-name", spec={}, parent_account="team-b-secret", cap_usd_micro=None, **WHO
        ).run_id
        self.ledger.register(family="fam-b", artifact_uri="s3://b/1", digest="sha256:" + "ab" * 32, **WHO)
        self.tokens = {
            (role, scope): self.ledger.issue_token(
                holder=f"{role}-{scope or 'all'}", role=role, account=scope or None, **WHO
            ).bearer
            for role in ("trainer", "operator", "auditor")
            for scope in ("team-a", "org", "")
        }
        self.served = Served(self.ledger)

    def metadata(self, role: str, scope: str = "team-a") -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.tokens[role, scope]}"),)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    built = World(str(tmp_path_factory.mktemp("scope") / "ledger.db"))
    try:
        yield built
    finally:
        built.served.close()
        built.ledger.close()


def answer(call: Callable[[], Any]) -> tuple[Any, str, str, dict[str, str]]:
    with pytest.raises(grpc.RpcError) as caught:
        result = call()
        if hasattr(result, "__next__"):
            next(result)
    info = error_info(caught.value)
    return caught.value.code(), caught.value.details(), info.reason, dict(info.metadata)


def assert_same_and_silent(world: World, existing: Any, missing: Any) -> None:
    assert existing == missing
    code, details, reason, metadata = existing
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "OUTSIDE_SCOPE")
    told = details + " ".join(metadata.values())
    for secret in ("team-b", world.b_run, "b-run-name", "fam-b", "org"):
        assert secret not in told


def test_opening_a_run_by_another_scopes_key_says_nothing_of_it(world: World) -> None:
    r = world.served.stubs.runs
    m = world.metadata("trainer")
    existing = answer(
        lambda: r.OpenRun(runs_pb2.OpenRunRequest(run_key=world.b_key, parent_account="team-a"), metadata=m)
    )
    elsewhere = answer(
        lambda: r.OpenRun(runs_pb2.OpenRunRequest(run_key=uuid.uuid4().hex, parent_account="team-b"), metadata=m)
    )
    assert_same_and_silent(world, existing, elsewhere)


def test_opening_an_account_by_another_scopes_name_says_nothing_of_it(world: World) -> None:
    s = world.served.stubs.spend
    m = world.metadata("operator")
    existing = answer(
        lambda: s.OpenAccount(spend_pb2.OpenAccountRequest(account="team-b-secret", parent="team-a"), metadata=m)
    )
    elsewhere = answer(
        lambda: s.OpenAccount(spend_pb2.OpenAccountRequest(account=uuid.uuid4().hex, parent="team-b"), metadata=m)
    )
    assert_same_and_silent(world, existing, elsewhere)


Metadata = tuple[tuple[str, str], ...]


def _reads(stubs: Stubs) -> dict[str, Callable[[str, Metadata], Any]]:
    """One call per RPC about a thing named by the first argument, with the second as metadata."""
    r, s, g, e = stubs.runs, stubs.spend, stubs.registry, stubs.events
    return {
        "GetRunState": lambda x, m: r.GetRunState(runs_pb2.GetRunStateRequest(run_id=x), metadata=m),
        "GetSeries": lambda x, m: r.GetSeries(runs_pb2.GetSeriesRequest(run_id=x), metadata=m),
        "GetMetrics": lambda x, m: r.GetMetrics(runs_pb2.GetMetricsRequest(run_id=x), metadata=m),
        "ListCheckpoints": lambda x, m: r.ListCheckpoints(runs_pb2.ListCheckpointsRequest(run_id=x), metadata=m),
        "BestCheckpoint": lambda x, m: r.BestCheckpoint(runs_pb2.BestCheckpointRequest(run_id=x), metadata=m),
        "PlanPrune": lambda x, m: r.PlanPrune(runs_pb2.PlanPruneRequest(run_id=x), metadata=m),
        "WatchRun": lambda x, m: r.WatchRun(runs_pb2.WatchRunRequest(run_id=x), metadata=m, timeout=5),
        "StartAttempt": lambda x, m: r.StartAttempt(runs_pb2.StartAttemptRequest(run_id=x, attempt_id="a"), metadata=m),
        "GetAccount": lambda x, m: s.GetAccount(spend_pb2.GetAccountRequest(account=x), metadata=m),
        "ListReservations": lambda x, m: s.ListReservations(spend_pb2.ListReservationsRequest(account=x), metadata=m),
        "SetCap": lambda x, m: s.SetCap(spend_pb2.SetCapRequest(account=x, cap_usd_micro=1), metadata=m),
        "GetCurrent": lambda x, m: g.GetCurrent(registry_pb2.GetCurrentRequest(family=x), metadata=m),
        "ListVersions": lambda x, m: g.ListVersions(registry_pb2.ListVersionsRequest(family=x), metadata=m),
        "ReadEvents": lambda x, m: e.ReadEvents(events_pb2.ReadEventsRequest(limit=1), metadata=m, timeout=5),
    }


READS = ["GetRunState", "GetSeries", "GetMetrics", "ListCheckpoints", "BestCheckpoint", "PlanPrune", "WatchRun"]
READS += ["StartAttempt", "GetAccount", "ListReservations", "SetCap", "GetCurrent", "ListVersions", "ReadEvents"]
SUBJECTS = {"GetAccount": "account", "ListReservations": "account", "SetCap": "account"}
SUBJECTS |= {"GetCurrent": "family", "ListVersions": "family"}


@pytest.mark.parametrize("method", READS)
@pytest.mark.parametrize("role", ["trainer", "operator", "auditor"])
def test_another_scopes_things_answer_as_if_they_did_not_exist(world: World, method: str, role: str) -> None:
    call, metadata = _reads(world.served.stubs)[method], world.metadata(role)
    kind = SUBJECTS.get(method, "run")
    existing = {"run": world.b_run, "account": "team-b-secret", "family": "fam-b"}[kind]
    missing = {"run": str(uuid.uuid4()), "account": "team-nobody", "family": "fam-nobody"}[kind]
    first, second = answer(lambda: call(existing, metadata)), answer(lambda: call(missing, metadata))
    if first[2] == "ROLE_NOT_ALLOWED":
        assert second == first  # This role may not call it at all: nothing to learn either.
        return
    assert_same_and_silent(world, first, second)


def test_a_scoped_operator_may_lower_its_own_cap_but_never_raise_or_lift_it(world: World) -> None:
    s = world.served.stubs.spend

    def set_cap(account: str, cap: int | None, scope: str) -> int:
        request = spend_pb2.SetCapRequest(account=account, cap_usd_micro=cap)
        return s.SetCap(request, metadata=world.metadata("operator", scope)).account.cap_usd_micro

    def refused(account: str, cap: int | None) -> tuple[Any, str, dict[str, str]]:
        code, _, reason, metadata = answer(lambda: set_cap(account, cap, "team-a"))
        return code, reason, metadata

    assert set_cap("team-a", 4_000_000, "team-a") == 4_000_000  # Lowered from $5.
    assert set_cap("team-a", 4_000_000, "team-a") == 4_000_000  # The same cap again changes nothing.
    raised = (grpc.StatusCode.PERMISSION_DENIED, "CAP_RAISE_OUTSIDE_SCOPE", {"scope": "team-a"})
    assert refused("team-a", 4_000_001) == raised
    assert refused("team-a", None) == raised  # Lifting the cap is raising it without bound.
    read = spend_pb2.GetAccountRequest(account="team-a", min_position=world.ledger.head())
    assert s.GetAccount(read, metadata=world.metadata("auditor", "")).account.cap_usd_micro == 4_000_000

    # Below its scope's root the operator sets caps as it likes, within the root's.
    s.OpenAccount(
        spend_pb2.OpenAccountRequest(account="team-a-sub", parent="team-a", cap_usd_micro=1),
        metadata=world.metadata("operator"),
    )
    assert set_cap("team-a-sub", 3_000_000, "team-a") == 3_000_000
    # A token scoped above the account, or unscoped, may raise and lift it.
    assert set_cap("team-a", 6_000_000, "org") == 6_000_000
    lifted = s.SetCap(spend_pb2.SetCapRequest(account="team-a"), metadata=world.metadata("operator", ""))
    assert not lifted.account.HasField("cap_usd_micro")


def test_a_scoped_token_lists_only_the_runs_under_its_scope(world: World) -> None:
    r = world.served.stubs.runs
    a_run = world.ledger.open_run(
        run_key="run-key-of-team-a", name="a-run-name", spec={}, parent_account="team-a", cap_usd_micro=None, **WHO
    ).run_id
    head = world.ledger.head()

    def listed(role: str, scope: str, account: str = "") -> list[str]:
        request = runs_pb2.ListRunsRequest(account=account, include_retracted=True, min_position=head)
        return [run.run_id for run in r.ListRuns(request, metadata=world.metadata(role, scope)).runs]

    for role in ("operator", "auditor"):
        assert listed(role, "team-a") == [a_run]  # No account given: the token's scope.
        assert listed(role, "team-a", account="team-a") == [a_run]
        assert set(listed(role, "org")) >= {a_run, world.b_run}
        assert set(listed(role, "")) >= {a_run, world.b_run}
        # An account outside the scope is refused alike whether it exists or not.
        outside = [answer(lambda r=role, a=account: listed(r, "team-a", a)) for account in ("team-b", "team-nobody")]
        assert_same_and_silent(world, *outside)
    code, _, reason, _ = answer(lambda: listed("trainer", "team-a"))
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "ROLE_NOT_ALLOWED")


def test_a_refused_cap_raise_says_who_may_raise_it(world: World) -> None:
    s = world.served.stubs.spend
    set_by_unscoped = spend_pb2.SetCapRequest(account="team-a", cap_usd_micro=7_000_000)
    s.SetCap(set_by_unscoped, metadata=world.metadata("operator", ""))
    request = spend_pb2.SetCapRequest(account="team-a", cap_usd_micro=8_000_000)
    _, details, reason, _ = answer(lambda: s.SetCap(request, metadata=world.metadata("operator")))
    assert reason == "CAP_RAISE_OUTSIDE_SCOPE"
    assert "scoped above team-a" in details and "unscoped" in details


def test_a_scoped_token_searches_only_the_runs_under_its_scope(world: World) -> None:
    r = world.served.stubs.runs
    a_run = world.ledger.open_run(
        run_key="searched-run-of-team-a", name="searched", spec={}, parent_account="team-a", cap_usd_micro=None, **WHO
    ).run_id
    head = world.ledger.head()

    def searched(scope: str) -> set[str]:
        request = runs_pb2.ListRunsRequest(where="attempts = 0", order_by="name", min_position=head)
        return {run.run_id for run in r.ListRuns(request, metadata=world.metadata("operator", scope)).runs}

    assert a_run in searched("team-a") and world.b_run not in searched("team-a")
    assert {a_run, world.b_run} <= searched("")


def test_a_source_checkpoint_in_another_scope_is_refused_like_one_that_does_not_exist(world: World) -> None:
    """A run opened under team-a from a checkpoint of team-b's run must not learn whether that run
    or checkpoint exists, nor read its name or uri back in its own state."""
    world.ledger.start_attempt(run_id=world.b_run, **WHO)
    world.ledger.save_checkpoint(
        run_id=world.b_run, attempt=1, step=7, backend="local", uri="file:///secret/b-ckpt", **WHO
    )
    r = world.served.stubs.runs
    m = world.metadata("trainer")

    def open_from(run_id: str, step: int) -> Callable[[], Any]:
        source = runs_pb2.RunSourceCheckpoint(run_id=run_id, step=step)
        request = runs_pb2.OpenRunRequest(run_key=uuid.uuid4().hex, parent_account="team-a", source_checkpoint=source)
        return lambda: r.OpenRun(request, metadata=m)

    existing = answer(open_from(world.b_run, 7))
    no_checkpoint = answer(open_from(world.b_run, 8))
    missing = answer(open_from(str(uuid.uuid4()), 7))
    assert_same_and_silent(world, existing, missing)
    assert_same_and_silent(world, no_checkpoint, missing)
    # A source under the token's own scope is taken as before.
    own = world.ledger.open_run(
        run_key=uuid.uuid4().hex, name="a-run", spec={}, parent_account="team-a", cap_usd_micro=None, **WHO
    ).run_id
    world.ledger.start_attempt(run_id=own, **WHO)
    world.ledger.save_checkpoint(run_id=own, attempt=1, step=3, backend="local", uri="file:///a/3", **WHO)
    child = open_from(own.upper(), 3)()
    assert child.state.source.run_id == own and child.state.source.name == "a-run"


def test_a_scoped_token_reads_nothing_of_another_scopes_run_through_lineage(world: World) -> None:
    """An unscoped caller may start a run under team-a from team-b's checkpoint; a token scoped to
    team-a reading that run, or one scoped to team-b reading team-b's run, must not be told the
    other scope's run id, name or checkpoint uri as its source or its children."""
    source = world.ledger.open_run(
        run_key=uuid.uuid4().hex,
        name="b-lineage-secret",
        spec={},
        parent_account="team-b-secret",
        cap_usd_micro=None,
        **WHO,
    ).run_id
    world.ledger.start_attempt(run_id=source, **WHO)
    world.ledger.save_checkpoint(run_id=source, attempt=1, step=2, backend="local", uri="file:///b/secret", **WHO)
    child = world.ledger.open_run(
        run_key=uuid.uuid4().hex,
        name="a-child-secret",
        spec={},
        parent_account="team-a",
        cap_usd_micro=None,
        source_checkpoint={"run_id": source, "step": 2, "uri": "file:///b/secret"},
        **WHO,
    )
    r = world.served.stubs.runs
    read = runs_pb2.GetRunStateRequest(run_id=child.run_id, min_position=child.position)
    told = str(r.GetRunState(read, metadata=world.metadata("auditor")).state)
    for secret in (source, "b-lineage-secret", "file:///b/secret"):
        assert secret not in told
    world.tokens["auditor", "team-b"] = world.ledger.issue_token(
        holder="auditor-team-b", role="auditor", account="team-b", **WHO
    ).bearer
    read = runs_pb2.GetRunStateRequest(run_id=source, min_position=child.position)
    told = str(r.GetRunState(read, metadata=world.metadata("auditor", "team-b")).state)
    for secret in (child.run_id, "a-child-secret"):
        assert secret not in told


def test_a_scoped_watcher_reads_nothing_of_another_scopes_source(world: World) -> None:
    """WatchRun's first state, as GetRunState's: no source run from outside the token's scope."""
    source = world.ledger.open_run(
        run_key=uuid.uuid4().hex,
        name="b-watch-secret",
        spec={},
        parent_account="team-b-secret",
        cap_usd_micro=None,
        **WHO,
    ).run_id
    world.ledger.start_attempt(run_id=source, **WHO)
    world.ledger.save_checkpoint(run_id=source, attempt=1, step=2, backend="local", uri="file:///b/watch", **WHO)
    child = world.ledger.open_run(
        run_key=uuid.uuid4().hex,
        name="a-watch-child",
        spec={},
        parent_account="team-a",
        cap_usd_micro=None,
        source_checkpoint={"run_id": source, "step": 2, "uri": "file:///b/watch"},
        **WHO,
    )
    stream = world.served.stubs.runs.WatchRun(
        runs_pb2.WatchRunRequest(run_id=child.run_id), metadata=world.metadata("auditor"), timeout=30
    )
    try:
        told = str(next(stream))
    finally:
        stream.cancel()
    assert "a-watch-child" in told
    for secret in (source, "b-watch-secret", "file:///b/watch"):
        assert secret not in told


def test_a_scoped_watcher_hears_of_its_own_scopes_children_only(world: World) -> None:
    """A run opened from a watched run's checkpoint reaches the run's watchers (the Children
    panel is live), but one scoped to team-b is not told of a child an unscoped caller opened
    under team-a: no message at that child's position, nothing of its id or name."""
    world.tokens["auditor", "team-b"] = world.ledger.issue_token(
        holder="auditor-team-b-watch", role="auditor", account="team-b", **WHO
    ).bearer
    source = world.ledger.open_run(
        run_key=uuid.uuid4().hex, name="b-parent", spec={}, parent_account="team-b", cap_usd_micro=None, **WHO
    ).run_id
    world.ledger.start_attempt(run_id=source, **WHO)
    world.ledger.save_checkpoint(run_id=source, attempt=1, step=2, backend="local", uri="file:///b/p", **WHO)
    scoped = world.served.stubs.runs.WatchRun(
        runs_pb2.WatchRunRequest(run_id=source), metadata=world.metadata("auditor", "team-b"), timeout=30
    )
    unscoped = world.served.stubs.runs.WatchRun(
        runs_pb2.WatchRunRequest(run_id=source), metadata=world.metadata("auditor", ""), timeout=30
    )
    try:
        assert next(scoped).state.child_count == 0
        assert next(unscoped).state.child_count == 0
        children = {}
        for name, account in (("a-hidden-child", "team-a"), ("b-own-child", "team-b-secret")):
            children[name] = world.ledger.open_run(
                run_key=uuid.uuid4().hex,
                name=name,
                spec={},
                parent_account=account,
                cap_usd_micro=None,
                source_checkpoint={"run_id": source, "step": 2},
                **WHO,
            )
        told_scoped = []
        for message in scoped:
            told_scoped.append(message)
            if message.position == children["b-own-child"].position:
                break
        told_unscoped = []
        for message in unscoped:
            told_unscoped.append(message)
            if message.position == children["b-own-child"].position:
                break
    finally:
        scoped.cancel()
        unscoped.cancel()
    hidden = children["a-hidden-child"]
    assert [m.event_type for m in told_unscoped] == ["Run.ChildOpened", "Run.ChildOpened"]
    assert [m.position for m in told_unscoped] == [hidden.position, children["b-own-child"].position]
    assert [m.event_type for m in told_scoped] == ["Run.ChildOpened"]
    assert [c.name for c in told_scoped[0].state.children] == ["b-own-child"]
    assert told_scoped[0].state.child_count == 1
    for secret in (hidden.run_id, "a-hidden-child"):
        assert secret not in str(told_scoped)
