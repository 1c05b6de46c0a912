"""A LoRA fine-tune on Tinker, ledgered: spend held before every billable call, one ledger step
per optimizer step, checkpoints with their tinker:// paths, and a resume after a crash.

Against the real service (TINKER_API_KEY and, if set, TINKER_BASE_URL from the environment) and a
ledger started with `trainledger serve` (127.0.0.1:50051):

    .venv/bin/python examples/tinker_lora.py --base-model meta-llama/Llama-3.2-1B --cap-usd 2.50

Run it again after killing it: it finds its run by the spec, resumes from the last checkpoint with
the optimizer state, and the steps the dead process made after that checkpoint are superseded. A
run that recorded steps but has no live checkpoint is only started again from step 0 with --restart.

A dry run with nothing real (the tests' loopback fake Tinker and an in-process ledger on a
temporary database; from the repository root):

    .venv/bin/python examples/tinker_lora.py --dry-run

(each dry run starts from nothing: the fake keeps no checkpoints between processes).

The prices below are placeholders, not Tinker's: put your price sheet's figures in PRICES.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from tinker import types

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, when run as a script

from clients import LedgerClient, SpendCapExceeded  # noqa: E402
from clients.integrations.pricing import TokenPrices  # noqa: E402
from clients.integrations.tinker import LedgeredServiceClient, NothingToResume, RunDone  # noqa: E402

# Micro-dollars per million tokens. PLACEHOLDERS: copy the figures of your own price sheet.
PRICES = TokenPrices({"prefill": 100_000, "sample": 300_000, "train": 300_000},
                     sheet="example-placeholder", source="edit examples/tinker_lora.py", as_of="")
TEXTS = ["The ledger records every step once.", "Spend is held before it is spent.",
         "A checkpoint is the commit point for resume.", "A new attempt fences the old one."]


def encode(text: str) -> list[int]:
    """Bytes as token ids: valid for any vocabulary, enough for an example (use the model's tokenizer)."""
    return list(text.encode("utf-8"))


def datum(text: str) -> types.Datum:
    tokens = encode(text)
    return types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]),
                       loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ledger", default="127.0.0.1:50051", help="the ledger's address")
    parser.add_argument("--base-model", default="meta-llama/Llama-3.2-1B")
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--save-every", type=int, default=5)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--cap-usd", type=float, default=None, help="the run's spend cap in dollars")
    parser.add_argument("--ttl-s", type=int, default=7 * 86_400, help="how long Tinker keeps each checkpoint")
    parser.add_argument("--restart", action="store_true", help="start a run with no live checkpoint from step 0")
    parser.add_argument("--dry-run", action="store_true", help="fake Tinker and an in-process ledger")
    args = parser.parse_args()

    with ExitStack() as stack:
        base_url = None  # Tinker's own default: TINKER_BASE_URL, else the service.
        api_key = None
        if args.dry_run:
            base_url, api_key, args.ledger = dry_run(stack)
            args.base_model = "fake/tiny-llama"
        ledger = stack.enter_context(LedgerClient(args.ledger, principal=os.environ.get("USER", "example")))
        service = LedgeredServiceClient(ledger, prices={args.base_model: PRICES}, base_url=base_url, api_key=api_key)
        hyperparameters = {"learning_rate": args.learning_rate, "steps": args.steps, "texts": len(TEXTS)}
        try:
            tc = service.resume(base_model=args.base_model, rank=args.rank, hyperparameters=hyperparameters)
            print(f"resumed run {tc.run_id} at step {tc.step} (attempt {tc.attempt})")
        except RunDone as done:
            print(f"nothing to do: {done}")
            return 0
        except NothingToResume:
            cap = None if args.cap_usd is None else round(args.cap_usd * 1_000_000)
            tc = service.create_lora_training_client(args.base_model, rank=args.rank, hyperparameters=hyperparameters,
                                                     name="tinker-lora-example", cap_usd_micro=cap,
                                                     restart=args.restart)
            print(f"opened run {tc.run_id} (attempt {tc.attempt})")
        data = [datum(text) for text in TEXTS]
        targets = sum(len(encode(text)) - 1 for text in TEXTS)
        try:
            with tc:  # finishes the run: done, failed, or stopped when the cap refuses a hold
                while tc.step < args.steps:
                    fwd = tc.forward_backward(data, "cross_entropy")
                    tc.optim_step(types.AdamParams(learning_rate=args.learning_rate)).result()
                    print(f"step {tc.step}: loss {fwd.result().metrics['loss:sum'] / targets:.4f}")
                    if tc.step % args.save_every == 0 or tc.step == args.steps:
                        paths = tc.save_checkpoint(f"step-{tc.step}", ttl_seconds=args.ttl_s,
                                                   final=tc.step == args.steps).result()
                        print(f"  checkpoint {paths['path']}")
        except SpendCapExceeded as refused:
            print(f"stopped: the cap refused a hold ({refused.remaining_usd_micro} micro-dollars left)")
        state = ledger.get_run_state(run_id=tc.run_id, min_position=tc.recorder.state["position"])
        print(f"run {state['run']['status']}: {state['spend']['committed_usd_micro']} micro-dollars committed")
    return 0


def dry_run(stack: ExitStack) -> tuple[str, str, str]:
    """The tests' fake Tinker and a ledger server in this process, on a temporary database."""
    from tests.client.server_thread import ServerThread
    from tests.fakes.tinker_server import FakeTinkerServer

    fake = stack.enter_context(FakeTinkerServer())
    folder = stack.enter_context(tempfile.TemporaryDirectory())
    ledger = stack.enter_context(ServerThread(os.path.join(folder, "ledger.db")))
    return fake.base_url, FakeTinkerServer.API_KEY, ledger.address


if __name__ == "__main__":
    sys.exit(main())
