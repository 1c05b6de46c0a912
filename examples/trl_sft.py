"""TRL SFT + LoRA recorded in trainledger: one callback, resume from what the ledger knows.

    .venv/bin/python examples/trl_sft.py                      # tiny offline model, a local ledger it starts
    .venv/bin/python examples/trl_sft.py --ledger 127.0.0.1:50051 --output-dir runs/demo \\
        --price-usd-per-hour 2.50 --cap-usd 1.00 --outbox runs/demo-outbox

Run it twice with the same --output-dir and --ledger: the second run finds the same run by its key
(the spec: model, revision, LoRA shape, hyperparameters, dataset content) and resumes from the
ledger's last recorded checkpoint (or says the run is done). Kill it mid-run and run it again:
it resumes from the last checkpoint the ledger recorded, and the killed attempt's later steps are
superseded. With a price and a cap, GPU time is held per interval and training stops cleanly
(a checkpoint, the run "stopped") when the cap runs out. The cap goes with every open of the run:
run it again with a larger --cap-usd and --reopen to go on. Ctrl-C ends the run "stopped", an
exception "failed"; such a run is resumed only with --reopen (a "done" one never).

By default the model, tokenizer and data are the tiny offline ones of clients.integrations.tiny
(an 81k-parameter Llama, no hub needed; the package with its trl extra runs it from any
directory); with --model a hub id or a local path, and --data a JSONL file of {"messages": [...]}
rows.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

from clients import LedgerClient, RunEnded
from clients.integrations.extras import extra
from clients.integrations.pricing import GpuPrice
from clients.integrations.transformers import LedgerCallback, ResumeRefused, spec_for
from clients.runkey import file_digest
from trainledger.bills import usd_text


def start_local_ledger(directory: str) -> tuple[subprocess.Popen[str], str]:
    """`trainledger serve` on a free port with its database in `directory`."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "services.cli",
            "serve",
            "--db",
            f"{directory}/ledger.db",
            "--listen",
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    match = re.search(r"serving on [^:\s]+:(\d+)", process.stdout.readline() if process.stdout else "")
    if not match:
        process.kill()
        raise SystemExit("the ledger did not start")
    return process, f"127.0.0.1:{match.group(1)}"


