"""Service benchmark: a `trainledger serve` process and this client process over loopback, raw stubs.

    PYTHONPATH=. .venv/bin/python bench/service.py [--database-url postgresql://...] [--batches 200]
        [--run-steps 1000000] [--clients 32] [--client-pairs 100] [--client-rounds 2]
        [--tls] [--auth] [--compare ROUNDS] [--compare-metrics ROUNDS]
    Quick: ... bench/service.py --batches 50 --run-steps 100000 --pairs 300 --client-pairs 30 --reads 300

Each figure is judged beside a ceiling measured in the same run, so the load on a shared machine
cancels out (goals in bench/goals.py, never test assertions):
- reserve_pairs_ceiling_ratio_32_clients: the 32 clients' Reserve+Commit pairs/s over the ceiling
  of the same clients making Health.Check calls, halved (goal >= 0.6; reserve_p99_ms_32_clients
  <= 30 ms);
- reserve_p99_ms: one client's Reserve (goal <= 3 ms on SQLite, <= 5 ms on PostgreSQL, beside
  PostgreSQL's own round trip: reserve_p99_over_pg_roundtrip, SELECT 1 after each pair; on
  SQLite beside what a durable write costs this disk and the transport at the same moments:
  sqlite_commit_p99_ms_beside_reserve, a raw one-row commit with the ledger's settings in a file
  beside the server's, and noop_p99_ms_beside_reserve, a Health.Check, each after each pair);
- run_state_p99_ms_1m_steps (the size is --run-steps'): GetRunState, each call followed by a
  Health.Check (noop_p99_ms) and on PostgreSQL a SELECT 1 (pg_roundtrip_p99_ms):
  run_state_p99_ms_1m_steps has the goal <= 1.5 ms on SQLite and <= 2 ms on PostgreSQL, and
  get_run_state_p99_over_noop_ms <= 0.5 ms on SQLite (at other sizes the figure is printed,
  unjudged).
The LAST line is one JSON object: the figures, the goals judged (`goals`: value, goal,
meets_goal), the load averages before and after, and the command.

Figures: RecordSteps (one stream, 1,000-step batches, ack per batch), AppendSteps (unary, one at
a time, 1,000-step batches, growing one run to --run-steps), Reserve latency (Reserve then Commit,
one pair at a time), GetRunState latency on the run of --run-steps steps, and --clients trainers
reserving at once (a channel each, each on its own run: reserve_pairs_per_s_32_clients and the
p99 of their Reserves, reserve_p99_ms_32_clients), then the same clients making as many calls that
do nothing (Health.Check): noop_calls_per_s_32_clients, the ceiling the gRPC server itself sets on
this machine (a pair is two calls). With --database-url also
grpc_steps_per_s_two_replicas: a second `trainledger serve` on the same database, and two clients
(threads, a channel each), one per replica, each streaming --batches batches to its own run at the
same time; the figure is all their steps over the wall time. server_cpu_ms_per_batch: the
server's CPU per RecordSteps batch, its projection included (Linux); with a PostgreSQL server on
this machine also postgres_cpu_ms_per_batch, its processes' CPU per batch. On a shared machine
these move less than the rates. The last line printed is one JSON object with the figures.

--tls serves TLS with a certificate of a CA made for the run (tests.certs) and connects with that
CA; --auth serves with `--auth` and sends an admin token issued on the database before the server
starts (Ledger.issue_token). --compare ROUNDS measures only grpc_steps_per_s, ROUNDS times over in
turn plain, TLS and authentication with TLS (a fresh server each), and prints each one's median.
--compare-metrics ROUNDS measures ingest with metrics counted and with `serve --no-metrics`, the
order swapped each round: grpc_steps_per_s, server_cpu_ms_per_batch and append_calls_per_s (--pairs
unary AppendSteps of 10 steps, one at a time), each one's median and the ratio of the two.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.goals import (  # noqa: E402
    SERVICE,
    SERVICE_POSTGRES,
    SERVICE_SQLITE,
    last_line,
    load_average,
    rerun,
    size_label,
    verdicts,
)
from tests.certs import Authority  # noqa: E402
from trainledger.v1 import common_pb2, runs_pb2, runs_pb2_grpc, spend_pb2, spend_pb2_grpc  # noqa: E402

BATCH = 1_000
CHANNEL_OPTIONS = [("grpc.max_send_message_length", 16 * 1024 * 1024)]


class Security:
    """How the bench's servers and channels are secured: TLS files (or none) and a token (or none)."""

    def __init__(self, directory: str, *, tls: bool, auth: bool) -> None:
        self.tls, self.auth, self.token = tls, auth, ""
        self.ca_file = self.cert_file = self.key_file = ""
        if tls:
            authority = Authority(Path(directory) / "ca")
            issued = authority.server()
            self.ca_file, self.cert_file, self.key_file = authority.ca_file, issued.cert_file, issued.key_file

    @property
    def name(self) -> str:
        return " + ".join(part for part, on in (("auth", self.auth), ("TLS", self.tls)) if on) or "plain"

    def serve_options(self) -> list[str]:
        options = ["--tls-cert", self.cert_file, "--tls-key", self.key_file] if self.tls else []
        return options + (["--auth"] if self.auth else [])

    def issue_token(self, database: str) -> None:
        """An admin token, issued on the database before a server opens it."""
        from ledger import Ledger

        ledger = Ledger.open(database)
        try:
            self.token = ledger.issue_token(holder="bench", role="admin").bearer
        finally:
            ledger.close()

    def channel(self, address: str) -> grpc.Channel:
        if not self.tls:
            return grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        credentials = grpc.ssl_channel_credentials(root_certificates=Path(self.ca_file).read_bytes())
        return grpc.secure_channel(address, credentials, options=CHANNEL_OPTIONS)

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()


