"""Benchmark of the projector under a trainer's pace: Reserves one at a time, a pause after each,
the projector running in the background as it does in the server.

Run:  .venv/bin/python bench/projection.py [--database-url postgresql://...] [--saves 1500] [--pause-ms 2]
Figures (the LAST line is one JSON object): projection_p50_us, the median time of the projector's
transaction for what one pause let gather (a Reserve's events, usually); log_reads, how many times
the projector read the log for events (its own process's are handed over, so nearly every read
finds nothing: empty_log_reads); log_read_p50_us, the median time of one such read. Against
PostgreSQL each run uses a schema of its own and drops it afterwards.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ledger import Ledger  # noqa: E402


def timed(samples: list[tuple[float, Any]], function: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = function(*args, **kwargs)
        samples.append((time.perf_counter() - started, result))
        return result

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default="", help="run against PostgreSQL instead of a tmp SQLite file")
    parser.add_argument("--saves", type=int, default=1_500, help="Reserves, one at a time")
    parser.add_argument("--pause-ms", type=float, default=2.0, help="pause after each Reserve")
    args = parser.parse_args()
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with tempfile.TemporaryDirectory() as directory:
        if args.database_url:
            joiner = "&" if "?" in args.database_url else "?"
            database = f"{args.database_url}{joiner}schema={schema}"
        else:
            database = str(Path(directory) / "bench.db")
        ledger = Ledger.open(database)
        try:
            run = ledger.open_run(run_key="bench-projection", cap_usd_micro=10**12)
            ledger.wait(ledger.head(), 30)
            reads: list[tuple[float, Any]] = []
            applies: list[tuple[float, Any]] = []
            projector = ledger.projector
            ledger.recorder.select_notifications = timed(reads, ledger.recorder.select_notifications)  # type: ignore[method-assign]
            projector._apply_transaction = timed(applies, projector._apply_transaction)  # type: ignore[method-assign]
            for n in range(args.saves):
                ledger.reserve(account=run.run_id, reservation_id=f"r{n}", amount_usd_micro=1_000)
                time.sleep(args.pause_ms / 1000)
            ledger.wait(ledger.head(), 30)
        finally:
            ledger.close()
        if args.database_url:
            import psycopg

            with psycopg.connect(args.database_url, autocommit=True) as connection:
                connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    figures = {
        "projection_p50_us": round(statistics.median(t for t, _ in applies) * 1e6) if applies else 0,
        "projections": len(applies),
        "log_reads": len(reads),
        "empty_log_reads": sum(1 for _, found in reads if not found),
        "log_read_p50_us": round(statistics.median(t for t, _ in reads) * 1e6) if reads else 0,
    }
    backend = "postgresql" if args.database_url else "sqlite (tmp file)"
    print(f"backend: {backend}; {args.saves} Reserves, {args.pause_ms} ms apart")
    for name, value in figures.items():
        print(f"  {name:20} {value:>10,}")
    print("rerun: " + shlex.join([".venv/bin/python", "bench/projection.py", *sys.argv[1:]]))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