def build(opts: argparse.Namespace):
    """(model, tokenizer, dataset, eval dataset, LoRA config, SFTConfig, dataset identity, model id,
    revision). With an eval dataset the trainer evaluates before every save: its eval_loss scores
    the checkpoint, and the run's objective (metric_for_best_model) makes the lowest the best."""
    with extra("trl"):
        from peft import LoraConfig
        from trl import SFTConfig

    evaluates = opts.model is None or opts.eval_data is not None
    lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    config = SFTConfig(
        eval_strategy="steps" if evaluates else "no",
        eval_steps=opts.save_steps,
        metric_for_best_model="loss" if evaluates else None,  # the run's objective: eval_loss, min
        output_dir=opts.output_dir,
        max_steps=opts.max_steps,
        save_steps=opts.save_steps,
        logging_steps=1,
        per_device_train_batch_size=4,
        learning_rate=5e-3,
        seed=0,
        max_length=64,
        report_to="none",
        use_cpu=not opts.gpu,
        disable_tqdm=True,
        activation_checkpointing=False,
    )
    if opts.model is None:
        from clients.integrations import tiny

        tokenizer = tiny.build_tokenizer()
        return (
            tiny.build_model(tokenizer),
            tokenizer,
            tiny.build_dataset(),
            tiny.build_dataset(16, seed=5),
            lora,
            config,
            tiny.build_dataset(),
            f"{tiny.MODEL_ID} (clients.integrations.tiny)",
            "seed-0",
        )
    with extra("trl"):
        from datasets import load_dataset
        from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(opts.model, revision=opts.revision)
    model = AutoModelForCausalLM.from_pretrained(opts.model, revision=opts.revision)
    dataset = load_dataset("json", data_files=opts.data, split="train")
    held_out = load_dataset("json", data_files=opts.eval_data, split="train") if opts.eval_data else None
    return (
        model,
        tokenizer,
        dataset,
        held_out,
        lora,
        config,
        file_digest(opts.data),
        opts.model,
        opts.revision or "main",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ledger", help="HOST:PORT of a trainledger server (default: start one here)")
    parser.add_argument("--output-dir", default=None, help="checkpoints go here (default: a temporary directory)")
    parser.add_argument("--outbox", default=None, help="keep unsent steps on disk across an outage and a crash")
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--save-steps", type=int, default=10)
    parser.add_argument("--price-usd-per-hour", type=float, default=0.0, help="GPU price; 0 = no spend holds")
    parser.add_argument("--cap-usd", type=float, default=None, help="the run's spend cap (given on every open)")
    parser.add_argument("--reopen", action="store_true", help="start a new attempt on a stopped or failed run")
    parser.add_argument("--interval-s", type=float, default=60.0, help="seconds of GPU time per spend hold")
    parser.add_argument("--model", default=None, help="a hub id or local path (default: the tiny offline model)")
    parser.add_argument("--revision", default=None, help="the model's pinned revision")
    parser.add_argument("--data", default=None, help="JSONL of {'messages': [...]} rows (with --model)")
    parser.add_argument("--eval-data", default=None, help="held-out JSONL rows that score each checkpoint")
    parser.add_argument("--gpu", action="store_true", help="train on the accelerator instead of the CPU")
    opts = parser.parse_args()
    if opts.model and not opts.data:
        parser.error("--model needs --data")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    scratch = tempfile.TemporaryDirectory(prefix="trl-sft-example-")
    opts.output_dir = opts.output_dir or f"{scratch.name}/out"
    server = None
    if opts.ledger is None:
        server, opts.ledger = start_local_ledger(scratch.name)
        print(f"started a local ledger at {opts.ledger}")
    try:
        with extra("trl"):
            from trl import SFTTrainer

        model, tokenizer, dataset, held_out, lora, config, data_identity, model_id, revision = build(opts)
        spec = spec_for(
            name="trl-sft-example",
            base_model=model_id,
            revision=revision,
            method="sft",
            lora=lora,
            args=config,
            dataset=data_identity,
        )
        price = (
            GpuPrice(
                round(opts.price_usd_per_hour * 1e6), gpu_type="example", sheet="example", source="examples/trl_sft.py"
            )
            if opts.price_usd_per_hour
            else None
        )
        cap = round(opts.cap_usd * 1e6) if opts.cap_usd is not None else None
        callback = LedgerCallback(
            address=opts.ledger,
            spec=spec,
            gpu_price=price,
            cap_usd_micro=cap,
            outbox_dir=opts.outbox,
            interval_s=opts.interval_s,
            reopen=opts.reopen,
            train_dataset=dataset,  # recorded on the run by the digest of its rows
            eval_dataset=held_out,
            train_source_uri=opts.data or "",
        )
        try:
            # A path the ledger recorded, held to the output directory, or None; never True.
            # With args, the run is opened with the trainer's plan and objective from the start.
            resume_from = callback.resume_checkpoint(output_dir=config.output_dir, args=config)
        except RunEnded as ended:  # done, or stopped/failed without --reopen
            print(f"not resuming: {ended.message}")
            return 0 if ended.status == "done" else 1
        except ResumeRefused as refused:
            print(f"not resuming: {refused}")
            return 1
        print(f"run key {callback.run_key}; resuming from {resume_from or 'scratch'}")

        trainer = SFTTrainer(
            model=model,
            args=config,
            train_dataset=dataset,
            eval_dataset=held_out,
            processing_class=tokenizer,
            peft_config=lora,
        )
        trainer.add_callback(callback)  # The one line.
        with callback:  # If train() raises, the run ends "failed" (Ctrl-C: "stopped") rather than "running".
            trainer.train(resume_from_checkpoint=resume_from)

        with LedgerClient(opts.ledger) as client:
            state = client.get_run_state(run_id=callback.recorder.run_id)
        spend, checkpoint = state.spend, state.checkpoint
        print(
            f"run {state.run.run_id}: {state.run.status}, attempt {state.current_attempt}, "
            f"last step {state.last_step}, checkpoint {checkpoint.step if checkpoint is not None else None}, "
            f"spent {usd_text(spend.committed_usd_micro)}"
            + (f" of {usd_text(spend.cap_usd_micro)}" if spend.cap_usd_micro is not None else "")
        )
        print(f"summary: {state.run.summary}")
        progress = state.progress
        print(f"progress: step {progress.step} of {progress.max_steps}")
        for recorded in state.datasets:
            print(f"{recorded.role} dataset: {recorded.rows} rows, {recorded.format}, {recorded.digest[:19]}...")
        best = state.best_checkpoint
        if best is not None and state.run.objective is not None:
            metric = state.run.objective.metric
            score = best.scores[metric]
            print(f"best checkpoint: step {best.step} ({metric} {score:.4f}); examples/retrain.py registers it")
        print(f"recorder counters: {callback.recorder.counters}")
        return 0
    finally:
        if server is not None:
            server.terminate()
            server.wait(30)
        scratch.cleanup()


if __name__ == "__main__":
    sys.exit(main())
