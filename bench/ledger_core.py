"""Benchmark of the ledger core, in-process on the SQLite default with durable commits.

Run:  .venv/bin/python bench/ledger_core.py [--batches 300] [--pairs 2000]
Prints each figure as it goes; the LAST line is one JSON object with steps_per_s (appends with the
projector running beside them), steps_per_s_projector_off (the same appends with no projector,
just before), reserve_commit_per_s, reserve_commit_per_s_32_writers (--writers threads at once,
each on its own run account: the pairs the ledger gathers into shared durable commits),
run_state_p99_ms_1k_steps, run_state_p99_ms_1m_steps, rebuild_steps_per_s.
Targets (goals, never test assertions): steps_per_s >= 500,000; reserve_commit_per_s >= 2,000;
reserve_commit_per_s_32_writers >= 10,000;
run_state p99 <= 2 ms at both sizes; rebuild_steps_per_s >= 500,000.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=300, help="1,000-step batches for steps_per_s")
    parser.add_argument("--pairs", type=int, default=2_000, help="reserve+commit pairs")
    parser.add_argument("--writers", type=int, default=32, help="concurrent writers of reserve+commit pairs")
    parser.add_argument("--writer-pairs", type=int, default=200, help="reserve+commit pairs per concurrent writer")
    parser.add_argument("--grow-to", type=int, default=1_000_000, help="steps of the large run")
    args = parser.parse_args()
    command = "python bench/ledger_core.py " + " ".join(sys.argv[1:])
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        batch(1)  # warm the generator
        payloads = [batch(1 + i * BATCH) for i in range(args.batches)]
        # The same appends with no projector, just before, in the same conditions: what the
        # projector running beside them costs is steps_per_s against this.
        alone = Ledger.open(str(Path(tmp) / "alone.db"), project=False)
        try:
            per_s, elapsed = append_rate(alone, "bench-steps", payloads)
        finally:
            alone.close()
        figures["steps_per_s_projector_off"] = round(per_s)
        print(f"append, no projector: {args.batches} batches of {BATCH} steps in {elapsed:.2f} s -> {per_s:,.0f} /s")
        ledger = Ledger.open(str(Path(tmp) / "bench.db"))
        try:
            # Appends: the projector runs in the background as it does in the server.
            per_s, elapsed = append_rate(ledger, "bench-steps", payloads)
            figures["steps_per_s"] = round(per_s)
            print(f"append: {args.batches} batches of {BATCH} steps in {elapsed:.2f} s -> {per_s:,.0f} steps/s")

            # Reserve + commit, one pair at a time, on a capped run account.
            spend_run = ledger.open_run(run_key="bench-spend", cap_usd_micro=10**12)
            basis = {
                "price_sheet": "bench",
                "tokens": [{"token_class": "train", "tokens": 1250, "usd_micro_per_million_tokens": 400_000}],
            }
            started = time.perf_counter()
            for i in range(args.pairs):
                ledger.reserve(account=spend_run.run_id, reservation_id=f"r{i}", amount_usd_micro=500, basis=basis)
                ledger.commit(account=spend_run.run_id, reservation_id=f"r{i}", actual_usd_micro=400)
            elapsed = time.perf_counter() - started
            figures["reserve_commit_per_s"] = round(args.pairs / elapsed)
            print(
                f"reserve+commit: {args.pairs} pairs in {elapsed:.2f} s -> {figures['reserve_commit_per_s']:,} pairs/s"
            )
            per_s = reserve_commit_writers(ledger, args.writers, args.writer_pairs)
            figures[f"reserve_commit_per_s_{args.writers}_writers"] = round(per_s)
            print(f"reserve+commit: {args.writers} writers x {args.writer_pairs} pairs at once -> {per_s:,.0f} pairs/s")

            # RunState on a run of 1,000 steps, then the same run grown to --grow-to steps.
            state_run = ledger.open_run(run_key="bench-state")
            ledger.start_attempt(run_id=state_run.run_id, attempt_id="a1")
            step, _ = grow(ledger, state_run.run_id, 1, 1)
            ledger.save_checkpoint(run_id=state_run.run_id, attempt=1, step=step - 1, backend="hf", uri="/ck")
            ledger.wait(ledger.head(), 60)
            figures["run_state_p99_ms_1k_steps"] = p99_ms(timed_run_state(ledger, state_run.run_id, 1_000))
            print(f"run_state p99 at {step - 1:,} steps: {figures['run_state_p99_ms_1k_steps']} ms")
            step, elapsed = grow(ledger, state_run.run_id, step, (args.grow_to - step + 1) // BATCH)
            print(f"grew the run to {step - 1:,} steps in {elapsed:.1f} s")
            started = time.perf_counter()
            ledger.wait(ledger.head(), 300)
            print(f"views caught up {time.perf_counter() - started:.1f} s after the last append")
            figures["run_state_p99_ms_1m_steps"] = p99_ms(timed_run_state(ledger, state_run.run_id, 1_000))
            print(f"run_state p99 at {step - 1:,} steps: {figures['run_state_p99_ms_1m_steps']} ms")

            # Rebuild every view from position 0.
            total_steps = args.batches * BATCH + step - 1
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
    print(f"rerun with: {command}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
