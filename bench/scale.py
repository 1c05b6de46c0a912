"""Benchmark of a large ledger, in-process on the SQLite default: reads that must stay flat as the
ledger grows, the bytes a step costs on disk, and the rebuild of the views from the log.

Run:  .venv/bin/python bench/scale.py [--runs 10000] [--steps 100000000] [--calls 1000]
      [--db PATH] [--no-grpc] [--no-rebuild]
Generates --runs runs holding --steps steps in all, each step with one metric ("loss"), through
the ledger's own append path (1,000-step batches, --active runs written at once in turn, each run
opened with a plan and an objective, a checkpoint at its end, all but the last --active finished),
waits for the views, then measures:
- list_runs: a page of 100 runs (ListRuns), newest first, at random depths of the list,
  and the first page of the running ones;
- run_state: RunState of a random run;
- series_page: a series page of 1,000 steps of a random run from a random step;
- the same three over gRPC (a `trainledger serve` process on the file; --no-grpc skips it);
  each read's median and p99 (name_p50_ms, name_p99_ms);
- bytes_per_step: the database file (events, seals, keys and every view; WAL checkpointed) over
  the steps, with each table's and index's share (SQLite's dbstat);
- rebuild_steps_per_s: every view dropped and projected again from the log (--no-rebuild skips).
--db keeps the ledger in PATH; a PATH that already holds runs is measured as it is (no
generation), so a large ledger is generated once. Prints each figure as it goes; the LAST line
is one JSON object.
Goals (never test assertions): list_runs_p99_ms <= 20, run_state_p99_ms <= 2,
series_page_p99_ms <= 20, bytes_per_step <= 24, rebuild_steps_per_s >= 500,000.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ledger import Ledger  # noqa: E402

BATCH = 1_000
PAGE = 100
SERIES_PAGE = 1_000


def p99_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000, 3)


def p50_ms(samples: list[float]) -> float:
    return round(sorted(samples)[len(samples) // 2] * 1000, 3)


def latencies(figures: dict[str, float], name: str, samples: list[float]) -> str:
    """Adds name_p50_ms and name_p99_ms to `figures`; says them."""
    figures[f"{name}_p50_ms"], figures[f"{name}_p99_ms"] = p50_ms(samples), p99_ms(samples)
    return f"p50 {figures[f'{name}_p50_ms']} ms, p99 {figures[f'{name}_p99_ms']} ms"


def timed(read: Callable[[int], object], calls: int) -> list[float]:
    read(0)  # warm
    samples = []
    for n in range(calls):
        started = time.perf_counter()
        read(n)
        samples.append(time.perf_counter() - started)
    return samples


def generate(ledger: Ledger, runs: int, steps: int, active: int) -> None:
    """`runs` runs of steps // runs steps each (the first runs take the remainder), written
    `active` at a time, their batches in turn."""
    per_run, extra = divmod(steps, runs)
    rng = random.Random(15)
    started = time.perf_counter()
    written = 0
    for wave in range(0, runs, active):
        numbers = range(wave, min(wave + active, runs))
        ids, lengths = [], []
        for n in numbers:
            length = per_run + (1 if n < extra else 0)
            run_id = ledger.open_run(
                run_key=f"scale-{n}",
                name=f"scale run {n} {'sft' if n % 3 else 'rl'}",
                max_steps=max(length, 1),
                objective=("loss", "min"),
            ).run_id
            ledger.start_attempt(run_id=run_id, attempt_id=f"scale-{n}-a1")
            ids.append(run_id)
            lengths.append(length)
        for first in range(1, max(lengths) + 1, BATCH):
            for run_id, length in zip(ids, lengths, strict=True):
                if first > length:
                    continue
                batch = list(range(first, min(first + BATCH, length + 1)))
                ledger.append_steps(
                    run_id=run_id,
                    attempt=1,
                    steps=batch,
                    metrics={"loss": [rng.random() for _ in batch]},
                )
                written += len(batch)
        last_wave = wave + active >= runs
        for run_id, length in zip(ids, lengths, strict=True):
            ledger.save_checkpoint(
                run_id=run_id,
                attempt=1,
                step=length,
                backend="hf",
                uri=f"file:///scale/{run_id}/{length}",
                scores={"loss": rng.random()},
            )
            if not last_wave:
                ledger.finish_run(run_id=run_id, attempt=1, status="done")
        if (wave // active) % 10 == 0 or last_wave:
            elapsed = time.perf_counter() - started
            print(
                f"generated {wave + len(numbers):,} runs, {written:,} steps in {elapsed:.0f} s"
                f" ({written / elapsed:,.0f} steps/s)",
                flush=True,
            )


def table_bytes(path: str) -> dict[str, int]:
    """Bytes on disk per table and index (dbstat), largest first; {} where SQLite lacks dbstat."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY SUM(pgsize) DESC"
        ).fetchall()
    except sqlite3.OperationalError:
        return {}
    finally:
        connection.close()
    return {name: int(size) for name, size in rows}


