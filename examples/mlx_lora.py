"""LoRA fine-tuning with mlx-lm, recorded in trainledger: steps, eval, adapter checkpoints, resume.

Runs here on CPU on the tiny offline llama of clients.integrations.tiny (swap in
``mlx_lm.load("<model>")`` and your own datasets for a real model). Needs the package with its
mlx extra (pip install "trainledger[mlx]": mlx[cpu] + mlx-lm[cpu] on Linux); runs from any
directory.

    # against a running ledger (trainledger serve --db trainledger.db)
    MLX_DISABLE_COMPILE=1 python examples/mlx_lora.py --ledger 127.0.0.1:50051 --iters 12

    # self-contained: an in-process ledger on a SQLite file; fail at iteration 8, then resume
    MLX_DISABLE_COMPILE=1 python examples/mlx_lora.py --embedded /tmp/mlx-ledger.db --iters 12 --crash-at 8
    MLX_DISABLE_COMPILE=1 python examples/mlx_lora.py --embedded /tmp/mlx-ledger.db --iters 12 --reopen

The simulated crash is an exception, so the first run ends "failed" (Ctrl-C would end it
"stopped"); --reopen lets the second run open the same run (same run key) again: it starts
attempt 2 from the last recorded adapter checkpoint (step 6 with --save-every 3) and trains the 6
iterations left; the ledger's steps stay absolute (7..12). mlx-lm keeps no optimizer state, so
the resume is weights-only. (A process killed outright leaves its run "running": a plain rerun
resumes it.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("MLX_DISABLE_COMPILE", "1")

from clients import LedgerClient, RunEnded, RunRecorder, run_key  # noqa: E402
from clients.integrations.mlx import (  # noqa: E402
    OBJECTIVE,
    LedgerTrainingCallback,
    resume_adapter_file,
    resume_step,
)


class Crash(RuntimeError):
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--ledger", default=os.environ.get("TRAINLEDGER_ADDRESS", "127.0.0.1:50051"))
    where.add_argument("--embedded", metavar="DB", help="serve a ledger in-process on this SQLite file")
    parser.add_argument("--iters", type=int, default=12)
    parser.add_argument("--save-every", type=int, default=3)
    parser.add_argument("--eval-every", type=int, default=4)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--adapters", default="runs/mlx-lora", help="adapter files go to DIR/<run id>/attempt-<n>")
    parser.add_argument("--crash-at", type=int, default=None, help="fail at this iteration (to try a resume)")
    parser.add_argument("--reopen", action="store_true", help="start a new attempt on a failed or stopped run")
    args = parser.parse_args()

    server = None
    address = args.ledger
    if args.embedded:
        from services.embedded import ServerThread

        Path(args.embedded).parent.mkdir(parents=True, exist_ok=True)
        server = ServerThread(args.embedded).start()
        address = server.address
    try:
        train(args, address)
    finally:
        if server is not None:
            server.stop()


def train(args: argparse.Namespace, address: str) -> None:
    from clients.integrations.extras import extra

    with extra("mlx"):
        import mlx.core as mx
        import mlx.optimizers as optim
        import numpy as np
        from mlx_lm.tuner.callbacks import TrainingCallback
        from mlx_lm.tuner.trainer import TrainingArgs
        from mlx_lm.tuner.trainer import train as mlx_train

    from clients.integrations import tiny

    if os.environ.get("MLX_DISABLE_COMPILE"):
        mx.disable_compile()
    spec = {
        "example": "mlx-lora-tiny",
        "iters": args.iters,
        "lr": args.lr,
        "lora": tiny.MLX_LORA_PARAMETERS,
        "batch_size": 4,
        "seed": 0,
    }
    client = LedgerClient(address, principal=os.environ.get("USER", "example"), timeout_s=10.0)
    try:
        run = RunRecorder.open(
            client,
            run_key=run_key(spec),
            name="mlx-lora-tiny",
            spec=spec,
            resume_from_step="latest",
            reopen=args.reopen,
            max_steps=args.iters,  # the plan: the run's progress and ETA
            objective=OBJECTIVE,  # its best checkpoint: the lowest validation loss
        )
    except RunEnded as ended:
        hint = " (--iters or --lr make a new run key)" if ended.status == "done" else " (or give --reopen)"
        print(f"not started: {ended.message}{hint}")
        client.close()
        return
    with client, run:  # finishes the run: done; stopped on Ctrl-C; failed on an exception
        start = resume_step(run.state)  # 0, or the step of the checkpoint resumed from
        resume = resume_adapter_file(run.state, adapter_root=args.adapters)  # digest and folder checked
        left = args.iters - start
        print(
            f"run {run.run_id} attempt {run.attempt}: "
            + (f"resuming from step {start} ({resume})" if resume else "from scratch")
            + f", {left} iterations"
        )
        if left <= 0:
            return
        adapter_dir = Path(args.adapters) / run.run_id / f"attempt-{run.attempt}"
        adapter_dir.mkdir(parents=True, exist_ok=True)

        tokenizer = tiny.build_tokenizer(0)
        model = tiny.build_mlx_model(len(tokenizer), 0)
        tiny.add_mlx_lora(model)
        if resume is not None:
            model.load_weights(str(resume), strict=False)
        (adapter_dir / "adapter_config.json").write_text(json.dumps(tiny.mlx_adapter_config(left)))
        np.random.seed(start)
        training = TrainingArgs(
            batch_size=4,
            iters=left,
            steps_per_report=1,
            steps_per_save=args.save_every,
            steps_per_eval=args.eval_every,
            val_batches=2,
            max_seq_length=64,
            adapter_file=str(adapter_dir / "adapters.safetensors"),
        )

        class CrashAt(TrainingCallback):
            def on_train_loss_report(self, info: dict) -> None:
                if args.crash_at is not None and start + info["iteration"] >= args.crash_at:
                    raise Crash(f"simulated crash at step {start + info['iteration']}")

        train_set = tiny.build_mlx_dataset(tokenizer, seed=0)
        val_set = tiny.build_mlx_dataset(tokenizer, n_rows=16, seed=1)
        with LedgerTrainingCallback(
            run,
            training.adapter_file,
            wrapped_callback=CrashAt(),
            iters=left,
            train_dataset=train_set,  # recorded by the digest of its rows
            val_dataset=val_set,
        ) as callback:
            mlx_train(
                model=model,
                optimizer=optim.Adam(learning_rate=args.lr),
                train_dataset=train_set,
                val_dataset=val_set,
                args=training,
                training_callback=callback,
            )
        for saved in callback.checkpoints:
            scores = ", ".join(f"{name} {value:.4f}" for name, value in saved["scores"].items())
            print(f"checkpoint at step {saved['step']}: {Path(saved['uri']).name}" + (f" ({scores})" if scores else ""))
    state = run.state
    if state is not None:
        checkpoint = state.checkpoint.step if state.checkpoint is not None else None
        print(
            f"run {state.run.status}: last step {state.last_step}, checkpoint at {checkpoint}, counters {run.counters}"
        )
        best = state.best_checkpoint
        if best is not None:
            print(f"best checkpoint: step {best.step}, {OBJECTIVE[0]} {best.scores[OBJECTIVE[0]]:.4f}")


if __name__ == "__main__":
    try:
        main()
    except Crash as crash:
        print(crash, "- the run is failed: run the same command with --reopen instead of --crash-at to resume it")
        sys.exit(1)
