"""A training job on Modal that reports to trainledger: steps, checkpoints on a Volume recorded
only after Volume.commit(), GPU time as spend held per interval, and safe retries that resume
from the ledger's last committed checkpoint.

Do not run this in the tests: it needs a Modal account and a ledger reachable from Modal.

1. A ledger Modal's containers can reach. `trainledger serve` speaks plaintext gRPC and checks
   no credentials, so put it behind a proxy that terminates TLS and checks a bearer token
   (Envoy, Caddy, a cloud load balancer), e.g. ledger.example.com:443 -> 127.0.0.1:50051.
2. Its address and credentials as a Modal Secret (injected as environment variables):

       modal secret create trainledger TRAINLEDGER_ADDRESS=ledger.example.com:443 \\
           TRAINLEDGER_PRINCIPAL=alice TRAINLEDGER_TOKEN=<token>

   (TRAINLEDGER_TOKEN implies TLS; TRAINLEDGER_CA_FILE names a private CA bundle; without a
   token, TRAINLEDGER_TLS=1 asks for TLS alone, and leaving both out means plaintext.)
3. From the repository root (the image ships the local `clients` and `trainledger` packages):

       pip install -e ".[modal]" && modal setup
       modal run examples/modal_train.py --steps 3000 --save-every 500 --cap-usd 5

Run it again with the same arguments after a failure, or let modal.Retries do it: the same spec
is the same run key, so the new container opens the same run (open_recorder reopens a failed
run by default), starts a new attempt (labelled with its MODAL_TASK_ID and function call id),
fences the old one and resumes from the last checkpoint the ledger recorded, which is on the
Volume because it was committed first. The cap goes with every open: a rerun with a larger
--cap-usd raises it.
"""

from __future__ import annotations

import os
import time

from clients import RunEnded, SpendCapExceeded, run_key
from clients.integrations.extras import extra
from clients.integrations.modal import GpuMeter, commit_and_record, open_recorder, resume_path
from clients.integrations.pricing import GpuPrice

with extra("modal"):
    import modal

GPU = "H100"
# Modal's list price for the GPU (check https://modal.com/pricing); micro-dollars per GPU hour.
PRICE = GpuPrice(
    usd_micro_per_gpu_hour=3_950_000,
    gpu_type=GPU,
    gpu_count=1,
    sheet="modal-gpu",
    source="https://modal.com/pricing",
    as_of="2025-06",
)
MOUNT = "/checkpoints"

app = modal.App("trainledger-example")
volume = modal.Volume.from_name("trainledger-checkpoints", create_if_missing=True)
image = (
    modal.Image.debian_slim(python_version="3.11")
    .pip_install(
        "torch>=2.4", "grpcio>=1.85.1", "grpcio-status>=1.85.1", "protobuf>=7.35.1,<8", "googleapis-common-protos>=1.66"
    )
    .add_local_python_source("clients", "trainledger")
)


@app.function(
    image=image,
    gpu=GPU,
    volumes={MOUNT: volume},
    secrets=[modal.Secret.from_name("trainledger")],
    retries=modal.Retries(max_retries=3, initial_delay=5.0),
    timeout=6 * 3600,
)
def train(steps: int = 3000, save_every: int = 500, lr: float = 1e-3, cap_usd: float | None = None) -> dict:
    import torch

    spec = {"example": "modal-regression", "steps": steps, "lr": lr, "model": "mlp-1024", "seed": 0}
    cap = None if cap_usd is None else round(cap_usd * 1_000_000)
    try:
        # max_steps is the plan (the run's progress and ETA): the last step this loop logs (from 0).
        run = open_recorder(
            run_key=run_key(spec), name="modal-regression", spec=spec, cap_usd_micro=cap, max_steps=max(steps - 1, 1)
        )
    except RunEnded as ended:  # a done run takes no new attempt
        return {"done": ended.message}
    # Leaving the block finishes the run: "done"; "stopped" on an interrupt; "failed" with the
    # error otherwise (and Modal retries, reopening it).
    with run:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 1)).cuda()
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        start = 0
        if (path := resume_path(volume, run.state, mount=MOUNT)) is not None:  # reloads the volume first
            saved = torch.load(path, map_location="cuda")
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
            start = saved["step"] + 1
        print(f"run {run.run_id} attempt {run.attempt} from step {start}")
        saved_step = start - 1

        def save(step: int, final: bool = False) -> None:
            nonlocal saved_step
            path = f"{MOUNT}/{run.run_id}/step-{step:07d}.pt"
            os.makedirs(os.path.dirname(path), exist_ok=True)
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path + ".tmp")
            os.replace(path + ".tmp", path)
            # Volume.commit() first; the ledger records the checkpoint only once it is durable.
            commit_and_record(volume, run, step, path, mount=MOUNT, fidelity="weights+optimizer", final=final)
            saved_step = step

        target = torch.randn(64, 1, device="cuda", generator=torch.Generator(device="cuda").manual_seed(0))
        # The meter starts once the ledger answered: container start and image pull are not metered.
        meter = GpuMeter(run, PRICE, interval_s=300)
        step = start
        try:
            with meter:
                for step in range(start, steps):
                    meter.tick()  # SpendCapExceeded once the cap refuses the next interval
                    generator = torch.Generator(device="cuda").manual_seed(step)
                    x = torch.randn(256, 64, device="cuda", generator=generator)
                    loss = torch.nn.functional.mse_loss(model(x), x @ target)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    run.log(step, tokens=x.shape[0], loss=loss.item(), lr=lr)
                    if step % save_every == save_every - 1 or step == steps - 1:
                        save(step, final=step == steps - 1)
        except SpendCapExceeded as refused:
            # Out of budget: keep the work done, and stop without an exception (no retry).
            if step - 1 > saved_step:
                save(step - 1)
            run.finish("stopped", summary={"stopped_by": "spend cap", "account": refused.account})
    status = run.state.run.status if run.state is not None else ""
    return {
        "run_id": run.run_id,
        "attempt": run.attempt,
        "status": status,
        "gpu_ms": meter.gpu_milliseconds,
        "gpu_usd_micro": meter.committed_usd_micro,
        "counters": run.counters,
    }


@app.local_entrypoint()
def main(steps: int = 3000, save_every: int = 500, lr: float = 1e-3, cap_usd: float = 0.0) -> None:
    started = time.monotonic()
    result = train.remote(steps=steps, save_every=save_every, lr=lr, cap_usd=cap_usd or None)
    print(result, f"in {time.monotonic() - started:.0f} s")
