"""The ledger's calls on PostgreSQL, in-process: Reserve and RunState, each beside PostgreSQL's own
round trip.

    PYTHONPATH=. .venv/bin/python bench/postgres_calls.py --database-url postgresql://... [--calls 300]

A schema of its own is made and dropped. Each call is followed by a SELECT 1 on a connection of
the benchmark's own (`select1_p99_ms_beside_*`, the ceiling: the network and the server's load
as the call saw them). Figures: `reserve_p50_ms` / `reserve_p99_ms`; `reserve_projected_p50_ms`
/ `reserve_projected_p99_ms` (a Reserve and the wait until the views show it: read-your-writes);
`run_state_p50_ms` / `run_state_p99_ms` (a run with an objective and a scored checkpoint, its
best); the process's CPU per call (`*_cpu_us`, every thread of the process: the projector's
included); and the round trips of one event write and of one RunState (`*_round_trips`), counted
from libpq's trace of the connections they run on (each turn from the client's messages to the
server's answers). No goal is judged here (the goals are bench/service.py's over gRPC); the LAST
line is one JSON object with the figures, the load averages and the command.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402

from bench.goals import last_line, load_average, rerun  # noqa: E402
from ledger import Ledger  # noqa: E402


def percentile_ms(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000, 3)


def timed(call: Callable[[int], Any], calls: int, probe: psycopg.Connection[Any], name: str) -> dict[str, float]:
    """`call` `calls` times, each followed by a SELECT 1 on `probe`: latencies and CPU per call."""
    samples, beside, cpu_s = [], [], 0.0
    for number in range(calls):
        cpu, started = time.process_time(), time.perf_counter()
        call(number)
        samples.append(time.perf_counter() - started)
        cpu_s += time.process_time() - cpu
        started = time.perf_counter()
        probe.execute("SELECT 1").fetchall()
        beside.append(time.perf_counter() - started)
    return {
        f"{name}_p50_ms": percentile_ms(samples, 0.5),
        f"{name}_p99_ms": percentile_ms(samples, 0.99),
        f"{name}_cpu_us": round(cpu_s / calls * 1e6),
        f"select1_p99_ms_beside_{name}": percentile_ms(beside, 0.99),
    }


@contextmanager
def round_trips(get_connection: Callable[[], Any], sink: Path) -> Iterator[Callable[[], Any]]:
    """`get_connection` (a context manager of a pooled connection) with libpq tracing into `sink`."""

    @contextmanager
    def traced() -> Iterator[Any]:
        with get_connection() as connection, sink.open("a") as out:
            connection.pgconn.trace(out.fileno())
            try:
                yield connection
            finally:
                connection.pgconn.untrace()

    yield traced


def counted(sink: Path) -> int:
    """The turns from the client's messages to the server's in a libpq trace: each a wait."""
    turns, last = 0, ""
    for line in sink.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) > 1 and fields[1] in ("F", "B"):
            turns += fields[1] == "B" and last == "F"
            last = fields[1]
    return turns


def trips(ledger: Ledger, run_id: str, folder: Path) -> dict[str, int]:
    """The round trips of one Reserve's event write and of one RunState."""
    datastore = ledger.recorder.datastore
    write_sink, read_sink = folder / "write.trace", folder / "read.trace"
    with round_trips(datastore.get_connection, write_sink) as traced:
        datastore.get_connection, plain = traced, datastore.get_connection
        try:
            ledger.reserve(account=run_id, reservation_id="traced", amount_usd_micro=1)
        finally:
            datastore.get_connection = plain
    ledger.wait(ledger.head())
    pool = ledger.storage.pool
    with round_trips(pool.connection, read_sink) as traced:
        pool.connection, plain = traced, pool.connection
        try:
            ledger.run_state(run_id)
        finally:
            pool.connection = plain
    return {"event_write_round_trips": counted(write_sink), "run_state_round_trips": counted(read_sink)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", required=True, help="postgresql://...")
    parser.add_argument("--calls", type=int, default=300, help="Reserve calls, then as many RunState calls")
    args = parser.parse_args()
    load_before = load_average()
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    url = f"{args.database_url}{'&' if '?' in args.database_url else '?'}schema={schema}"
    ledger = Ledger.open(url)
    figures: dict[str, Any] = {"backend": "postgresql", "calls": args.calls}
    try:
        run = ledger.open_run(run_key="bench", cap_usd_micro=10**12, objective=("eval_loss", "min"))
        ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
        ledger.append_steps(run_id=run.run_id, attempt=1, steps=list(range(1, 41)))
        ledger.save_checkpoint(
            run_id=run.run_id, attempt=1, step=20, backend="hf", uri="/ck/20", scores={"eval_loss": 0.5}
        )
        for number in range(30):  # Warm: the pools' connections, prepared statements.
            ledger.reserve(account=run.run_id, reservation_id=f"warm{number}", amount_usd_micro=1)
        with tempfile.TemporaryDirectory() as folder:
            figures.update(trips(ledger, run.run_id, Path(folder)))
        with psycopg.connect(args.database_url, autocommit=True) as probe:

            def reserve(number: int) -> None:
                ledger.reserve(account=run.run_id, reservation_id=f"r{number}", amount_usd_micro=1)

            figures.update(timed(reserve, args.calls, probe, "reserve"))

            def reserve_projected(number: int) -> None:
                receipt = ledger.reserve(account=run.run_id, reservation_id=f"p{number}", amount_usd_micro=1)
                ledger.wait(receipt.position)

            figures.update(timed(reserve_projected, args.calls, probe, "reserve_projected"))
            ledger.wait(ledger.head())
            figures.update(timed(lambda _: ledger.run_state(run.run_id), args.calls, probe, "run_state"))
    finally:
        ledger.close()
        with psycopg.connect(args.database_url, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    for name, value in figures.items():
        print(f"  {name:<36} {value}")
    print(last_line(figures, {}, rerun("bench/postgres_calls.py", sys.argv[1:]), load_before))


if __name__ == "__main__":
    main()
