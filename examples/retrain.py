"""Retrain, the last mile: pick a run's best checkpoint by its eval scores, register it as a model
version made from that checkpoint, gate it against the current version, promote it.

    .venv/bin/python examples/retrain.py                               # a demo run, on a ledger of its own
    .venv/bin/python examples/retrain.py --ledger 127.0.0.1:50051 --run-id RUN [--metric eval_loss --mode min]

RUN is what `trainledger` commands take: a run id, a unique id prefix, a name or a run key.

With no --run-id it records a run of its own first (no training: three checkpoints with made-up
eval scores, the middle one the best). With no --ledger it serves a ledger in this process on a
temporary SQLite file. The ledger checks that the checkpoint exists, was not deleted and has the
digest the version names, and keeps it from retention from then on (trainledger checkpoints
prune never lists it). The gate here is the simplest one: the new version's score must beat the
current version's (by the run's objective); put your own evaluation in `gate`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
from contextlib import ExitStack
from typing import Any

from clients import LedgerClient, NotFound, RunEnded, RunRecorder, run_key
from clients.models import BestCheckpoint, SourceCheckpoint
from trainledger.bills import usd_text

DEMO_SCORES = {10: 1.92, 20: 1.31, 30: 1.47}  # step -> eval_loss: step 20 is the best


def demo_run(client: LedgerClient) -> str:
    """A finished run with scored checkpoints (the files are made up: only their digests count)."""
    spec = {"example": "retrain", "base_model": "tiny-llama-81k", "lr": 5e-3}
    objective = ("eval_loss", "min")
    try:
        run = RunRecorder.open(
            client, run_key=run_key(spec), name="retrain-demo", spec=spec, max_steps=30, objective=objective
        )
    except RunEnded as ended:  # recorded by an earlier run of this example on the same ledger
        return ended.run_id
    with run:
        for step in range(1, 31):
            run.log(step, tokens=1_000, loss=2.0 - step / 30)
            if step in DEMO_SCORES:
                uri, scores = f"s3://bucket/retrain-demo/step-{step}", {"eval_loss": DEMO_SCORES[step]}
                digest = "sha256:" + hashlib.sha256(uri.encode()).hexdigest()
                run.checkpoint(step, uri, "s3", digest=digest, scores=scores)
    print(f"recorded run {run.run_id}: checkpoints at steps {sorted(DEMO_SCORES)} scored on eval_loss")
    return run.run_id


def gate(best: BestCheckpoint, current: dict[str, Any] | None) -> dict[str, Any]:
    """Pass when there is no current version or the new score beats its score."""
    stats = {"metric": best.metric, "score": best.score}
    if current is None or best.metric not in current:
        return {"passed": True, "reason": "no current version to beat", "stats": stats}
    better = best.score < current[best.metric] if best.mode == "min" else best.score > current[best.metric]
    stats["current"] = current[best.metric]
    return {"passed": better, "reason": "beats the current version" if better else "no better", "stats": stats}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ledger", help="HOST:PORT of a ledger (default: one served in this process)")
    parser.add_argument(
        "--run-id",
        help="the run to pick from: an id, a unique id prefix, a name or a run key (default: a demo run recorded here)",
    )
    parser.add_argument("--metric", default="", help="the score to pick by (default: the run's objective)")
    parser.add_argument("--mode", default="", choices=("", "min", "max"), help="min or max is better")
    parser.add_argument("--family", default="retrain-demo", help="the registry family")
    opts = parser.parse_args()
    with ExitStack() as stack:
        address = opts.ledger
        if address is None:
            from services.embedded import ServerThread

            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="retrain-"))
            address = stack.enter_context(ServerThread(os.path.join(folder, "ledger.db"))).address
            print(f"serving a ledger at {address} on {folder}/ledger.db")
        client = stack.enter_context(LedgerClient(address, principal=os.environ.get("USER", "example")))
        if opts.run_id:
            from services.cli.output import Failure
            from services.cli.remote import resolve_run  # what `trainledger` commands take as RUN

            try:
                run_id = resolve_run(client, opts.run_id)
            except Failure as unknown:  # no such run, or a name several runs share
                print(f"nothing to register: {unknown}")
                return 1
        else:
            run_id = demo_run(client)
        try:
            best = client.best_checkpoint(run_id=run_id, metric=opts.metric, mode=opts.mode)
        except NotFound as missing:  # no such run, or no usable checkpoint with that score
            print(f"nothing to register: {missing.message}")
            return 1
        point = best.checkpoint
        what = f"{best.metric} {best.score:g} ({best.mode} is better)"
        print(f"best checkpoint of run {run_id}: step {point.step} (attempt {point.attempt}), {what}")
        source = SourceCheckpoint(run_id=run_id, step=point.step, attempt=point.attempt, checkpoint_digest=point.digest)
        uri = point.handle.uri if point.handle is not None else ""
        registered = client.register(
            family=opts.family,
            artifact_uri=uri,
            digest=point.digest,
            metadata={best.metric: best.score, "mode": best.mode},
            source_checkpoint=source,
        )
        print(
            f"registered {opts.family} v{registered.version} from {uri}" + (" (again)" if registered.duplicate else "")
        )
        current = client.get_current(family=opts.family)
        if current is not None and current.version == registered.version:
            print(f"v{registered.version} is current already")
            return 0
        verdict = gate(best, current.metadata if current is not None else None)
        print(f"gate: {'passed' if verdict['passed'] else 'failed'} ({verdict['reason']})")
        if not verdict["passed"]:
            return 1
        expected = current.version if current is not None else 0
        promoted = client.promote(
            family=opts.family, version=registered.version, expected_current=expected, verdict=verdict
        )
        print(f"promoted {opts.family} v{promoted.current} (was v{promoted.previous or '-'})")
        spent = client.get_run_state(run_id=run_id).spend.committed_usd_micro
        if spent:
            print(f"the run it came from spent {usd_text(spent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
