"""Service benchmark: a `trainledger serve` process and this client process over loopback, raw stubs.

    .venv/bin/python bench/service.py [--database-url postgresql://...] [--batches 200] [--run-steps 1000000]

Figures: RecordSteps (one stream, 1,000-step batches, ack per batch), AppendSteps (unary, one at
a time, 1,000-step batches, growing one run to --run-steps), Reserve latency (Reserve then Commit,
one pair at a time), GetRunState latency on the run of --run-steps steps. With --database-url also
grpc_steps_per_s_two_replicas: a second `trainledger serve` on the same database, and two clients
(threads, a channel each), one per replica, each streaming --batches batches to its own run at the
same time; the figure is all their steps over the wall time. The last line printed is one JSON
object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from trainledger.v1 import common_pb2, runs_pb2, runs_pb2_grpc, spend_pb2, spend_pb2_grpc  # noqa: E402

BATCH = 1_000


def start_server(database: str, url: str) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "services.cli", "serve", "--listen", "127.0.0.1:0"]
    command += ["--database-url", url] if url else ["--db", database]
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


def new_run(runs: runs_pb2_grpc.RunsStub, cap: int | None = None) -> str:
    opened = runs.OpenRun(runs_pb2.OpenRunRequest(run_key=f"bench-{uuid.uuid4().hex}", cap_usd_micro=cap), timeout=30)
    run_id = opened.state.run.run_id
    runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), timeout=30)
    return run_id


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def bench(channel: grpc.Channel, args: argparse.Namespace) -> dict[str, float]:
    runs, spend = runs_pb2_grpc.RunsStub(channel), spend_pb2_grpc.SpendStub(channel)
    figures: dict[str, float] = {}

    run_id = new_run(runs)
    requests = [
        runs_pb2.RecordStepsRequest(sequence=n, batch=step_batch(run_id, n * BATCH)) for n in range(args.batches)
    ]
    started = time.perf_counter()
    acks = list(runs.RecordSteps(iter(requests), timeout=300))
    elapsed = time.perf_counter() - started
    assert [a.sequence for a in acks] == list(range(args.batches))
    figures["grpc_steps_per_s"] = round(args.batches * BATCH / elapsed)
    print(f"RecordSteps: {args.batches} batches of {BATCH} steps in {elapsed:.2f} s", file=sys.stderr)

    run_id = new_run(runs)
    batches = args.run_steps // BATCH
    started, last = time.perf_counter(), None
    for n in range(batches):
        last = runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=step_batch(run_id, n * BATCH)), timeout=60)
    elapsed = time.perf_counter() - started
    figures["unary_steps_per_s"] = round(batches * BATCH / elapsed)
    print(f"AppendSteps: {batches} batches of {BATCH} steps in {elapsed:.2f} s", file=sys.stderr)

    account = new_run(runs, cap=10**12)
    reserve_ms, pair_ms = [], []
    for n in range(args.pairs):
        t0 = time.perf_counter()
        spend.Reserve(
            spend_pb2.ReserveRequest(account=account, reservation_id=f"r{n}", amount_usd_micro=1_000), timeout=30
        )
        t1 = time.perf_counter()
        spend.Commit(spend_pb2.CommitRequest(account=account, reservation_id=f"r{n}", actual_usd_micro=900), timeout=30)
        reserve_ms.append((t1 - t0) * 1000)
        pair_ms.append((time.perf_counter() - t0) * 1000)
    figures["reserve_p50_ms"] = round(statistics.median(reserve_ms), 3)
    figures["reserve_p99_ms"] = round(percentile(reserve_ms, 0.99), 3)
    print(f"Reserve+Commit: {args.pairs} pairs, pair p50 {statistics.median(pair_ms):.3f} ms", file=sys.stderr)

    started = time.perf_counter()
    state = runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id, min_position=last.position), timeout=600).state
    print(
        f"projection caught up with {state.last_step + 1:,} steps after {time.perf_counter() - started:.2f} s",
        file=sys.stderr,
    )
    read_ms = []
    for _ in range(args.reads):
        t0 = time.perf_counter()
        runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=30)
        read_ms.append((time.perf_counter() - t0) * 1000)
    figures["run_state_p99_ms_1m_steps"] = round(percentile(read_ms, 0.99), 3)
    return figures


def two_replicas(addresses: list[str], args: argparse.Namespace) -> dict[str, float]:
    """RecordSteps from two clients at once, each to its own replica and run."""
    channels = [
        grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 16 * 1024 * 1024)])
        for address in addresses
    ]
    try:
        stubs = [runs_pb2_grpc.RunsStub(channel) for channel in channels]
        plans = []
        for stub in stubs:
            run_id = new_run(stub)
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
            acked[index] = sum(1 for _ in stubs[index].RecordSteps(iter(plans[index]), timeout=300))

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default="", help="run against PostgreSQL instead of a tmp SQLite file")
    parser.add_argument("--batches", type=int, default=200, help="RecordSteps batches of 1,000 steps")
    parser.add_argument("--run-steps", type=int, default=1_000_000, help="steps grown via AppendSteps")
    parser.add_argument("--pairs", type=int, default=500, help="Reserve + Commit pairs")
    parser.add_argument("--reads", type=int, default=500, help="GetRunState calls")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trainledger-bench-") as directory:
        process, port = start_server(os.path.join(directory, "bench.db"), args.database_url)
        try:
            with grpc.insecure_channel(
                f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", 16 * 1024 * 1024)]
            ) as channel:
                figures = bench(channel, args)
            if args.database_url:
                second, second_port = start_server("", args.database_url)
                try:
                    figures.update(two_replicas([f"127.0.0.1:{port}", f"127.0.0.1:{second_port}"], args))
                finally:
                    second.send_signal(signal.SIGTERM)
                    second.wait(timeout=60)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
    print(f"backend: {'postgresql' if args.database_url else 'sqlite (tmp file)'}; server and client on loopback")
    for name, value in figures.items():
        print(f"  {name:28} {value:>14,}")
    print("rerun: " + shlex.join([".venv/bin/python", "bench/service.py", *sys.argv[1:]]))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