def start_server(
    database: str, url: str, security: Security, extra: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "services.cli", "serve", "--listen", "127.0.0.1:0", "--no-http", *extra]
    command += security.serve_options()
    command += ["--database-url", url] if url else ["--db", database]
    if security.auth and not security.token:
        security.issue_token(url or database)
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    match = re.search(r"serving on [^:]+:(\d+)", line)
    if not match:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return process, int(match.group(1))


def step_batch(run_id: str, first: int) -> common_pb2.StepBatch:
    steps = range(first, first + BATCH)
    batch = common_pb2.StepBatch(run_id=run_id, attempt=1, steps=steps, tokens=[4_096] * BATCH)
    batch.metrics.add(name="loss", values=[1.0 / (s + 1) for s in steps])
    batch.metrics.add(name="lr", values=[1e-4] * BATCH)
    return batch


def new_run(runs: runs_pb2_grpc.RunsStub, metadata: tuple[tuple[str, str], ...], cap: int | None = None) -> str:
    opened = runs.OpenRun(
        runs_pb2.OpenRunRequest(run_key=f"bench-{uuid.uuid4().hex}", cap_usd_micro=cap), timeout=30, metadata=metadata
    )
    run_id = opened.state.run.run_id
    runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), timeout=30, metadata=metadata)
    return run_id


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def record_steps(channel: grpc.Channel, args: argparse.Namespace, metadata: tuple[tuple[str, str], ...]) -> float:
    """grpc_steps_per_s: one RecordSteps stream of args.batches batches to a new run."""
    return stream_steps(channel, args, metadata)[0]


def stream_steps(
    channel: grpc.Channel, args: argparse.Namespace, metadata: tuple[tuple[str, str], ...]
) -> tuple[float, str, int]:
    """One RecordSteps stream of args.batches batches to a new run: steps/s, the run, the last position."""
    runs = runs_pb2_grpc.RunsStub(channel)
    run_id = new_run(runs, metadata)
    requests = [
        runs_pb2.RecordStepsRequest(sequence=n, batch=step_batch(run_id, n * BATCH)) for n in range(args.batches)
    ]
    started = time.perf_counter()
    acks = list(runs.RecordSteps(iter(requests), timeout=300, metadata=metadata))
    elapsed = time.perf_counter() - started
    assert [a.sequence for a in acks] == list(range(args.batches))
    print(f"RecordSteps: {args.batches} batches of {BATCH} steps in {elapsed:.2f} s", file=sys.stderr)
    return round(args.batches * BATCH / elapsed), run_id, acks[-1].position


def cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds the processes `pids` have used so far (Linux /proc; 0 elsewhere)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def postgres_pids() -> list[int]:
    """The PostgreSQL server's processes on this machine (none when it runs elsewhere)."""
    pids = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() in ("postgres", "postmaster"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def bench(
    channel: grpc.Channel, args: argparse.Namespace, metadata: tuple[tuple[str, str], ...], server: int
) -> dict[str, float]:
    runs, spend = runs_pb2_grpc.RunsStub(channel), spend_pb2_grpc.SpendStub(channel)
    # CPU per 1,000-step batch of the RecordSteps stream, the server's (projection included: the
    # stream's run is read once projected) and, with a local PostgreSQL, the database's. On a
    # shared machine these move less than the rates do.
    # Per process: a backend that ends during the stream takes its CPU with it (a sum over a list
    # fixed beforehand would fall, to a negative figure); one that starts during it counts whole.
    database_cpu = {pid: cpu_s([pid]) for pid in postgres_pids()} if args.database_url else {}
    server_cpu = cpu_s([server])
    rate, streamed, position = stream_steps(channel, args, metadata)
    figures: dict[str, float] = {"grpc_steps_per_s": rate}
    projected = runs_pb2.GetRunStateRequest(run_id=streamed, min_position=position)
    runs.GetRunState(projected, timeout=600, metadata=metadata)
    figures["server_cpu_ms_per_batch"] = round((cpu_s([server]) - server_cpu) * 1000 / args.batches, 2)
    if database_cpu:
        spent = sum(cpu_s([pid]) - database_cpu.get(pid, 0.0) for pid in postgres_pids())
        figures["postgres_cpu_ms_per_batch"] = round(spent * 1000 / args.batches, 2)

    run_id = new_run(runs, metadata)
    batches = args.run_steps // BATCH
    started, last = time.perf_counter(), None
    for n in range(batches):
        last = runs.AppendSteps(
            runs_pb2.AppendStepsRequest(batch=step_batch(run_id, n * BATCH)), timeout=60, metadata=metadata
        )
    elapsed = time.perf_counter() - started
    figures["unary_steps_per_s"] = round(batches * BATCH / elapsed)
    print(f"AppendSteps: {batches} batches of {BATCH} steps in {elapsed:.2f} s", file=sys.stderr)

    account = new_run(runs, metadata, cap=10**12)
    reserve_ms, pair_ms = [], []
    database = Roundtrip(args.database_url) if args.database_url else None
    disk = None if args.database_url else DiskCommit(os.path.join(args.directory, "raw.db"))
    health, noop_ms = health_pb2_grpc.HealthStub(channel), []
    for n in range(args.pairs):
        if database is not None:
            database.select_one()
        if disk is not None:
            disk.commit_one()
            t0 = time.perf_counter()
            health.Check(health_pb2.HealthCheckRequest(), timeout=30)
            noop_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        spend.Reserve(
            spend_pb2.ReserveRequest(account=account, reservation_id=f"r{n}", amount_usd_micro=1_000),
            timeout=30,
            metadata=metadata,
        )
        t1 = time.perf_counter()
        spend.Commit(
            spend_pb2.CommitRequest(account=account, reservation_id=f"r{n}", actual_usd_micro=900),
            timeout=30,
            metadata=metadata,
        )
        reserve_ms.append((t1 - t0) * 1000)
        pair_ms.append((time.perf_counter() - t0) * 1000)
    figures["reserve_p50_ms"] = round(statistics.median(reserve_ms), 3)
    figures["reserve_p99_ms"] = round(percentile(reserve_ms, 0.99), 3)
    if database is not None:
        database.close()
        roundtrip = round(percentile(database.samples_ms, 0.99), 3)
        figures["pg_roundtrip_p99_ms_beside_reserve"] = roundtrip
        figures["reserve_p99_over_pg_roundtrip"] = round(figures["reserve_p99_ms"] / roundtrip, 2)
    if disk is not None:
        disk.close()
        figures["sqlite_commit_p99_ms_beside_reserve"] = round(percentile(disk.samples_ms, 0.99), 3)
        figures["noop_p99_ms_beside_reserve"] = round(percentile(noop_ms, 0.99), 3)
    print(f"Reserve+Commit: {args.pairs} pairs, pair p50 {statistics.median(pair_ms):.3f} ms", file=sys.stderr)

    started = time.perf_counter()
    state = runs.GetRunState(
        runs_pb2.GetRunStateRequest(run_id=run_id, min_position=last.position), timeout=600, metadata=metadata
    ).state
    print(
        f"projection caught up with {state.last_step + 1:,} steps after {time.perf_counter() - started:.2f} s",
        file=sys.stderr,
    )
    figures.update(reads(channel, run_id, args, metadata))
    return figures


def reads(
    channel: grpc.Channel, run_id: str, args: argparse.Namespace, metadata: tuple[tuple[str, str], ...]
) -> dict[str, float]:
    """GetRunState of the grown run, each call followed by a no-op call (Health.Check, one client,
    the same channel) and, on PostgreSQL, a SELECT 1 of its own: their p99s in the same conditions.
    get_run_state_p99_over_noop_ms is what the read adds to the gRPC server's own round trip."""
    runs, health = runs_pb2_grpc.RunsStub(channel), health_pb2_grpc.HealthStub(channel)
    database = Roundtrip(args.database_url) if args.database_url else None
    read_ms, noop_ms = [], []
    try:
        for _ in range(args.reads):
            t0 = time.perf_counter()
            runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=30, metadata=metadata)
            t1 = time.perf_counter()
            health.Check(health_pb2.HealthCheckRequest(), timeout=30)
            read_ms.append((t1 - t0) * 1000)
            noop_ms.append((time.perf_counter() - t1) * 1000)
            if database is not None:
                database.select_one()
    finally:
        if database is not None:
            database.close()
    name = f"run_state_p99_ms_{size_label(args.run_steps)}_steps"
    figures = {name: round(percentile(read_ms, 0.99), 3), "noop_p99_ms": round(percentile(noop_ms, 0.99), 3)}
    figures["get_run_state_p99_over_noop_ms"] = round(figures[name] - figures["noop_p99_ms"], 3)
    if database is not None:
        figures["pg_roundtrip_p99_ms"] = round(percentile(database.samples_ms, 0.99), 3)
        figures["run_state_p99_over_pg_roundtrip"] = round(figures[name] / figures["pg_roundtrip_p99_ms"], 2)
    return figures