def measure_bytes(path: str, steps: int) -> float:
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        free = connection.execute("PRAGMA freelist_count").fetchone()[0]
        page = connection.execute("PRAGMA page_size").fetchone()[0]
    finally:
        connection.close()
    size = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    print(f"database: {size:,} bytes ({free * page:,} of them free pages) for {steps:,} steps", flush=True)
    for name, used in table_bytes(path).items():
        if used >= size // 1000:
            print(f"  {name}: {used:,} bytes, {used / steps:.2f} per step", flush=True)
    return round(size / steps, 2)


def in_process_reads(ledger: Ledger, run_ids: list[str], lengths: dict[str, int], calls: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    rng = random.Random(7)
    # ListRuns: every page's cursor, then pages at random depths (and the running runs' first page).
    cursors: list[tuple[float, str] | None] = [None]
    page = ledger.list_runs(limit=PAGE)
    while page.after is not None:
        cursors.append(page.after)
        page = ledger.list_runs(limit=PAGE, after=page.after)
    said = latencies(
        figures, "list_runs", timed(lambda n: ledger.list_runs(limit=PAGE, after=rng.choice(cursors)), calls)
    )
    print(f"ListRuns page of {PAGE} at a random depth of {len(run_ids):,} runs ({len(cursors)} pages): {said}")
    said = latencies(
        figures, "list_runs_running", timed(lambda n: ledger.list_runs(limit=PAGE, status="running"), calls)
    )
    print(f"ListRuns first page of the running runs: {said}", flush=True)
    said = latencies(figures, "run_state", timed(lambda n: ledger.run_state(rng.choice(run_ids)), calls))
    print(f"RunState of a random run: {said}", flush=True)

    def series(n: int) -> None:
        run_id = rng.choice(run_ids)
        page = ledger.series(run_id, from_step=rng.randrange(1, lengths[run_id] + 1), limit=SERIES_PAGE)
        assert page.steps, run_id

    said = latencies(figures, "series_page", timed(series, calls))
    print(f"series page of {SERIES_PAGE} steps of a random run from a random step: {said}", flush=True)
    return figures


def grpc_reads(path: str, run_ids: list[str], lengths: dict[str, int], calls: int) -> dict[str, float]:
    """The same reads through a `trainledger serve` process on the file, over loopback."""
    import grpc

    from trainledger.v1 import runs_pb2, runs_pb2_grpc

    command = [sys.executable, "-m", "services.cli", "serve", "--listen", "127.0.0.1:0", "--no-http", "--db", path]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    figures: dict[str, float] = {}
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"serving on [^:]+:(\d+)", line)
        if not match:
            raise SystemExit(f"the server did not start: {line!r}")
        channel = grpc.insecure_channel(f"127.0.0.1:{match.group(1)}")
        runs = runs_pb2_grpc.RunsStub(channel)
        rng = random.Random(8)
        tokens = [""]
        reply = runs.ListRuns(runs_pb2.ListRunsRequest(page_size=PAGE), timeout=30)
        while reply.next_page_token:
            tokens.append(reply.next_page_token)
            reply = runs.ListRuns(runs_pb2.ListRunsRequest(page_size=PAGE, page_token=reply.next_page_token))
        said = latencies(
            figures,
            "grpc_list_runs",
            timed(
                lambda n: runs.ListRuns(
                    runs_pb2.ListRunsRequest(page_size=PAGE, page_token=rng.choice(tokens)), timeout=30
                ),
                calls,
            ),
        )
        print(f"over gRPC: ListRuns {said}", flush=True)
        said = latencies(
            figures,
            "grpc_run_state",
            timed(
                lambda n: runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=rng.choice(run_ids)), timeout=30), calls
            ),
        )
        print(f"over gRPC: GetRunState {said}", flush=True)

        def series(n: int) -> None:
            run_id = rng.choice(run_ids)
            from_step = rng.randrange(1, lengths[run_id] + 1)
            runs.GetSeries(
                runs_pb2.GetSeriesRequest(run_id=run_id, from_step=from_step, page_size=SERIES_PAGE), timeout=30
            )

        said = latencies(figures, "grpc_series_page", timed(series, calls))
        print(f"over gRPC: GetSeries {said}", flush=True)
        channel.close()
    finally:
        process.terminate()
        process.wait(timeout=60)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=100_000_000, help="steps in all, over every run")
    parser.add_argument("--active", type=int, default=100, help="runs written at once, their batches in turn")
    parser.add_argument("--calls", type=int, default=1_000, help="timed calls of each read")
    parser.add_argument("--db", default="", help="keep the ledger in this file (reused when it holds runs)")
    parser.add_argument("--no-grpc", action="store_true", help="skip the reads over gRPC")
    parser.add_argument("--no-rebuild", action="store_true", help="skip the rebuild of the views")
    args = parser.parse_args()
    command = ".venv/bin/python bench/scale.py " + " ".join(sys.argv[1:])
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(args.db)) if args.db else None) as tmp:
        path = args.db or str(Path(tmp) / "scale.db")
        ledger = Ledger.open(path)
        try:
            if not ledger.list_runs(limit=1).runs:
                generate(ledger, args.runs, args.steps, args.active)
            started = time.perf_counter()
            ledger.wait(ledger.head(), timeout_s=3600)
            print(f"views caught up {time.perf_counter() - started:.1f} s after the last append", flush=True)
            connection = sqlite3.connect(path)
            lengths = dict(connection.execute("SELECT run_id, last_step FROM view_runs").fetchall())
            steps = int(connection.execute("SELECT SUM(count) FROM view_series").fetchone()[0])
            connection.close()
            run_ids = sorted(lengths)
            figures["runs"], figures["steps"] = len(run_ids), steps
            figures.update(in_process_reads(ledger, run_ids, lengths, args.calls))
        finally:
            ledger.close()
        figures["bytes_per_step"] = measure_bytes(path, steps)
        print(f"bytes per step (one metric): {figures['bytes_per_step']}", flush=True)
        if not args.no_grpc:
            figures.update(grpc_reads(path, run_ids, lengths, args.calls))
        if not args.no_rebuild:
            ledger = Ledger.open(path, project=False)
            try:
                started = time.perf_counter()
                ledger.projector.rebuild()
                elapsed = time.perf_counter() - started
            finally:
                ledger.close()
            figures["rebuild_steps_per_s"] = round(steps / elapsed)
            print(
                f"rebuild: {steps:,} steps in {elapsed:.1f} s -> {figures['rebuild_steps_per_s']:,} steps/s", flush=True
            )
    print(f"rerun with: {command}")
    print(json.dumps({**figures, "command": command}))


if __name__ == "__main__":
    main()
