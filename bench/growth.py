"""Benchmark of reads over a long history, in-process on the SQLite default: RunState of a run with
thousands of live checkpoints, and a series page of a run whose first attempt's steps were all
superseded.

Run:  .venv/bin/python bench/growth.py [--checkpoints 4000] [--superseded 600000] [--calls 200]
Prints each figure as it goes; the LAST line is one JSON object with run_state_ms_4000_checkpoints
and series_page_ms_600k_superseded (medians; the keys keep their names whatever the sizes given).
Goals (never test assertions): run_state <= 5 ms; series page <= 20 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ledger import Ledger  # noqa: E402

BATCH = 1_000


def median_ms(read: Callable[[], object], calls: int) -> float:
    read()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        read()
        samples.append(time.perf_counter() - started)
    return round(statistics.median(samples) * 1000, 3)


def run_state_ms(ledger: Ledger, checkpoints: int, calls: int) -> float:
    run_id = ledger.open_run(run_key="many-checkpoints").run_id
    ledger.start_attempt(run_id=run_id)
    later = datetime.now(UTC) + timedelta(days=30)
    started = time.perf_counter()
    for step in range(checkpoints):
        ledger.save_checkpoint(
            run_id=run_id,
            attempt=1,
            step=step,
            backend="tinker",
            uri=f"tinker://bench/weights/{step}",
            expires_at=later,
        )
    ledger.wait(ledger.head(), timeout_s=60)
    print(f"saved {checkpoints} checkpoints in {time.perf_counter() - started:.1f} s", flush=True)
    return median_ms(lambda: ledger.run_state(run_id), calls)


def series_ms(ledger: Ledger, superseded: int, calls: int) -> float:
    run_id = ledger.open_run(run_key="superseded").run_id
    ledger.start_attempt(run_id=run_id)
    ledger.save_checkpoint(run_id=run_id, attempt=1, step=0, backend="hf", uri="file:///bench/0")
    started = time.perf_counter()
    for first in range(1, superseded + 1, BATCH):
        steps = list(range(first, min(first + BATCH, superseded + 1)))
        ledger.append_steps(
            run_id=run_id,
            attempt=1,
            steps=steps,
            tokens=[4_096] * len(steps),
            metrics={"loss": [1.0] * len(steps), "lr": [1e-4] * len(steps)},
        )
    # A restarted trainer resumes from step 0: every step of attempt 1 above it is superseded.
    ledger.start_attempt(run_id=run_id, resume_from_step=0)
    ledger.append_steps(run_id=run_id, attempt=2, steps=list(range(1, 11)), metrics={"loss": [2.0] * 10})
    ledger.wait(ledger.head(), timeout_s=60)
    print(f"recorded {superseded} steps, then superseded them, in {time.perf_counter() - started:.1f} s", flush=True)
    assert ledger.series(run_id, limit=1_000).steps == tuple(range(1, 11))
    return median_ms(lambda: ledger.series(run_id, limit=1_000), calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", type=int, default=4_000)
    parser.add_argument("--superseded", type=int, default=600_000)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        ledger = Ledger.open(str(Path(directory) / "growth.db"))
        try:
            state = run_state_ms(ledger, args.checkpoints, args.calls)
            print(f"run_state with {args.checkpoints} live checkpoints: {state} ms (median)", flush=True)
            series = series_ms(ledger, args.superseded, args.calls)
            print(f"series page over {args.superseded} superseded steps: {series} ms (median)", flush=True)
        finally:
            ledger.close()
    print(
        json.dumps(
            {
                "run_state_ms_4000_checkpoints": state,
                "series_page_ms_600k_superseded": series,
                "command": ".venv/bin/python bench/growth.py " + " ".join(sys.argv[1:]),
            }
        )
    )


if __name__ == "__main__":
    main()