class Roundtrip:
    """PostgreSQL's own round trip from this process: SELECT 1 on one connection, timed."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.connection = psycopg.connect(url, autocommit=True)
        self.samples_ms: list[float] = []

    def select_one(self) -> None:
        started = time.perf_counter()
        self.connection.execute("SELECT 1").fetchone()
        self.samples_ms.append((time.perf_counter() - started) * 1000)

    def close(self) -> None:
        self.connection.close()


class DiskCommit:
    """What a durable write costs this disk: a one-row commit of raw SQLite with the ledger's
    settings (WAL, synchronous=FULL), in a file beside the server's, timed."""

    def __init__(self, path: str) -> None:
        self.connection = sqlite3.connect(path, isolation_level=None)
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute("PRAGMA synchronous=FULL")
        self.connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB)")
        self.samples_ms: list[float] = []

    def commit_one(self) -> None:
        started = time.perf_counter()
        self.connection.execute("BEGIN IMMEDIATE")
        self.connection.execute("INSERT INTO t (payload) VALUES (?)", (bytes(200),))
        self.connection.execute("COMMIT")
        self.samples_ms.append((time.perf_counter() - started) * 1000)

    def close(self) -> None:
        self.connection.close()


def many_clients(address: str, args: argparse.Namespace, security: Security) -> dict[str, float]:
    """reserve_pairs_per_s_32_clients and reserve_p99_ms_32_clients: --clients trainers at once
    (threads, a channel each, so a connection each), each reserving and committing
    --client-pairs pairs one at a time on its own capped run; pairs over the wall time, and the
    p99 of every Reserve's latency. Beside it the ceiling: the same clients making as many calls
    that do nothing (Health.Check, answered on the event loop through the same interceptors),
    what the gRPC server itself allows on this machine; a pair is two calls, so the ceiling of
    pairs/s is half of it. --client-rounds rounds, the order swapped each round; the ratio is the
    median of each round's."""
    metadata = security.metadata
    channels = [security.channel(address) for address in [address] * args.clients]
    try:
        accounts = [new_run(runs_pb2_grpc.RunsStub(channel), metadata, cap=10**12) for channel in channels]
        barrier = threading.Barrier(args.clients + 1)
        latencies: list[list[float]] = [[] for _ in channels]
        rounds: list[int] = [0]

        def trainer(index: int) -> None:
            spend = spend_pb2_grpc.SpendStub(channels[index])
            account, prefix = accounts[index], f"r{rounds[0]}-"
            barrier.wait()
            for n in range(args.client_pairs):
                t0 = time.perf_counter()
                spend.Reserve(
                    spend_pb2.ReserveRequest(account=account, reservation_id=f"{prefix}{n}", amount_usd_micro=1_000),
                    timeout=60,
                    metadata=metadata,
                )
                latencies[index].append((time.perf_counter() - t0) * 1000)
                spend.Commit(
                    spend_pb2.CommitRequest(account=account, reservation_id=f"{prefix}{n}", actual_usd_micro=900),
                    timeout=60,
                    metadata=metadata,
                )

        def checker(index: int) -> None:
            health = health_pb2_grpc.HealthStub(channels[index])
            barrier.wait()
            for _ in range(2 * args.client_pairs):
                health.Check(health_pb2.HealthCheckRequest(), timeout=60)

        def at_once(target: Callable[[int], None]) -> float:
            threads = [threading.Thread(target=target, args=(index,)) for index in range(args.clients)]
            for thread in threads:
                thread.start()
            barrier.wait()
            started = time.perf_counter()
            for thread in threads:
                thread.join()
            return time.perf_counter() - started

        pairs_s, checks_s = [], []
        for number in range(args.client_rounds):
            rounds[0] = number
            if number % 2 == 0:
                pairs_s.append(at_once(trainer))
                checks_s.append(at_once(checker))
            else:
                checks_s.append(at_once(checker))
                pairs_s.append(at_once(trainer))
            print(
                f"round {number + 1}: {args.clients} clients x {args.client_pairs} Reserve+Commit pairs at once in"
                f" {pairs_s[-1]:.2f} s; as many Health.Check calls in {checks_s[-1]:.2f} s (load {load_average()})",
                file=sys.stderr,
            )
    finally:
        for channel in channels:
            channel.close()
    reserves = [latency for mine in latencies for latency in mine]
    assert len(reserves) == args.clients * args.client_pairs * args.client_rounds, len(reserves)
    pairs = args.clients * args.client_pairs
    clients = args.clients
    return {
        f"reserve_pairs_per_s_{clients}_clients": round(pairs / statistics.median(pairs_s)),
        f"reserve_p99_ms_{clients}_clients": round(percentile(reserves, 0.99), 3),
        f"noop_calls_per_s_{clients}_clients": round(2 * pairs / statistics.median(checks_s)),
        f"reserve_pairs_ceiling_{clients}_clients": round(pairs / statistics.median(checks_s)),
        f"reserve_pairs_ceiling_ratio_{clients}_clients": round(
            statistics.median(checks / spent for checks, spent in zip(checks_s, pairs_s, strict=True)), 3
        ),
    }


