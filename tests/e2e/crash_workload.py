"""One trainer-like client process of the crash loop (tests/e2e/test_crash_loop.py): a run's steps
over a RecordSteps stream (RunRecorder), reserve then commit or release of holds under the run's
cap and a shared parent cap, checkpoints, and registrations and promotions in a family shared with
the other clients. It rides out server restarts (the client resends the same request until the
server answers) and writes one JSON line per acknowledged write to its acks file:

    {"kind": "steps", "position": P, "last_step": S}       a batch acked (steps 0..S are all acked)
    {"kind": "reserve" | "commit" | "release", "id": ID, "position": P, ...}
    {"kind": "refused", "id": ID}                          the cap refused the hold
    {"kind": "checkpoint", "step": S, "position": P}
    {"kind": "register", "version": V, "digest": D, "position": P}
    {"kind": "promote", "version": V, "position": P}
    {"kind": "done", "counters": {...}, "run_id": R}       the last line, once the stop file exists

    python -m tests.e2e.crash_workload --address HOST:PORT --name NAME --acks FILE --stop FILE
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from typing import Any

from clients import LedgerClient, RetryPolicy, RunRecorder
from clients.errors import CurrentVersionMoved, SpendCapExceeded

PARENT = "crash-team"
PARENT_CAP = 450_000
RUN_CAP = 300_000
FAMILY = "crash-family"
# Rides out any restart of the crash loop; each try has its own deadline.
PATIENT = RetryPolicy(attempts=1_000, initial_backoff_s=0.05, max_backoff_s=0.3, total_s=180.0)


class Acks:
    """The acks file: one JSON line per write, appended in one system call."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def __call__(self, **record: Any) -> None:
        os.write(self.fd, (json.dumps(record) + "\n").encode())


def promote_next(client: LedgerClient, name: str, number: int, acks: Acks) -> None:
    digest = "sha256:" + hashlib.sha256(f"{name}-{number}".encode()).hexdigest()
    registered = client.register(family=FAMILY, artifact_uri=f"s3://models/{name}/{number}", digest=digest)
    acks(kind="register", version=registered.version, digest=digest, position=registered.position)
    for _ in range(5):  # The other client may promote in between: read the current version again.
        current = client.get_current(family=FAMILY, min_position=registered.position)
        try:
            promoted = client.promote(
                family=FAMILY,
                version=registered.version,
                expected_current=current.version if current else 0,
                verdict={"passed": True, "reason": f"{name} gate {number}"},
            )
        except CurrentVersionMoved:
            continue
        acks(kind="promote", version=registered.version, position=promoted.position)
        return


def hold(client: LedgerClient, account: str, name: str, number: int, rng: random.Random, acks: Acks) -> None:
    reservation_id = f"{name}-hold-{number}"
    amount = rng.randrange(500, 3_000)
    try:
        reserved = client.reserve(account=account, reservation_id=reservation_id, amount_usd_micro=amount)
    except SpendCapExceeded:
        acks(kind="refused", id=reservation_id)
        return
    acks(kind="reserve", id=reservation_id, account=account, amount=amount, position=reserved.position)
    if rng.random() < 0.2:
        released = client.release(account=account, reservation_id=reservation_id, reason="call failed")
        acks(kind="release", id=reservation_id, position=released.position)
        return
    actual = int(amount * rng.uniform(0.5, 1.3))  # Some actuals overrun their hold.
    committed = client.commit(account=account, reservation_id=reservation_id, actual_usd_micro=actual)
    acks(kind="commit", id=reservation_id, actual=actual, position=committed.position)


def work(address: str, name: str, acks_path: str, stop_path: str, seed: int) -> None:
    rng = random.Random(seed)
    acks = Acks(acks_path)
    # The loop may kill the ledger before this process first reaches it, and a restart on a busy
    # machine takes longer than a first contact's default 5 s: this client waits for it as for any.
    client = LedgerClient(address, principal=name, timeout_s=5.0, retries=PATIENT, first_contact_s=PATIENT.total_s)
    recorder = RunRecorder.open(
        client,
        run_key=f"crash-{name}",
        name=name,
        cap_usd_micro=RUN_CAP,
        parent_account=PARENT,
        batch_steps_max=50,
        batch_interval_s=0.02,
        ack_timeout_s=5.0,
        flush_timeout_s=120.0,
        on_ack=lambda ack: acks(kind="steps", position=ack.position, last_step=ack.last_step),
    )
    step = number = 0
    while not os.path.exists(stop_path):
        for _ in range(20):
            recorder.log(step, tokens=64, loss=1.0 / (step + 1))
            step += 1
        hold(client, recorder.account, name, number, rng, acks)
        if number % 10 == 9:
            saved = recorder.checkpoint(step - 1, f"file:///checkpoints/{name}/{step - 1}", backend="local")
            acks(kind="checkpoint", step=step - 1, position=saved.position)
        if number % 25 == 12:
            promote_next(client, name, number, acks)
        number += 1
        time.sleep(0.01)
    if not recorder.flush(120.0):
        raise RuntimeError(f"steps not acked in time: {recorder.counters}")
    acks(kind="done", counters=recorder.counters, run_id=recorder.run_id, steps=step)
    recorder.close()
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--acks", required=True)
    parser.add_argument("--stop", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        work(args.address, args.name, args.acks, args.stop, args.seed)
    except BaseException as error:
        Acks(args.acks)(kind="error", error=repr(error))
        raise
    sys.exit(0)


if __name__ == "__main__":
    main()
