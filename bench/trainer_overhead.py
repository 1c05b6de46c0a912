"""Trainer overhead of LedgerCallback: the tiny TRL SFT run (LoRA, CPU) with and without the callback,
against a local `trainledger serve` process.

    .venv/bin/python bench/trainer_overhead.py [--steps 200] [--save-steps 50] [--repeats 5] [--outbox]

Each repeat trains a fresh trainer for --steps steps (logging_steps=1) once without and once with
the callback (a GPU price sheet, so spend holds are made too; a new run each time), paired and in
alternating order, after one untimed warm-up run. Steps/s is measured inside this process over train() only; the
figures are the medians over the repeats. On a shared machine other processes' load moves single
runs a lot: look at the per-repeat figures, and rerun with more --repeats. The last line printed
is one JSON object:
steps_per_s_without, steps_per_s_with, overhead_ratio (with / without; 1.0 = no overhead).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.trainers import tiny  # noqa: E402  (sets the offline environment first)


def start_server(database: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "serve", "--db", database, "--listen", "127.0.0.1:0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline() if process.stdout else ""
    match = re.search(r"serving on ([^:\s]+):(\d+)", line)
    if not match:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return process, f"127.0.0.1:{match.group(2)}"


def train_once(workdir: Path, steps: int, save_steps: int, callback: object | None) -> float:
    """Steps per second of one train() call (wall clock)."""
    trainer = tiny.make_sft_trainer(workdir, max_steps=steps, save_steps=save_steps)
    if callback is not None:
        trainer.add_callback(callback)
    started = time.perf_counter()
    trainer.train()
    return steps / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # 200 steps: the callback's fixed cost per run (opening the run and its attempt, the first hold,
    # the final flush: about 40 ms) is ~1% of it; at 60 steps of this tiny model it is ~3%.
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--save-steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--outbox", action="store_true", help="give the callback an on-disk outbox")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    from clients.integrations.pricing import GpuPrice
    from clients.integrations.transformers import LedgerCallback, spec_for

    with tempfile.TemporaryDirectory(prefix="trainer-overhead-") as tmp:
        root = Path(tmp)
        server, address = start_server(str(root / "ledger.db"))
        try:
            price = GpuPrice(2_500_000, gpu_type="H100", sheet="bench", source="bench/trainer_overhead.py")
            dataset = tiny.build_dataset()

            def callback(number: int) -> LedgerCallback:
                config = tiny.make_sft_config(root / "spec", max_steps=args.steps, save_steps=args.save_steps)
                spec = spec_for(
                    name=f"overhead-{number}",
                    base_model="tiny-llama-81k",
                    revision="seed-0",
                    lora=tiny.lora_config(),
                    args=config,
                    dataset=dataset,
                )
                return LedgerCallback(
                    address=address,
                    spec=spec,
                    gpu_price=price,
                    outbox_dir=root / f"outbox-{number}" if args.outbox else None,
                )

            train_once(root / "warmup", args.steps, args.save_steps, callback(0))  # Untimed.
            without, with_ = [], []
            for repeat in range(1, args.repeats + 1):  # Paired, in alternating order, against drift.
                for arm in ("without", "with") if repeat % 2 else ("with", "without"):
                    if arm == "without":
                        without.append(train_once(root / f"without-{repeat}", args.steps, args.save_steps, None))
                    else:
                        with_.append(train_once(root / f"with-{repeat}", args.steps, args.save_steps, callback(repeat)))
                print(
                    f"repeat {repeat}: without {without[-1]:.2f} steps/s, with {with_[-1]:.2f} steps/s", file=sys.stderr
                )
        finally:
            server.terminate()
            server.wait(30)

    figures = {
        "steps_per_s_without": round(statistics.median(without), 3),
        "steps_per_s_with": round(statistics.median(with_), 3),
    }
    figures["overhead_ratio"] = round(figures["steps_per_s_with"] / figures["steps_per_s_without"], 4)
    print(
        f"tiny TRL SFT + LoRA on CPU: {args.steps} steps, logging_steps=1, save_steps={args.save_steps}, "
        f"{args.repeats} repeats (medians), callback with a GPU price sheet"
        f"{' and an on-disk outbox' if args.outbox else ''}, server on loopback; {os.cpu_count()} CPUs"
    )
    for name, value in figures.items():
        print(f"  {name:22} {value:>10}")
    print(
        f"  per repeat, without: {', '.join(f'{v:.2f}' for v in without)}; with: "
        f"{', '.join(f'{v:.2f}' for v in with_)} steps/s (spread = other load on the machine)"
    )
    print("rerun: " + shlex.join([".venv/bin/python", "bench/trainer_overhead.py", *sys.argv[1:]]))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
