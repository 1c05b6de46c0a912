"""Benchmark of the ledger core, in-process on the SQLite default with durable commits.

Run:  PYTHONPATH=. .venv/bin/python bench/ledger_core.py [--batches 300] [--rounds 2] [--pairs 2000]
          [--writers 32] [--writer-pairs 200] [--grow-to 1000000]
Quick:  ... bench/ledger_core.py --batches 50 --pairs 300 --writer-pairs 30 --grow-to 100000

Each figure beside the ceiling measured in the same run (the load on a shared machine cancels out
of the ratio):
- steps_per_s (appends with the projector running beside them, as in the server) against
  steps_per_s_projector_off (the same appends, no projector), each on a fresh file, --rounds
  rounds alternated: steps_projector_ratio is the median of each round's ratio (goal >= 0.8);
- bytes_per_step: the first projected file (events, seals, keys and every view; WAL checkpointed)
  over its steps, each step with tokens and five metrics (bench/scale.py measures one metric);
- reserve_commit_per_s (one writer, one pair at a time) against raw SQLite's durable one-row
  commits/s on the same disk with the ledger's journal mode and synchronous setting, measured
  just before and just after, halved (a pair is two commits): reserve_commit_ceiling_ratio
  (goal >= 0.8);
- reserve_commit_per_s_32_writers (--writers threads at once, each on its own run account: the
  pairs the ledger gathers into shared durable commits; goal >= 4,000, the aim 10,000);
- run_state_p99_ms_1k_steps and run_state_p99_ms_<size>_steps (--grow-to; goal <= 2 ms);
- rebuild_steps_per_s (every view dropped and projected again; goal >= 500,000).
The LAST line is one JSON object: the figures, each goal judged (`goals`: value, goal,
meets_goal), the load averages before and after, and the command. Goals live in bench/goals.py
and are never test assertions.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.goals import LEDGER_CORE, LEDGER_CORE_AIMS, last_line, load_average, rerun, size_label, verdicts  # noqa: E402
from bench.scale import measure_bytes  # noqa: E402
from ledger import Ledger  # noqa: E402

BATCH = 1_000
METRICS = ("loss", "grad_norm", "lr", "token_accuracy", "entropy")


def batch(start: int) -> dict:
    steps = list(range(start, start + BATCH))
    rng = random.Random(start)
    return {
        "steps": steps,
        "tokens": [4096 * step for step in steps],
        "metrics": {name: [rng.random() for _ in steps] for name in METRICS},
    }


def p99_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3)


def timed_run_state(ledger: Ledger, run_id: str, calls: int) -> list[float]:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        ledger.run_state(run_id)
        samples.append(time.perf_counter() - started)
    return samples


def grow(ledger: Ledger, run_id: str, first: int, batches: int) -> tuple[int, float]:
    started = time.perf_counter()
    step = first
    for _ in range(batches):
        ledger.append_steps(run_id=run_id, attempt=1, **batch(step))
        step += BATCH
    return step, time.perf_counter() - started


def reserve_commit_writers(ledger: Ledger, writers: int, pairs: int) -> float:
    """reserve_commit_per_s_32_writers: `writers` threads at once, each reserving and committing
    `pairs` pairs one at a time on its own capped run account (a team server with many trainers
    reserving together). Returns pairs per second over the wall time of them all."""
    accounts = [ledger.open_run(run_key=f"bench-writer-{n}", cap_usd_micro=10**12).run_id for n in range(writers)]
    barrier = threading.Barrier(writers + 1)
    failures: list[BaseException] = []

    def writer(account: str) -> None:
        barrier.wait()
        try:
            for i in range(pairs):
                ledger.reserve(account=account, reservation_id=f"w{i}", amount_usd_micro=500)
                ledger.commit(account=account, reservation_id=f"w{i}", actual_usd_micro=400)
        except BaseException as error:  # Reported below: a figure from failed writers is no figure.
            failures.append(error)

    threads = [threading.Thread(target=writer, args=(account,)) for account in accounts]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if failures:
        raise failures[0]
    return writers * pairs / elapsed


def append_rate(ledger: Ledger, run_key: str, payloads: list[dict]) -> tuple[float, float]:
    """Append `payloads` as one attempt of a new run: (steps per second, seconds)."""
    run = ledger.open_run(run_key=run_key, cap_usd_micro=None)
    ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
    started = time.perf_counter()
    for payload in payloads:
        ledger.append_steps(run_id=run.run_id, attempt=1, **payload)
    elapsed = time.perf_counter() - started
    return len(payloads) * BATCH / elapsed, elapsed


def steps_rounds(directory: Path, payloads: list[dict], rounds: int) -> dict[str, float]:
    """steps_per_s (the projector running beside the appends, as in the server) and
    steps_per_s_projector_off (the same appends with no projector), each on a fresh file,
    alternated (off then on, then on then off, ...): the medians and the median of each round's
    ratio. bytes_per_step: the first projected file (views caught up, WAL checkpointed) over its steps."""
    measured: dict[bool, list[float]] = {False: [], True: []}
    ratios = []
    for number in range(rounds):
        for project in (False, True) if number % 2 == 0 else (True, False):
            path = directory / f"steps-{number}-{'on' if project else 'off'}.db"
            ledger = Ledger.open(str(path), project=project)
            try:
                per_s, elapsed = append_rate(ledger, "bench-steps", payloads)
                if project and number == 0:
                    ledger.wait(ledger.head(), 300)
            finally:
                ledger.close()
            measured[project].append(per_s)
            state = "on" if project else "off"
            print(
                f"round {number + 1}, projector {state}: {len(payloads)} batches of {BATCH} steps in {elapsed:.2f} s"
                f" -> {per_s:,.0f} steps/s (load {load_average()})"
            )
            if project and number == 0:
                figures = {"bytes_per_step": measure_bytes(str(path), len(payloads) * BATCH)}
        ratios.append(measured[True][-1] / measured[False][-1])
    figures["bytes_per_step_metrics"] = len(METRICS)
    figures["steps_per_s"] = round(statistics.median(measured[True]))
    figures["steps_per_s_projector_off"] = round(statistics.median(measured[False]))
    figures["steps_projector_ratio"] = round(statistics.median(ratios), 3)
    return figures


def ledger_pragmas(ledger: Ledger) -> tuple[str, int]:
    """The journal mode and synchronous setting of the connection the ledger commits its events on."""
    with ledger.recorder.datastore.transaction(commit=False) as cursor:  # type: ignore[attr-defined]
        cursor.execute("PRAGMA journal_mode")
        journal_mode = str(tuple(cursor.fetchone())[0])
        cursor.execute("PRAGMA synchronous")
        synchronous = int(tuple(cursor.fetchone())[0])
    return journal_mode, synchronous


class RawSQLite:
    """The ceiling of a durable write on this disk: one-row commits of raw SQLite, one at a time,
    with the ledger's journal mode and synchronous setting, in a file beside the ledger's."""

    def __init__(self, path: Path, journal_mode: str, synchronous: int) -> None:
        self.setting = f"journal_mode={journal_mode} synchronous={synchronous}"
        self.connection = sqlite3.connect(str(path), isolation_level=None)
        self.connection.execute(f"PRAGMA journal_mode={journal_mode}")
        self.connection.execute(f"PRAGMA synchronous={synchronous}")
        self.connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB)")
        self.payload = bytes(200)

    def commit(self, commits: int) -> float:
        """Seconds for `commits` commits of one row each."""
        started = time.perf_counter()
        for _ in range(commits):
            self.connection.execute("BEGIN IMMEDIATE")
            self.connection.execute("INSERT INTO t (payload) VALUES (?)", (self.payload,))
            self.connection.execute("COMMIT")
        return time.perf_counter() - started


def spend_figures(ledger: Ledger, directory: Path, args: argparse.Namespace) -> dict[str, float]:
    """reserve_commit_per_s (one writer, one pair at a time) against raw SQLite's durable commits/s
    on the same disk, halved (a pair is two commits), the two interleaved in blocks of --block
    (the order swapped each block) so that the disk and the load are the same for both; then
    reserve_commit_per_s_32_writers."""
    journal_mode, synchronous = ledger_pragmas(ledger)
    raw = RawSQLite(directory / "raw.db", journal_mode, synchronous)
    spend_run = ledger.open_run(run_key="bench-spend", cap_usd_micro=10**12)
    basis = {
        "price_sheet": "bench",
        "tokens": [{"token_class": "train", "tokens": 1250, "usd_micro_per_million_tokens": 400_000}],
    }

    def pairs(first: int, count: int) -> float:
        started = time.perf_counter()
        for i in range(first, first + count):
            ledger.reserve(account=spend_run.run_id, reservation_id=f"r{i}", amount_usd_micro=500, basis=basis)
            ledger.commit(account=spend_run.run_id, reservation_id=f"r{i}", actual_usd_micro=400)
        return time.perf_counter() - started

    pairs_s = raw_s = 0.0
    try:
        for number, first in enumerate(range(0, args.pairs, args.block)):
            count = min(args.block, args.pairs - first)
            if number % 2:
                pairs_s += pairs(first, count)
                raw_s += raw.commit(count)
            else:
                raw_s += raw.commit(count)
                pairs_s += pairs(first, count)
    finally:
        raw.connection.close()
    figures: dict[str, float | str] = {"reserve_commit_per_s": round(args.pairs / pairs_s)}
    figures["raw_sqlite_commits_per_s"] = round(args.pairs / raw_s)
    figures["raw_sqlite_setting"] = raw.setting
    figures["reserve_commit_ceiling"] = round(args.pairs / raw_s / 2)
    figures["reserve_commit_ceiling_ratio"] = round(2 * raw_s / pairs_s, 3)
    print(
        f"reserve+commit: {args.pairs} pairs in {pairs_s:.2f} s -> {figures['reserve_commit_per_s']:,} pairs/s;"
        f" raw SQLite ({raw.setting}), interleaved: {figures['raw_sqlite_commits_per_s']:,} commits/s"
        f" (load {load_average()})"
    )
    per_s = reserve_commit_writers(ledger, args.writers, args.writer_pairs)
    figures[f"reserve_commit_per_s_{args.writers}_writers"] = round(per_s)
    print(f"reserve+commit: {args.writers} writers x {args.writer_pairs} pairs at once -> {per_s:,.0f} pairs/s")
    return figures  # type: ignore[return-value]


def run_state_figures(ledger: Ledger, grow_to: int) -> dict[str, float]:
    """RunState p99 on a run of 1,000 steps, then of the same run grown to `grow_to` steps."""
    figures: dict[str, float] = {}
    state_run = ledger.open_run(run_key="bench-state")
    ledger.start_attempt(run_id=state_run.run_id, attempt_id="a1")
    step, _ = grow(ledger, state_run.run_id, 1, 1)
    ledger.save_checkpoint(run_id=state_run.run_id, attempt=1, step=step - 1, backend="hf", uri="/ck")
    ledger.wait(ledger.head(), 60)
    figures["run_state_p99_ms_1k_steps"] = p99_ms(timed_run_state(ledger, state_run.run_id, 1_000))
    print(f"run_state p99 at {step - 1:,} steps: {figures['run_state_p99_ms_1k_steps']} ms")
    step, elapsed = grow(ledger, state_run.run_id, step, (grow_to - step + 1) // BATCH)
    print(f"grew the run to {step - 1:,} steps in {elapsed:.1f} s")
    started = time.perf_counter()
    ledger.wait(ledger.head(), 300)
    print(f"views caught up {time.perf_counter() - started:.1f} s after the last append")
    name = f"run_state_p99_ms_{size_label(step - 1)}_steps"
    figures[name] = p99_ms(timed_run_state(ledger, state_run.run_id, 1_000))
    print(f"run_state p99 at {step - 1:,} steps: {figures[name]} ms")
    figures["run_state_steps"] = step - 1
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=300, help="1,000-step batches for steps_per_s")
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds of appends, projector off / on")
    parser.add_argument("--pairs", type=int, default=2_000, help="reserve+commit pairs")
    parser.add_argument("--block", type=int, default=50, help="pairs and raw commits interleaved in blocks of")
    parser.add_argument("--writers", type=int, default=32, help="concurrent writers of reserve+commit pairs")
    parser.add_argument("--writer-pairs", type=int, default=200, help="reserve+commit pairs per concurrent writer")
    parser.add_argument("--grow-to", type=int, default=1_000_000, help="steps of the large run")
    args = parser.parse_args()
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        batch(1)  # warm the generator
        payloads = [batch(1 + i * BATCH) for i in range(args.batches)]
        figures: dict[str, float] = steps_rounds(directory, payloads, args.rounds)
        ledger = Ledger.open(str(directory / "bench.db"))
        try:
            figures.update(spend_figures(ledger, directory, args))
            figures.update(run_state_figures(ledger, args.grow_to))
            # Rebuild every view from position 0.
            total_steps = figures["run_state_steps"]
            ledger.projector.stop()
            started = time.perf_counter()
            ledger.projector.rebuild()
            elapsed = time.perf_counter() - started
            figures["rebuild_steps_per_s"] = round(total_steps / elapsed)
            print(
                f"rebuild: {total_steps:,} steps (+{args.pairs * 2:,} spend events) in {elapsed:.1f} s"
                f" -> {figures['rebuild_steps_per_s']:,} steps/s"
            )
        finally:
            ledger.close()
    goals = verdicts(figures, LEDGER_CORE) | verdicts(figures, LEDGER_CORE_AIMS, "_aim")
    print(last_line(figures, goals, rerun("bench/ledger_core.py", sys.argv[1:]), load_before))


if __name__ == "__main__":
    main()
