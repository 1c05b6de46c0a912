"""Scale-out as it runs: `trainledger serve` replicas and `trainledger project` workers, each its own
process, over one PostgreSQL schema, with real clients.

- two replicas serving trainers at once, plus a worker: every step lands once, every event is
  projected once, both replicas answer the same RunState;
- many reservers on both replicas against one shared parent cap (replicas leaving projection to
  a worker): the cap is never crossed, exactly floor(cap / amount) holds succeed;
- two promotions of one family racing from both replicas: one wins, one CURRENT_VERSION_MOVED;
- kill -9 of the replica a client streams to: the client fails over to the other, nothing acked
  is lost or recorded twice;
- the database stopped mid-run: UNAVAILABLE, health NOT_SERVING, then SERVING again by itself,
  acked events intact and not duplicated;
- the database down at start: one line and a non-zero exit, for `serve` and `project`.

Needs TRAINLEDGER_TEST_DATABASE_URL; the outage test starts a PostgreSQL of its own (scripts/pg).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
if not POSTGRES_URL:
    pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set", allow_module_level=True)

import grpc  # noqa: E402
import msgspec  # noqa: E402
import psycopg  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402

from clients import (  # noqa: E402
    CurrentVersionMoved,
    LedgerClient,
    RetryPolicy,
    RunRecorder,
    SpendCapExceeded,
    Unavailable,
)
from clients.models import StepAck  # noqa: E402
from ledger.views.schema import VIEWS  # noqa: E402

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120), pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]
PATIENT = RetryPolicy(attempts=1_000, initial_backoff_s=0.05, max_backoff_s=0.5, total_s=60.0)
SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


def _with_schema(url: str, schema: str, **settings: object) -> str:
    query = "&".join(f"{key}={value}" for key, value in {"schema": schema, **settings}.items())
    return f"{url}{'&' if '?' in url else '?'}{query}"


def _drop_schema(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def schema() -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    _drop_schema(POSTGRES_URL, name)


@pytest.fixture
def url(schema: str) -> str:
    return _with_schema(POSTGRES_URL, schema)


def _trainledger() -> list[str]:
    script = Path(sys.executable).with_name("trainledger")
    return [str(script)] if script.exists() else [sys.executable, "-m", "services.cli"]


class Process:
    """A `trainledger` process: stdout piped (its first line says it is up), stderr in a log."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        env = {key: value for key, value in os.environ.items() if key != "TRAINLEDGER_DATABASE_URL"}
        with open(log, "wb") as output:
            self.popen = subprocess.Popen(
                [*_trainledger(), *args],
                stdout=subprocess.PIPE,
                stderr=output,
                env={**env, "PYTHONUNBUFFERED": "1"},
                cwd=ROOT,
            )
        self.port = 0

    def ready(self, timeout_s: float = 60) -> str:
        """The first line on stdout ("serving on HOST:PORT ..." or "projecting ...")."""
        assert self.popen.stdout is not None
        readable, _, _ = select.select([self.popen.stdout], [], [], timeout_s)
        line = self.popen.stdout.readline().decode() if readable else ""
        if not line:
            self.popen.kill()
            raise AssertionError(f"{self.log.name} did not start: {self.log.read_text()[-3000:]}")
        if "serving on" in line:
            self.port = int(line.split("serving on ", 1)[1].split()[0].rsplit(":", 1)[1])
        return line

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, timeout_s: float = 20) -> int:
        """SIGTERM, then the exit status (SIGKILL if it does not exit in time)."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise AssertionError(f"{self.log.name} ignored SIGTERM: {self.log.read_text()[-3000:]}") from None
        finally:
            if self.popen.stdout is not None:
                self.popen.stdout.close()


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Callable[..., list[Process]]]:
    """launch(["serve", ...], ["project", ...]) starts the commands together, waits until each
    is up, and returns them; whatever is still running at the end is stopped."""
    started: list[Process] = []

    def start(*commands: list[str]) -> list[Process]:
        processes = []
        for args in commands:
            process = Process(args, tmp_path / f"{args[0]}-{len(started)}.log")
            started.append(process)
            processes.append(process)
        for process in processes:
            process.ready()
        return processes

    yield start
    for process in started:
        if process.popen.poll() is None:
            process.popen.send_signal(signal.SIGTERM)
    for process in started:
        try:
            process.stop()
        except AssertionError:
            pass


def serve(url: str, *extra: str) -> list[str]:
    return ["serve", "--database-url", url, "--listen", "127.0.0.1:0", *extra]


def project(url: str) -> list[str]:
    return ["project", "--database-url", url]


def _in_threads(work: list[Callable[[], Any]]) -> list[Any]:
    """Run each callable in its own thread, released together; their results (or errors)."""
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
        thread.join(timeout=90)
    return results


def _series(client: LedgerClient, run_id: str) -> list[int]:
    steps: list[int] = []
    from_step: int | None = 0
    while from_step is not None:
        page = client.get_series(run_id=run_id, from_step=from_step, page_size=10_000)
        steps += page.steps
        from_step = page.next_from_step
    return steps


def _view_rows(schema: str) -> tuple[int, int, int, dict[str, int], int]:
    """(series rows, steps in them, distinct batches, tracking positions, log head)."""
    with psycopg.connect(POSTGRES_URL) as connection:
        rows, steps, distinct = connection.execute(
            f"SELECT COUNT(*), COALESCE(SUM(count), 0), COUNT(DISTINCT (run_id, first_step, attempt))"
            f' FROM "{schema}".view_series'
        ).fetchone() or (0, 0, 0)
        tracking = dict(connection.execute(f'SELECT view, position FROM "{schema}".view_tracking').fetchall())
        head = connection.execute(f'SELECT MAX(notification_id) FROM "{schema}".trainledger_events').fetchone()
    return int(rows), int(steps), int(distinct), tracking, int(head[0] if head else 0)


def _health(address: str) -> int:
    with grpc.insecure_channel(address) as channel:
        return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5).status


def _until(predicate: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Seconds until `predicate()` held (polled every 0.1 s); fails after `timeout_s`."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        time.sleep(0.1)
    return time.monotonic() - started


def _check_acked_steps(client: LedgerClient, run_id: str, acks: list[StepAck], steps: int) -> None:
    """Every acked batch of the run is in the log exactly once and the run has every step once."""
    events = [e for e in client.read_events(from_position=1, types=["StepsRecorded"]) if e.originator_id == run_id]
    assert sorted({ack.position for ack in acks}) == [e.position for e in events]
    recorded = [step for e in events for step in e.data_json["steps"]]
    assert sorted(recorded) == list(range(steps)), "a step is missing or recorded twice"
    assert _series(client, run_id) == list(range(steps))


def test_two_replicas_and_a_worker_record_and_project_every_event_once(launch, url: str, schema: str) -> None:
    first, second, worker = launch(serve(url), serve(url), project(url))
    steps, holds = 3_000, 10
    recorded: dict[str, list[StepAck]] = {}

    def train(replica: Process, key: str) -> tuple[str, str]:
        acks: list[StepAck] = []
        with LedgerClient(replica.address, principal=key, retries=PATIENT) as client:
            recorder = RunRecorder.open(
                client, run_key=key, cap_usd_micro=10**9, batch_steps_max=100, batch_interval_s=0.01, on_ack=acks.append
            )
            for step in range(steps):
                recorder.log(step, tokens=32, loss=1.0 / (step + 1))
                if step % (steps // holds) == 0:
                    with recorder.reserve(1_000) as hold:
                        hold.actual_usd_micro = 900
            assert recorder.flush(60), recorder.counters
            assert recorder.counters["acked"] == steps and recorder.counters["dropped"] == 0
            recorder.checkpoint(steps - 1, f"s3://ck/{key}", backend="s3")
            recorder.finish()
            recorded[recorder.run_id] = acks
            return recorder.run_id, key

    results = _in_threads([lambda: train(first, "on-first"), lambda: train(second, "on-second")])
    assert all(isinstance(result, tuple) for result in results), results

    with LedgerClient(first.address) as on_first, LedgerClient(second.address) as on_second:
        head = max(e.position for e in on_first.read_events(from_position=1))
        for run_id, acks in recorded.items():
            _check_acked_steps(on_second, run_id, acks, steps)
            states = [client.get_run_state(run_id=run_id, min_position=head) for client in (on_first, on_second)]
            assert all(state.position >= head for state in states)
            assert msgspec.structs.replace(states[0], position=0) == msgspec.structs.replace(states[1], position=0)
            assert states[0].last_step == steps - 1 and states[0].run.status == "done"
            assert states[0].spend.committed_usd_micro == 900 * holds  # Sums of increments.
            assert states[0].checkpoint.step == steps - 1

    # Exactly once: one view row per recorded batch, every view at the head, nothing beyond.
    rows, total, distinct, tracking, log_head = _view_rows(schema)
    batches = sum(len({ack.position for ack in acks}) for acks in recorded.values())
    assert (rows, total, distinct) == (batches, 2 * steps, batches)
    assert tracking == dict.fromkeys(VIEWS, log_head) and log_head == head
    assert worker.stop() == 0  # The worker exits cleanly on SIGTERM.
    assert first.stop() == 0 and second.stop() == 0


def test_reservers_on_both_replicas_never_cross_a_shared_parent_cap(launch, url: str) -> None:
    # The replicas leave projection to a worker: their views follow what it commits.
    replicas = launch(serve(url, "--no-project"), serve(url, "--no-project"), project(url))[:2]
    cap, amount, reservers = 20_000, 700, 12
    patient = RetryPolicy(attempts=50, initial_backoff_s=0.01, max_backoff_s=0.2, total_s=60.0)
    with LedgerClient(replicas[0].address, retries=patient) as admin:
        admin.open_account(account="team", cap_usd_micro=cap)
        runs = [
            admin.open_run(run_key=f"reserver-{index}", parent_account="team").state.run.run_id
            for index in range(reservers)
        ]

    def reserve_until_refused(index: int) -> tuple[int, int]:
        held, position = 0, 0
        with LedgerClient(replicas[index % 2].address, principal=f"r{index}", retries=patient) as client:
            for number in range(100):
                try:
                    hold = client.reserve(account=runs[index], reservation_id=f"hold-{number}", amount_usd_micro=amount)
                except SpendCapExceeded as refused:
                    assert refused.account == "team" and refused.remaining_usd_micro < amount
                    return held, position
                held, position = held + 1, max(position, hold.position)
                if number % 2:  # Committing the full hold keeps committed + pending unchanged.
                    position = max(
                        position,
                        client.commit(
                            account=runs[index], reservation_id=f"hold-{number}", actual_usd_micro=amount
                        ).position,
                    )
        raise AssertionError("never refused")

    results = _in_threads([lambda i=i: reserve_until_refused(i) for i in range(reservers)])
    assert all(isinstance(result, tuple) for result in results), results
    assert sum(held for held, _ in results) == cap // amount
    position = max(position for _, position in results)
    for replica in replicas:
        with LedgerClient(replica.address) as client:
            team = client.get_account(account="team", min_position=position)
            assert team.committed_usd_micro + team.pending_usd_micro == (cap // amount) * amount <= cap
            children = [client.get_account(account=run_id, min_position=position) for run_id in runs]
            assert sum(a.committed_usd_micro + a.pending_usd_micro for a in children) == (cap // amount) * amount


def test_racing_promotions_from_both_replicas_one_wins(launch, url: str) -> None:
    replicas = launch(serve(url), serve(url))
    clients = [LedgerClient(replica.address, retries=5) for replica in replicas]
    passed = {"passed": True, "reason": "eval ok"}
    try:
        for round_ in range(5):
            family = f"family-{round_}"
            clients[0].register(family=family, artifact_uri="s3://m/1", digest="a" * 64)
            registered = clients[1].register(family=family, artifact_uri="s3://m/2", digest="b" * 64)
            for client in clients:  # Both replicas know the family before they race.
                client.list_versions(family=family, min_position=registered.position)
            results = _in_threads(
                [
                    lambda family=family: clients[0].promote(
                        family=family, version=1, expected_current=0, verdict=passed
                    ),
                    lambda family=family: clients[1].promote(
                        family=family, version=2, expected_current=0, verdict=passed
                    ),
                ]
            )
            won = [r for r in results if not isinstance(r, BaseException)]
            lost = [r for r in results if isinstance(r, BaseException)]
            assert len(won) == 1 and len(lost) == 1, results
            assert isinstance(lost[0], CurrentVersionMoved) and lost[0].reason == "CURRENT_VERSION_MOVED"
            winner = 1 if results[0] is won[0] else 2
            for client in clients:
                assert client.get_current(family=family, min_position=won[0].position).version == winner
    finally:
        for client in clients:
            client.close()


def test_kill_9_of_a_replica_mid_stream_fails_over_and_loses_no_ack(launch, url: str) -> None:
    first, second = launch(serve(url), serve(url))
    steps = 4_000
    acks: list[StepAck] = []
    committed: list[str] = []
    stop_spending = threading.Event()
    # Both replicas in one client: it uses the first and fails over to the second.
    client = LedgerClient([first.address, second.address], principal="failover", timeout_s=5.0, retries=PATIENT)
    recorder = RunRecorder.open(
        client, run_key="failover", cap_usd_micro=10**12, batch_steps_max=100, batch_interval_s=0.02, on_ack=acks.append
    )

    def train() -> None:
        for step in range(steps):
            recorder.log(step, tokens=64, loss=1.0 / (step + 1))
            if step % 100 == 99:
                time.sleep(0.03)

    def spend() -> None:
        number = 0
        while not stop_spending.is_set():
            number += 1
            with recorder.reserve(1_000, reservation_id=f"hold-{number}") as hold:
                hold.actual_usd_micro = 900
            committed.append(hold.reservation_id)
            time.sleep(0.02)

    trainer, spender = threading.Thread(target=train), threading.Thread(target=spend)
    trainer.start()
    spender.start()
    try:
        _until(lambda: len(acks) >= 5 and len(committed) >= 3, 30, "acks and holds before the kill")
        first.popen.kill()  # SIGKILL: no graceful anything.
        first.popen.wait()
        acked_before, committed_before = len(acks), len(committed)
        assert acked_before < steps // 100, "the kill came after everything was acked"
        trainer.join(60)
        _until(lambda: len(committed) >= committed_before + 3, 30, "holds after the kill")
        stop_spending.set()
        spender.join(60)
        assert recorder.flush(60), recorder.counters
        assert len(acks) > acked_before  # Served by the replica still alive.
        counters = recorder.counters
        assert counters["acked"] == steps and counters["failed"] == counters["dropped"] == 0

        with LedgerClient(second.address) as survivor:
            _check_acked_steps(survivor, recorder.run_id, acks, steps)
            reserved = [e for e in survivor.read_events(from_position=1, types=["SpendReserved"])]
            assert Counter(e.data_json["reservation_id"] for e in reserved) == Counter(committed)
            entries = survivor.list_reservations(account=recorder.account, page_size=10_000).reservations
            assert {e.reservation_id: e.state for e in entries} == dict.fromkeys(committed, "committed")
            state = survivor.get_run_state(run_id=recorder.run_id, min_position=max(a.position for a in acks))
            assert state.last_step == steps - 1 and state.current_attempt == 1
            assert state.spend.committed_usd_micro == 900 * len(committed)
            assert state.spend.pending_usd_micro == 0
        recorder.finish()
    finally:
        stop_spending.set()
        recorder.close(flush_timeout_s=0)
        client.close()


def test_database_down_at_start_is_one_line_and_a_failure(tmp_path: Path) -> None:
    port = _free_port()
    down = f"postgresql://postgres@127.0.0.1:{port}/trainledger_test?schema=t_down"
    for args in (serve(down), serve(down, "--no-project"), project(down)):
        started = time.monotonic()
        done = subprocess.run([*_trainledger(), *args], capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert done.stderr.startswith("trainledger: cannot open database") and f"127.0.0.1:{port}" in done.stderr
        assert done.stdout == "" and time.monotonic() - started < 20


def _free_port() -> int:
    """A port nothing listens on (bound to port 0 and closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pg(command: str, directory: Path) -> str:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "pg"), command, str(directory)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


