"""Trainer overhead of LedgerCallback: the tiny TRL SFT run (LoRA, CPU) with and without the callback,
against a local `trainledger serve` process.

    PYTHONPATH=. .venv/bin/python bench/trainer_overhead.py [--steps 200] [--save-steps 50] [--repeats 7] [--outbox]
    Quick: ... bench/trainer_overhead.py --steps 60 --save-steps 20 --repeats 3

Each repeat trains a fresh trainer for --steps steps (logging_steps=1) once without and once with
the callback (a GPU price sheet, so spend holds are made too; a new run each time), paired and in
alternating order (without first in odd repeats, with first in even ones), after one untimed
warm-up run. Steps/s is measured inside this process over train() only. The ceiling is the same
training without the ledger, measured beside it: overhead_ratio is the median over the repeats of
each repeat's with / without (goal >= 0.97, 1.0 = no overhead). callback_cpu_us_per_logged_step:
the process CPU time (time.process_time) spent inside the callback's hooks, over the steps it was
handed a log of (goal <= 100 us), with each hook's share, beside the same clock around a callback
that does nothing in the runs without the ledger (noop_callback_cpu_us_per_logged_step: the CPU
the process's other threads, torch's among them, spend in those instants anyway; _net is the
difference, judged against the same goal) and the hooks' own thread's CPU
(callback_thread_cpu_us_per_logged_step, time.thread_time); process_cpu_us_per_step_with and
_without: the process CPU of the whole train() per step (the callback's background flusher
included), medians. On a shared machine other processes' load moves single runs a lot: look at
the per-repeat figures. The LAST line is one JSON object: the figures, the goals judged
(bench/goals.py), the load averages before and after, and the command.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.goals import TRAINER, last_line, load_average, rerun, verdicts  # noqa: E402
from tests.trainers import tiny  # noqa: E402  (sets the offline environment first)


def start_server(database: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "serve", "--db", database, "--listen", "127.0.0.1:0", "--no-http"],
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


class HookClock:
    """The process CPU time spent inside a callback's hooks (its on_* methods), per hook, and how
    many logs it was handed (on_log calls: the logged steps)."""

    def __init__(self) -> None:
        self.cpu_s: dict[str, float] = {}
        self.thread_cpu_s: dict[str, float] = {}
        self.logged_steps = 0

    def per_logged_step_us(self, seconds: float) -> float:
        return round(seconds * 1e6 / max(1, self.logged_steps), 1)

    def wrap(self, callback: object) -> object:
        for name in dir(callback):
            if name.startswith("on_") and callable(getattr(callback, name)):
                setattr(callback, name, self._timed(name, getattr(callback, name)))
        return callback

    def _timed(self, name: str, hook: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started, thread_started = time.process_time(), time.thread_time()
            try:
                return hook(*args, **kwargs)
            finally:
                self.cpu_s[name] = self.cpu_s.get(name, 0.0) + time.process_time() - started
                self.thread_cpu_s[name] = self.thread_cpu_s.get(name, 0.0) + time.thread_time() - thread_started
                if name == "on_log":
                    self.logged_steps += 1

        return timed


def train_once(workdir: Path, steps: int, save_steps: int, callback: object | None) -> tuple[float, float]:
    """Steps per second of one train() call (wall clock), and its process CPU seconds per step."""
    trainer = tiny.make_sft_trainer(workdir, max_steps=steps, save_steps=save_steps)
    if callback is not None:
        trainer.add_callback(callback)
    started, cpu = time.perf_counter(), time.process_time()
    trainer.train()
    return steps / (time.perf_counter() - started), (time.process_time() - cpu) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # 200 steps: the callback's fixed cost per run (opening the run and its attempt, the first hold,
    # the final flush: about 40 ms) is ~1% of it; at 60 steps of this tiny model it is ~3%.
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--save-steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--outbox", action="store_true", help="give the callback an on-disk outbox")
    args = parser.parse_args()
    load_before = load_average()
    warnings.filterwarnings("ignore")

    from transformers import TrainerCallback

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
            # The same clock around a callback that does nothing, in the runs without the ledger:
            # what the process's other threads (torch's among them) spend in those instants anyway.
            clock, control = HookClock(), HookClock()
            runs: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
            for repeat in range(1, args.repeats + 1):  # Paired, in alternating order, against drift.
                for arm in ("without", "with") if repeat % 2 else ("with", "without"):
                    hooked = clock.wrap(callback(repeat)) if arm == "with" else control.wrap(TrainerCallback())
                    runs[arm].append(train_once(root / f"{arm}-{repeat}", args.steps, args.save_steps, hooked))
                print(
                    f"repeat {repeat}: without {runs['without'][-1][0]:.2f} steps/s, with {runs['with'][-1][0]:.2f}"
                    f" steps/s (load {load_average()})",
                    file=sys.stderr,
                )
        finally:
            server.terminate()
            server.wait(30)

    without, with_ = [rate for rate, _ in runs["without"]], [rate for rate, _ in runs["with"]]
    figures: dict[str, Any] = {
        "steps_per_s_without": round(statistics.median(without), 3),
        "steps_per_s_with": round(statistics.median(with_), 3),
        "overhead_ratio": round(statistics.median(w / wo for w, wo in zip(with_, without, strict=True)), 4),
        "callback_cpu_us_per_logged_step": clock.per_logged_step_us(sum(clock.cpu_s.values())),
        "noop_callback_cpu_us_per_logged_step": control.per_logged_step_us(sum(control.cpu_s.values())),
        "callback_thread_cpu_us_per_logged_step": clock.per_logged_step_us(sum(clock.thread_cpu_s.values())),
        "callback_cpu_us_per_logged_step_by_hook": {
            name: clock.per_logged_step_us(cpu) for name, cpu in sorted(clock.cpu_s.items())
        },
        "callback_thread_cpu_us_per_logged_step_by_hook": {
            name: clock.per_logged_step_us(cpu) for name, cpu in sorted(clock.thread_cpu_s.items())
        },
        "process_cpu_us_per_step_with": round(statistics.median(cpu for _, cpu in runs["with"]) * 1e6),
        "process_cpu_us_per_step_without": round(statistics.median(cpu for _, cpu in runs["without"]) * 1e6),
        "repeats": args.repeats,
    }
    figures["callback_cpu_us_per_logged_step_net"] = round(
        figures["callback_cpu_us_per_logged_step"] - figures["noop_callback_cpu_us_per_logged_step"], 1
    )
    print(
        f"tiny TRL SFT + LoRA on CPU: {args.steps} steps, logging_steps=1, save_steps={args.save_steps}, "
        f"{args.repeats} repeats (medians), callback with a GPU price sheet"
        f"{' and an on-disk outbox' if args.outbox else ''}, server on loopback; {os.cpu_count()} CPUs"
    )
    for name, value in figures.items():
        print(f"  {name:40} {value}")
    print(
        f"  per repeat, without: {', '.join(f'{v:.2f}' for v in without)}; with: "
        f"{', '.join(f'{v:.2f}' for v in with_)} steps/s (spread = other load on the machine)"
    )
    print(last_line(figures, verdicts(figures, TRAINER), rerun("bench/trainer_overhead.py", sys.argv[1:]), load_before))


if __name__ == "__main__":
    main()