def two_replicas(addresses: list[str], args: argparse.Namespace, security: Security) -> dict[str, float]:
    """RecordSteps from two clients at once, each to its own replica and run."""
    channels = [security.channel(address) for address in addresses]
    metadata = security.metadata
    try:
        stubs = [runs_pb2_grpc.RunsStub(channel) for channel in channels]
        plans = []
        for stub in stubs:
            run_id = new_run(stub, metadata)
            plans.append(
                [
                    runs_pb2.RecordStepsRequest(sequence=n, batch=step_batch(run_id, n * BATCH))
                    for n in range(args.batches)
                ]
            )
        barrier = threading.Barrier(len(stubs) + 1)
        acked = [0] * len(stubs)

        def stream(index: int) -> None:
            barrier.wait()
            acked[index] = sum(1 for _ in stubs[index].RecordSteps(iter(plans[index]), timeout=300, metadata=metadata))

        threads = [threading.Thread(target=stream, args=(index,)) for index in range(len(stubs))]
        for thread in threads:
            thread.start()
        barrier.wait()
        started = time.perf_counter()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
    finally:
        for channel in channels:
            channel.close()
    assert acked == [args.batches] * len(stubs), acked
    print(f"RecordSteps, two replicas: 2 x {args.batches} batches of {BATCH} steps in {elapsed:.2f} s", file=sys.stderr)
    return {"grpc_steps_per_s_two_replicas": round(sum(acked) * BATCH / elapsed)}


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)