@pytest.fixture
def own_server() -> Iterator[tuple[Path, str]]:
    """A PostgreSQL server this test may stop and start (scripts/pg pause / resume)."""
    if shutil.which("pg_ctl") is None and not any(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")):
        pytest.skip("no PostgreSQL server binaries to start a server of our own")
    directory = Path(f"/tmp/trainledger-replicas-{uuid.uuid4().hex[:8]}")
    try:
        yield directory, _pg("start", directory)
    finally:
        _pg("stop", directory)


def test_database_stopped_mid_run_unavailable_not_serving_then_recovers(own_server, launch) -> None:
    directory, server_url = own_server
    url = _with_schema(server_url, "outage", connect_timeout=2)
    # A replica that leaves projection to a worker: both have to find the database again.
    replica, _worker = launch(serve(url, "--no-project"), project(url))
    assert _health(replica.address) == SERVING
    acks: list[StepAck] = []
    client = LedgerClient(replica.address, principal="outage", timeout_s=5.0, retries=PATIENT)
    recorder = RunRecorder.open(client, run_key="outage", batch_steps_max=50, batch_interval_s=0.01, on_ack=acks.append)
    stop, logged = threading.Event(), [0]

    def train() -> None:
        while not stop.is_set() and logged[0] < 50_000:
            recorder.log(logged[0], tokens=8, loss=0.5)
            logged[0] += 1
            if logged[0] % 50 == 0:
                time.sleep(0.02)

    trainer = threading.Thread(target=train)
    trainer.start()
    try:
        _until(lambda: len(acks) >= 5, 30, "acks before the outage")
        _pg("pause", directory)
        _until(lambda: _health(replica.address) == NOT_SERVING, 15, "health NOT_SERVING")
        with LedgerClient(replica.address, timeout_s=10.0, retries=0) as impatient:
            with pytest.raises(Unavailable):
                impatient.get_run_state(run_id=recorder.run_id)
            with pytest.raises(Unavailable):
                impatient.note_summary(run_id=recorder.run_id, summary={"during": "outage"})
        acked_in_outage = len(acks)
        time.sleep(1.0)
        assert len(acks) == acked_in_outage  # Nothing is acked while the database is away.
        assert _health(replica.address) == NOT_SERVING

        _pg("resume", directory)
        _until(lambda: _health(replica.address) == SERVING, 30, "health SERVING again")
        _until(lambda: len(acks) > acked_in_outage + 5, 30, "acks after the outage")
        stop.set()
        trainer.join(30)
        assert recorder.flush(60), recorder.counters
        counters = recorder.counters
        assert counters["acked"] == logged[0] and counters["failed"] == counters["dropped"] == 0
        _check_acked_steps(client, recorder.run_id, acks, logged[0])
        state = client.get_run_state(run_id=recorder.run_id, min_position=max(a.position for a in acks))
        assert state.last_step == logged[0] - 1
    finally:
        stop.set()
        trainer.join(30)
        recorder.close(flush_timeout_s=0)
        client.close()
