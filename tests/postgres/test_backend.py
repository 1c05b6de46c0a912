"""The PostgreSQL backend: several "replicas" (Ledger instances) over one database, exactly-once
projection across them, and outages at start and mid-run.

Needs TRAINLEDGER_TEST_DATABASE_URL (scripts/test starts a server); the outage test starts a
server of its own with scripts/pg, so it needs the PostgreSQL binaries on this machine.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
if not POSTGRES_URL:
    pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set", allow_module_level=True)

import psycopg  # noqa: E402

from ledger import Ledger  # noqa: E402
from ledger.domain.errors import CapExceeded, Contended, Unavailable  # noqa: E402
from ledger.views.schema import VIEWS  # noqa: E402

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]


def _with_schema(url: str, schema: str, **settings: object) -> str:
    query = "&".join(f"{key}={value}" for key, value in {"schema": schema, **settings}.items())
    return f"{url}{'&' if '?' in url else '?'}{query}"


def _drop_schema(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def url() -> Iterator[str]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield _with_schema(POSTGRES_URL, schema)
    _drop_schema(POSTGRES_URL, schema)


@pytest.fixture
def replicas(url: str) -> Iterator[tuple[Ledger, Ledger]]:
    """Two Ledger instances over one schema, each with its own projector."""
    first = Ledger.open(url)
    second = Ledger.open(url)
    try:
        yield first, second
    finally:
        second.close()
        first.close()


def _in_threads(work: list[Callable[[], Any]]) -> list[Any]:
    """Run each callable in its own thread, all released at once; their results (or errors)."""
    barrier = threading.Barrier(len(work))
    results: list[Any] = [None] * len(work)

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = work[index]()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            results[index] = error

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def _retrying(call: Callable[[], Any]) -> Any:
    """`call`, again after WRITE_CONFLICT (replicas writing one aggregate can outlast the
    ledger's own retries; nothing was recorded, so a client simply sends it again)."""
    for _ in range(20):
        try:
            return call()
        except Contended as conflict:
            if conflict.reason != "WRITE_CONFLICT":
                raise
    raise AssertionError("the write kept conflicting")


def _series_rows(url: str) -> tuple[int, int, int]:
    """(batch rows, steps, distinct (run, first step, attempt)) in the series view."""
    schema = url.rsplit("schema=", 1)[1].split("&")[0]
    with psycopg.connect(POSTGRES_URL) as connection:
        row = connection.execute(
            f"SELECT COUNT(*), COALESCE(SUM(count), 0), COUNT(DISTINCT (run_id, first_step, attempt))"
            f' FROM "{schema}".view_series'
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def test_two_replicas_append_to_different_runs_and_read_each_other(replicas: tuple[Ledger, Ledger]) -> None:
    first, second = replicas
    runs = [first.open_run(run_key="on-first").run_id, second.open_run(run_key="on-second").run_id]

    def append(ledger: Ledger, run_id: str) -> int:
        ledger.start_attempt(run_id=run_id)
        position = 0
        for batch in range(10):
            position = ledger.append_steps(
                run_id=run_id, attempt=1, steps=list(range(batch * 20, batch * 20 + 20)), metrics={"loss": [0.5] * 20}
            ).position
        return position

    positions = _in_threads([lambda: append(first, runs[0]), lambda: append(second, runs[1])])
    assert all(isinstance(position, int) for position in positions), positions
    # Each replica reads the other's writes at the position the writer was given.
    assert second.run_state(runs[0], min_position=positions[0]).last_step == 199
    assert first.run_state(runs[1], min_position=positions[1]).last_step == 199
    assert second.series(runs[0], limit=1000).steps == tuple(range(200))
    assert first.series(runs[1], limit=1000).steps == tuple(range(200))


def test_concurrent_reservers_never_cross_a_shared_parent_cap(replicas: tuple[Ledger, Ledger]) -> None:
    first, second = replicas
    cap, amount, threads = 10_000, 700, 8
    first.open_account(account="pool", cap_usd_micro=cap)
    runs = [
        (first if index % 2 else second).open_run(run_key=f"reserver-{index}", parent_account="pool").run_id
        for index in range(threads)
    ]

    def reserve_until_refused(ledger: Ledger, run_id: str) -> int:
        held = 0
        for attempt in range(100):
            hold = f"hold-{attempt}"
            try:
                _retrying(
                    functools.partial(ledger.reserve, account=run_id, reservation_id=hold, amount_usd_micro=amount)
                )
            except CapExceeded as refused:
                assert refused.account == "pool" and refused.remaining_usd_micro < amount
                return held
            held += 1
            if held % 2 == 0:
                _retrying(
                    functools.partial(ledger.commit, account=run_id, reservation_id=hold, actual_usd_micro=amount)
                )
        raise AssertionError("never refused")

    held = _in_threads([lambda i=i: reserve_until_refused(first if i % 2 else second, runs[i]) for i in range(threads)])
    assert all(isinstance(count, int) for count in held), held
    assert sum(held) == cap // amount
    for ledger in (first, second):
        now = ledger.account_now("pool")
        assert now.committed_usd_micro + now.pending_usd_micro == (cap // amount) * amount <= cap
        view = ledger.account("pool", min_position=ledger.head())
        assert view.committed_usd_micro + view.pending_usd_micro == (cap // amount) * amount
        accounts = [ledger.account(run_id) for run_id in runs]
        assert sum(a.committed_usd_micro + a.pending_usd_micro for a in accounts) == (cap // amount) * amount


def test_racing_promotions_from_two_replicas_one_wins(replicas: tuple[Ledger, Ledger]) -> None:
    first, second = replicas
    passed = {"passed": True, "reason": "checked"}
    for round_ in range(5):
        family = f"fam-{round_}"
        first.register(family=family, artifact_uri="s3://m/1", digest="a" * 64)
        second.register(family=family, artifact_uri="s3://m/2", digest="b" * 64)
        # Both replicas hold the family in their caches before they race.
        first.family(family, min_position=first.head())
        second.family(family, min_position=first.head())
        results = _in_threads(
            [
                lambda family=family: first.promote(family=family, version=1, expected_current=0, verdict=passed),
                lambda family=family: second.promote(family=family, version=2, expected_current=0, verdict=passed),
            ]
        )
        won = [r for r in results if not isinstance(r, BaseException)]
        lost = [r for r in results if isinstance(r, BaseException)]
        assert len(won) == 1 and len(lost) == 1, results
        assert isinstance(lost[0], Contended) and lost[0].reason == "CURRENT_VERSION_MOVED"
        winner = won[0].version
        for ledger in (first, second):
            assert ledger.family(family, min_position=won[0].position).current == winner


def test_projection_is_exactly_once_with_two_projectors(url: str, replicas: tuple[Ledger, Ledger]) -> None:
    first, second = replicas
    first.open_account(account="shared")
    runs = [first.open_run(run_key=f"r{index}", parent_account="shared").run_id for index in range(4)]
    batches, size = 25, 40

    def write(ledger: Ledger, run_id: str) -> None:
        ledger.start_attempt(run_id=run_id)
        for batch in range(batches):
            ledger.append_steps(run_id=run_id, attempt=1, steps=list(range(batch * size, (batch + 1) * size)))
            _retrying(
                functools.partial(ledger.reserve, account=run_id, reservation_id=f"h{batch}", amount_usd_micro=10)
            )

    results = _in_threads([lambda i=i: write(first if i % 2 else second, runs[i]) for i in range(len(runs))])
    assert results == [None] * len(runs)
    head = first.head()
    first.wait(head, timeout_s=30)
    second.wait(head, timeout_s=30)
    assert _series_rows(url) == (len(runs) * batches, len(runs) * batches * size, len(runs) * batches)
    # Totals are sums of increments: an event applied twice would show.
    assert first.account("shared").pending_usd_micro == len(runs) * batches * 10
    assert second.storage.tracking_positions() == dict.fromkeys(VIEWS, head)
    for run_id in runs:
        assert second.run_state(run_id).last_step == batches * size - 1


def test_a_replica_learns_of_projected_writes_through_listen(replicas: tuple[Ledger, Ledger]) -> None:
    first, second = replicas
    second.projector.poll_s = 120.0  # No fallback poll within this test.
    second.projector.wake()
    time.sleep(0.2)
    run_id = first.open_run(run_key="noticed").run_id
    position = first.start_attempt(run_id=run_id).position
    deadline = time.monotonic() + 3
    while second.projector.position < position and time.monotonic() < deadline:
        time.sleep(0.02)
    assert second.projector.position >= position


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_database_down_at_start_is_unavailable() -> None:
    port = _free_port()
    started = time.monotonic()
    with pytest.raises(Unavailable) as down:
        Ledger.open(f"postgresql://postgres@127.0.0.1:{port}/trainledger_test?schema=t_down")
    assert time.monotonic() - started < 10
    assert f"127.0.0.1:{port}" in down.value.message and "cannot connect" in down.value.message


def _pg(command: str, directory: Path) -> str:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "pg"), command, str(directory)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def _have_server_binaries() -> bool:
    return shutil.which("pg_ctl") is not None or any(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))


@pytest.fixture
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A PostgreSQL server this test may stop and start (scripts/pg pause / resume)."""
    if not _have_server_binaries():
        pytest.skip("no PostgreSQL server binaries to start a server of our own")
    directory = Path(f"/tmp/trainledger-outage-{uuid.uuid4().hex[:8]}")
    try:
        yield directory, _pg("start", directory)
    finally:
        _pg("stop", directory)


def _until_available(action: Callable[[], Any], timeout_s: float = 60) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return action()
        except Unavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.subprocess
def test_database_lost_mid_run_is_unavailable_then_recovers(own_server: tuple[Path, str]) -> None:
    directory, server_url = own_server
    ledger = Ledger.open(_with_schema(server_url, "outage", connect_timeout=2))
    try:
        run_id = ledger.open_run(run_key="survivor").run_id
        ledger.start_attempt(run_id=run_id)

        def batch(index: int) -> Any:
            return ledger.append_steps(
                run_id=run_id,
                attempt=1,
                steps=list(range(index * 10, index * 10 + 10)),
                metrics={"loss": [float(index)] * 10},
            )

        acknowledged = [batch(index).position for index in range(5)]
        ledger.wait(acknowledged[-1])

        _pg("pause", directory)
        started = time.monotonic()
        with pytest.raises(Unavailable):
            batch(5)
        assert time.monotonic() - started < 15
        with pytest.raises(Unavailable):
            ledger.run_state(run_id)
        with pytest.raises(Unavailable):
            ledger.head()

        _pg("resume", directory)
        retried = _until_available(lambda: batch(5))  # The same request again, as a client would.
        assert not retried.duplicate
        last = batch(6)
        assert not last.duplicate and batch(6).duplicate  # An identical retry is still a no-op.
        state = _until_available(lambda: ledger.run_state(run_id, min_position=last.position, timeout_s=30))
        assert state.last_step == 69
        page = ledger.series(run_id, limit=1000)
        assert page.steps == tuple(range(70))
        assert page.metric("loss").values == tuple(float(step // 10) for step in range(70))
        recorded = ledger.read_events(types=["StepsRecorded"])
        assert [event["data"]["steps"][0] for event in recorded] == [0, 10, 20, 30, 40, 50, 60]
        # The projector clears its error once the chunk it is on has committed.
        deadline = time.monotonic() + 10
        while ledger.projector.error is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ledger.projector.error is None
    finally:
        ledger.close()


class _Died(psycopg.OperationalError):
    """What a call on a pooled connection that a restart killed raises."""


def test_the_retry_rule_drops_dead_connections_and_tries_again_a_bounded_number_of_times() -> None:
    import psycopg_pool

    from ledger.storage.postgres.connections import retrying

    calls: list[str] = []

    def flaky(failures: int) -> Callable[[], str]:
        def work() -> str:
            calls.append("work")
            if calls.count("work") <= failures:
                raise _Died("server closed the connection unexpectedly")
            return "answer"

        return work

    def drop_dead() -> None:
        calls.append("check")

    assert retrying(flaky(2), errors=(psycopg.OperationalError,), drop_dead=drop_dead) == "answer"
    assert calls == ["work", "check", "work", "check", "work"]
    calls.clear()
    # Three calls in all: the third failure is the answer, as the refusal asked for.
    with pytest.raises(Unavailable) as refused:
        retrying(
            flaky(5),
            errors=(psycopg.OperationalError,),
            drop_dead=drop_dead,
            refusal=lambda error: Unavailable(f"storage is unavailable: {error}"),
        )
    assert calls == ["work", "check", "work", "check", "work"]
    assert refused.value.reason == "UNAVAILABLE" and isinstance(refused.value.__cause__, _Died)
    calls.clear()

    # A pool that already waited its whole timeout is not asked again.
    def timed_out() -> str:
        calls.append("work")
        raise psycopg_pool.PoolTimeout("couldn't get a connection after 5.00 sec")

    with pytest.raises(psycopg_pool.PoolTimeout):
        retrying(timed_out, errors=(psycopg.OperationalError,), drop_dead=drop_dead)
    assert calls == ["work"]


def test_a_postgresql_url_chooses_postgresql_and_anything_else_a_sqlite_file(tmp_path: Path) -> None:
    from ledger.backend import is_postgres_url, persistence_env

    assert is_postgres_url("postgresql://u@h/db") and is_postgres_url("postgres://u@h/db")
    assert not is_postgres_url(str(tmp_path / "postgresql.db")) and not is_postgres_url("sqlite:///x.db")
    env = persistence_env("postgres://alice:s3cret@db.example:6543/ledger?schema=team_a&pool_size=4")
    assert env["PERSISTENCE_MODULE"] == "ledger.storage.postgres.recorders:Factory"
    assert (
        env["POSTGRES_HOST"],
        env["POSTGRES_PORT"],
        env["POSTGRES_DBNAME"],
        env["POSTGRES_USER"],
        env["POSTGRES_PASSWORD"],
        env["POSTGRES_SCHEMA"],
        env["POSTGRES_POOL_SIZE"],
    ) == ("db.example", "6543", "ledger", "alice", "s3cret", "team_a", "4")
    assert persistence_env(str(tmp_path / "ledger.db"))["SQLITE_DBNAME"] == str(tmp_path / "ledger.db")
    with pytest.raises(ValueError, match="unknown parameter"):
        persistence_env("postgresql://u@h/db?pool=4")
