"""Runnable tiny SFT job for kill/resume tests.

    python tests/trainers/sft_script.py --output-dir D --max-steps 20 --save-steps 5 \
        [--resume-from D/checkpoint-10] [--sleep-per-step 0.2] [--seed 0] \
        [--ledger HOST:PORT [--outbox DIR] [--price USD_MICRO_PER_GPU_HOUR] [--cap USD_MICRO] [--interval-s S]]

With --ledger the run is recorded by clients.integrations.transformers.LedgerCallback, and unless
--resume-from is given the script asks the ledger where to resume (resume_checkpoint()).

stdout protocol (one line per event, flushed, so a parent can kill the child mid-run):

    start resume_from=<path|->                  (before the trainer is built)
    log step=<int> loss=<repr float>            (every on_log that carries a loss)
    save step=<int> path=<checkpoint dir>       (on_save: the checkpoint is complete on disk)
    end step=<int> train_loss=<repr float> adapter=<final checkpoint dir|->

Everything else (transformers/datasets chatter) goes to stderr.
To plug in a ledger reporter later, add it in ``build_callbacks``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# Run as a script, so put the repository root on sys.path for `tests.trainers`.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.trainers import tiny  # noqa: E402  (sets the offline environment before transformers is imported)

# isort: split
from transformers import TrainerCallback  # noqa: E402


def emit(line: str) -> None:
    print(line, flush=True)


class StdoutProtocolCallback(TrainerCallback):
    """Prints the line protocol described in the module docstring."""

    def __init__(self, output_dir: str):
        self.output_dir = output_dir

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = logs or {}
        if "loss" in logs:
            emit(f"log step={state.global_step} loss={float(logs['loss'])!r}")

    def on_save(self, args, state, control, **kwargs):
        emit(f"save step={state.global_step} path={tiny.checkpoint_dir(self.output_dir, state.global_step)}")


class SleepPerStepCallback(TrainerCallback):
    """Slows training down so a parent process has time to kill us between steps."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def on_step_end(self, args, state, control, **kwargs):
        time.sleep(self.seconds)


def ledger_spec(opts: argparse.Namespace) -> dict:
    """The run's spec: what a rerun of the same command finds its run again by."""
    from clients.integrations.transformers import spec_for

    args = tiny.make_sft_config(opts.output_dir, max_steps=opts.max_steps, save_steps=opts.save_steps, seed=opts.seed)
    return spec_for(
        name=opts.name,
        base_model="tiny-llama-81k",
        revision=f"seed-{opts.seed}",
        method="sft",
        lora=tiny.lora_config(),
        args=args,
        dataset=tiny.build_dataset(seed=opts.seed),
    )


def ledger_callback(opts: argparse.Namespace) -> TrainerCallback:
    from clients.integrations.pricing import GpuPrice
    from clients.integrations.transformers import LedgerCallback

    price = GpuPrice(opts.price, gpu_type="cpu", sheet="e2e", source="tests") if opts.price else None
    return LedgerCallback(
        address=opts.ledger,
        spec=ledger_spec(opts),
        gpu_price=price,
        cap_usd_micro=opts.cap,
        outbox_dir=opts.outbox,
        interval_s=opts.interval_s,
        principal="sft-script",
        recorder_options={"batch_interval_s": opts.batch_interval_s},
    )


def build_callbacks(opts: argparse.Namespace) -> list[TrainerCallback]:
    callbacks: list[TrainerCallback] = [StdoutProtocolCallback(opts.output_dir)]
    if opts.sleep_per_step > 0:
        callbacks.append(SleepPerStepCallback(opts.sleep_per_step))
    if opts.ledger:
        callbacks.append(ledger_callback(opts))
    return callbacks


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--output-dir", required=True)
    p.add_argument("--max-steps", type=int, default=20)
    p.add_argument("--save-steps", type=int, default=5)
    p.add_argument("--resume-from", default=None, help="explicit checkpoint dir (never 'latest')")
    p.add_argument("--sleep-per-step", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ledger", default=None, help="record the run in the ledger at HOST:PORT")
    p.add_argument("--name", default="tiny-sft", help="the run's name (part of its spec)")
    p.add_argument("--outbox", default=None, help="outbox directory for unsent steps")
    p.add_argument("--price", type=int, default=0, help="GPU price, micro-dollars per hour (0: no spend holds)")
    p.add_argument("--cap", type=int, default=None, help="the run's spend cap in micro-dollars (new runs)")
    p.add_argument("--interval-s", type=float, default=60.0, help="seconds of GPU time per spend hold")
    p.add_argument("--batch-interval-s", type=float, default=0.2, help="the recorder's batching delay")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    callbacks = build_callbacks(opts)
    resume_from = opts.resume_from
    ledger = [callback for callback in callbacks if hasattr(callback, "resume_checkpoint")]
    if resume_from is None and ledger:
        resume_from = ledger[0].resume_checkpoint()  # A path the ledger recorded, or None; never True.
    emit(f"start resume_from={resume_from or '-'}")
    trainer = tiny.make_sft_trainer(
        opts.output_dir,
        max_steps=opts.max_steps,
        save_steps=opts.save_steps,
        seed=opts.seed,
        callbacks=callbacks,
    )
    result = trainer.train(resume_from_checkpoint=resume_from)
    final = tiny.checkpoint_dir(opts.output_dir, trainer.state.global_step)
    emit(
        f"end step={trainer.state.global_step} train_loss={float(result.training_loss)!r} "
        f"adapter={final if final.is_dir() else '-'}"
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
