"""A LoRA fine-tune on Tinker, ledgered: spend held before every billable call, one ledger step
per optimizer step, checkpoints with their tinker:// paths scored by a held-out evaluation, the
run's plan (its progress and ETA) and its training rows, and a resume after a crash.

Against the real service (TINKER_API_KEY and, if set, TINKER_BASE_URL from the environment) and a
ledger started with `trainledger serve` (127.0.0.1:50051):

    .venv/bin/python examples/tinker_lora.py --base-model meta-llama/Llama-3.2-1B --cap-usd 2.50

Run it again after killing it: it finds its run by the spec, resumes from the last checkpoint with
the optimizer state, and the steps the dead process made after that checkpoint are superseded. A
run that recorded steps but has no live checkpoint is only started again from step 0 with --restart.
The cap goes with every open of the run (the resume that may create it, the fresh start, a later
rerun with another --cap-usd). A run that ended "stopped" (the cap refused a hold, or Ctrl-C) or
"failed" is resumed only with --reopen; a "done" run is never: change the spec for a new run.

A trial run with nothing real: a fake Tinker on a loopback port (the repository's test fake, in
one shell from the repository root) and, with --local-ledger, a ledger in this process on a
temporary database (instead of the one at --ledger):

    .venv/bin/python -m tests.fakes.tinker      # prints the TINKER_BASE_URL and TINKER_API_KEY to export
    .venv/bin/python examples/tinker_lora.py --local-ledger --base-model fake/tiny-llama [--cap-usd 0.0005]

(the fake keeps no checkpoints once stopped: restart it and each run starts from nothing).

The prices below are placeholders, not Tinker's: put your price sheet's figures in PRICES.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from contextlib import ExitStack

from clients import LedgerClient, RunEnded, SpendCapExceeded, Unavailable
from clients.integrations.extras import extra
from clients.integrations.pricing import TokenPrices
from clients.integrations.tinker import LedgeredServiceClient, ResumeReason, ResumeRefused
from trainledger.bills import usd_text

with extra("tinker"):
    from tinker import types

# Micro-dollars per million tokens. PLACEHOLDERS: copy the figures of your own price sheet.
PRICES = TokenPrices(
    {"prefill": 100_000, "sample": 300_000, "train": 300_000},
    sheet="example-placeholder",
    source="edit examples/tinker_lora.py",
    as_of="",
)
TEXTS = [
    "The ledger records every step once.",
    "Spend is held before it is spent.",
    "A checkpoint is the commit point for resume.",
    "A new attempt fences the old one.",
]
HELD_OUT = ["Every checkpoint is scored before it is kept."]  # evaluated before each save
OBJECTIVE = ("eval_loss", "min")  # the run's best checkpoint: the lowest held-out loss


def encode(text: str) -> list[int]:
    """Bytes as token ids: valid for any vocabulary, enough for an example (use the model's tokenizer)."""
    return list(text.encode("utf-8"))


def datum(text: str) -> types.Datum:
    tokens = encode(text)
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ledger", default=None, help="the ledger's address (default 127.0.0.1:50051)")
    parser.add_argument("--base-model", default="meta-llama/Llama-3.2-1B")
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--save-every", type=int, default=5)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--cap-usd", type=float, default=None, help="the run's spend cap in dollars")
    parser.add_argument("--ttl-s", type=int, default=7 * 86_400, help="how long Tinker keeps each checkpoint")
    parser.add_argument("--restart", action="store_true", help="start a run with no live checkpoint from step 0")
    parser.add_argument("--reopen", action="store_true", help="start a new attempt on a stopped or failed run")
    parser.add_argument("--local-ledger", action="store_true", help="a ledger in this process on a temporary database")
    args = parser.parse_args()

    with ExitStack() as stack:
        if args.local_ledger:
            args.ledger = local_ledger(stack)
        # Each call rides out a ledger restart of up to 30 s (outage_budget_s), then raises Unavailable.
        ledger = stack.enter_context(
            LedgerClient(args.ledger or "127.0.0.1:50051", principal=os.environ.get("USER", "example"))
        )
        # Tinker's own settings: TINKER_BASE_URL (else the service) and TINKER_API_KEY.
        service = LedgeredServiceClient(ledger, prices={args.base_model: PRICES})
        hyperparameters = {"learning_rate": args.learning_rate, "steps": args.steps, "texts": len(TEXTS)}
        # The same name, cap and reopen choice on every open: resume() opens (or creates) the run first.
        cap = None if args.cap_usd is None else round(args.cap_usd * 1_000_000)
        # The plan (the loop's optimizer steps) and the objective go with every open, and the rows
        # it trains and evaluates on are recorded on the run by their digest.
        run = dict(
            name="tinker-lora-example",
            cap_usd_micro=cap,
            reopen=args.reopen,
            max_steps=args.steps,
            objective=OBJECTIVE,
            datasets={"train": [{"text": text} for text in TEXTS], "eval": [{"text": text} for text in HELD_OUT]},
        )
        try:
            tc = service.resume(base_model=args.base_model, rank=args.rank, hyperparameters=hyperparameters, **run)
            print(f"resumed run {tc.run_id} at step {tc.step} (attempt {tc.attempt})")
        except RunEnded as ended:  # done, or stopped/failed without --reopen
            print(f"not started: {ended.message}")
            return 0 if ended.status == "done" else 1
        except ResumeRefused as refused:
            if refused.reason != ResumeReason.NO_CHECKPOINT:  # expired, another backend ...: say so, start nothing
                print(f"not started: {refused}")
                return 1
            tc = service.create_lora_training_client(
                args.base_model, rank=args.rank, hyperparameters=hyperparameters, restart=args.restart, **run
            )
            print(f"opened run {tc.run_id} (attempt {tc.attempt})")
        data = [datum(text) for text in TEXTS]
        held_out = [datum(text) for text in HELD_OUT]
        targets = sum(len(encode(text)) - 1 for text in TEXTS)
        try:
            with tc:  # finishes the run: done; stopped when the cap refuses a hold or on Ctrl-C; else failed
                while tc.step < args.steps:
                    fwd = tc.forward_backward(data, "cross_entropy")
                    tc.optim_step(types.AdamParams(learning_rate=args.learning_rate)).result()
                    print(f"step {tc.step}: loss {fwd.result().metrics['loss:sum'] / targets:.4f}")
                    if tc.step % args.save_every == 0 or tc.step == args.steps:
                        tc.evaluate(held_out).result()  # its eval_loss scores the checkpoint saved next
                        paths = tc.save_checkpoint(
                            f"step-{tc.step}", ttl_seconds=args.ttl_s, final=tc.step == args.steps
                        ).result()
                        print(f"  checkpoint {paths['path']}")
        except SpendCapExceeded as refused:
            print(f"stopped: the cap refused a hold ({usd_text(refused.remaining_usd_micro or 0)} left)")
        except Unavailable as away:  # the ledger stayed away past the outage budget: no call without a hold
            print(f"failed: the ledger cannot be reached ({away.message}); rerun with --reopen to resume")
            return 1
        position = tc.recorder.state.position if tc.recorder.state is not None else 0
        state = ledger.get_run_state(run_id=tc.run_id, min_position=position)
        print(f"run {state.run.status}: {usd_text(state.spend.committed_usd_micro)} committed")
        print(f"progress: step {state.progress.step} of {state.progress.max_steps}")
        best = state.best_checkpoint
        if best is not None:
            print(f"best checkpoint: step {best.step} ({OBJECTIVE[0]} {best.scores[OBJECTIVE[0]]:.4f})")
    return 0


def local_ledger(stack: ExitStack) -> str:
    """The address of a ledger server in this process on a temporary database."""
    from services.embedded import ServerThread

    folder = stack.enter_context(tempfile.TemporaryDirectory())
    return stack.enter_context(ServerThread(os.path.join(folder, "ledger.db"))).address


if __name__ == "__main__":
    sys.exit(main())