def compare(args: argparse.Namespace) -> dict[str, float]:
    """grpc_steps_per_s plain, with TLS and with authentication and TLS, alternated, fresh servers."""
    modes = {"plain": (False, False), "tls": (True, False), "auth_tls": (True, True)}
    measured: dict[str, list[float]] = {mode: [] for mode in modes}
    for round_number in range(args.compare):
        for mode, (tls, auth) in modes.items():
            with tempfile.TemporaryDirectory(prefix="trainledger-bench-") as directory:
                security = Security(directory, tls=tls, auth=auth)
                process, port = start_server(os.path.join(directory, "bench.db"), args.database_url, security)
                try:
                    with security.channel(f"127.0.0.1:{port}") as channel:
                        measured[mode].append(record_steps(channel, args, security.metadata))
                finally:
                    stop(process)
            print(f"round {round_number + 1}, {security.name}: {measured[mode][-1]:,} steps/s", file=sys.stderr)
    figures = {f"grpc_steps_per_s_{mode}": round(statistics.median(values)) for mode, values in measured.items()}
    for mode in ("tls", "auth_tls"):
        figures[f"{mode}_vs_plain"] = round(figures[f"grpc_steps_per_s_{mode}"] / figures["grpc_steps_per_s_plain"], 3)
    return figures


def unary_appends(channel: grpc.Channel, args: argparse.Namespace, metadata: tuple[tuple[str, str], ...]) -> float:
    """AppendSteps calls per second, one at a time, 10 steps each (args.pairs calls): the per-call path."""
    runs = runs_pb2_grpc.RunsStub(channel)
    run_id = new_run(runs, metadata)
    started = time.perf_counter()
    for n in range(args.pairs):
        batch = common_pb2.StepBatch(run_id=run_id, attempt=1, steps=range(n * 10, n * 10 + 10))
        batch.metrics.add(name="loss", values=[0.5] * 10)
        runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch), timeout=30, metadata=metadata)
    return round(args.pairs / (time.perf_counter() - started))


