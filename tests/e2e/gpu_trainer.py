"""A GPU-metered trainer in miniature, for the kill tests (tests/e2e/test_gpu_kill.py): it opens
its run with a short lease (RunRecorder, which heartbeats), then, hold after hold, reserves
HOLD_MS of GPU time at RATE, "trains" on it (a step every STEP_S, logged), and commits the GPU
time it used. Killed with kill -9 inside a hold, it leaves that hold for the ledger to settle.

It appends one line per granted hold to its grants file, the time of the grant as this process
saw it (when Reserve answered, when its GPU time starts):

    {"reservation_id": ID, "attempt": N, "granted_at": <epoch seconds>}

    python -m tests.e2e.gpu_trainer --address HOST:PORT --run-key KEY --grants FILE --lease-s 4
"""

from __future__ import annotations

import argparse
import json
import os
import time

from clients import LedgerClient, RunRecorder

HOLD_MS = 8_000
# One GPU at $3.60 an hour: one micro-dollar a millisecond.
RATE_USD_MICRO_PER_GPU_HOUR = 3_600_000
STEP_S = 0.05


def gpu_basis(milliseconds: int) -> dict[str, object]:
    return {
        "price_sheet": "e2e-gpu",
        "price_source": "tests/e2e/gpu_trainer.py",
        "gpu": {
            "gpu_milliseconds": milliseconds,
            "usd_micro_per_gpu_hour": RATE_USD_MICRO_PER_GPU_HOUR,
            "gpu_count": 1,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--run-key", required=True)
    parser.add_argument("--grants", required=True)
    parser.add_argument("--lease-s", type=int, required=True)
    arguments = parser.parse_args()
    client = LedgerClient(arguments.address)
    recorder = RunRecorder.open(
        client, run_key=arguments.run_key, lease_s=arguments.lease_s, batch_interval_s=STEP_S, reopen=True
    )
    step = (recorder.state.last_step if recorder.state and recorder.state.last_step is not None else 0) + 1
    grants = os.open(arguments.grants, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    number = 0
    while True:
        number += 1
        reservation_id = f"attempt-{recorder.attempt}-hold-{number}"
        client.reserve(
            account=recorder.run_id,
            reservation_id=reservation_id,
            amount_usd_micro=HOLD_MS,  # One micro-dollar a millisecond.
            basis=gpu_basis(HOLD_MS),
            attempt=recorder.attempt,
        )
        granted_at = time.time()
        line = {"reservation_id": reservation_id, "attempt": recorder.attempt, "granted_at": granted_at}
        os.write(grants, (json.dumps(line) + "\n").encode())
        while (used_ms := int((time.time() - granted_at) * 1000)) < HOLD_MS:
            recorder.log(step, loss=1.0 / step)
            step += 1
            time.sleep(STEP_S)
        client.commit(
            account=recorder.run_id,
            reservation_id=reservation_id,
            actual_usd_micro=HOLD_MS,
            basis=gpu_basis(min(used_ms, HOLD_MS)),
        )


if __name__ == "__main__":
    main()