def compare_metrics(args: argparse.Namespace) -> dict[str, float]:
    """Ingest with metrics counted and without (serve --no-metrics), alternated (the order swapped
    each round), fresh servers: RecordSteps steps/s, the server's CPU per batch, unary AppendSteps/s."""
    modes = {"metrics": (), "no_metrics": ("--no-metrics",)}
    measured: dict[str, dict[str, list[float]]] = {mode: {} for mode in modes}
    for round_number in range(args.compare_metrics):
        order = list(modes) if round_number % 2 == 0 else list(reversed(modes))
        for mode in order:
            with tempfile.TemporaryDirectory(prefix="trainledger-bench-") as directory:
                security = Security(directory, tls=False, auth=False)
                process, port = start_server(os.path.join(directory, "bench.db"), "", security, modes[mode])
                try:
                    with security.channel(f"127.0.0.1:{port}") as channel:
                        cpu = cpu_s([process.pid])
                        rate = record_steps(channel, args, ())
                        figures = {
                            "grpc_steps_per_s": rate,
                            "server_cpu_ms_per_batch": (cpu_s([process.pid]) - cpu) * 1000 / args.batches,
                            "append_calls_per_s": unary_appends(channel, args, ()),
                        }
                finally:
                    stop(process)
            for name, value in figures.items():
                measured[mode].setdefault(name, []).append(value)
            print(f"round {round_number + 1}, {mode}: {figures}", file=sys.stderr)
    result: dict[str, float] = {}
    for mode, by_name in measured.items():
        for name, values in by_name.items():
            result[f"{name}_{mode}"] = round(statistics.median(values), 2)
    for name in measured["metrics"]:
        result[f"{name}_metrics_vs_none"] = round(result[f"{name}_metrics"] / result[f"{name}_no_metrics"], 3)
    return result


def run_all(args: argparse.Namespace, directory: str) -> dict[str, float]:
    args.directory = directory
    security = Security(directory, tls=args.tls, auth=args.auth)
    process, port = start_server(os.path.join(directory, "bench.db"), args.database_url, security)
    try:
        with security.channel(f"127.0.0.1:{port}") as channel:
            figures = bench(channel, args, security.metadata, process.pid)
        if args.clients:
            figures.update(many_clients(f"127.0.0.1:{port}", args, security))
        if args.database_url:
            second, second_port = start_server("", args.database_url, security)
            try:
                figures.update(two_replicas([f"127.0.0.1:{port}", f"127.0.0.1:{second_port}"], args, security))
            finally:
                stop(second)
    finally:
        stop(process)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default="", help="run against PostgreSQL instead of a tmp SQLite file")
    parser.add_argument("--batches", type=int, default=200, help="RecordSteps batches of 1,000 steps")
    parser.add_argument("--run-steps", type=int, default=1_000_000, help="steps grown via AppendSteps")
    parser.add_argument("--pairs", type=int, default=500, help="Reserve + Commit pairs")
    parser.add_argument("--clients", type=int, default=32, help="trainers reserving at once (0: leave out)")
    parser.add_argument("--client-pairs", type=int, default=100, help="Reserve + Commit pairs per trainer at once")
    parser.add_argument(
        "--client-rounds", type=int, default=2, help="rounds of the clients' pairs and no-op calls, alternated"
    )
    parser.add_argument("--reads", type=int, default=500, help="GetRunState calls")
    parser.add_argument("--tls", action="store_true", help="serve and connect with TLS (a CA made for the run)")
    parser.add_argument("--auth", action="store_true", help="serve with --auth and call with an admin token")
    parser.add_argument("--compare", type=int, default=0, metavar="ROUNDS", help="plain vs TLS vs auth + TLS only")
    parser.add_argument(
        "--compare-metrics", type=int, default=0, metavar="ROUNDS", help="ingest with and without metrics only"
    )
    args = parser.parse_args()
    load_before = load_average()
    if args.compare_metrics:
        figures = compare_metrics(args)
        setting = "medians, metrics counted / not counted (serve --no-metrics) alternated"
    elif args.compare:
        figures = compare(args)
        setting = "grpc_steps_per_s medians, plain / TLS / auth + TLS alternated"
    else:
        with tempfile.TemporaryDirectory(prefix="trainledger-bench-") as directory:
            figures = run_all(args, directory)
        setting = " + ".join(part for part, on in (("auth", args.auth), ("TLS", args.tls)) if on) or "plain"
    backend = "postgresql" if args.database_url else "sqlite (tmp file)"
    print(f"backend: {backend}; server and client on loopback; {setting}")
    for name, value in figures.items():
        print(f"  {name:40} {value:>14,}")
    goals = verdicts(figures, SERVICE + (SERVICE_POSTGRES if args.database_url else SERVICE_SQLITE))
    print(last_line({"backend": backend, **figures}, goals, rerun("bench/service.py", sys.argv[1:]), load_before))


if __name__ == "__main__":
    main()
