"""The model registry, start to finish: register versions, gate each against the current one,
promote the ones that pass, and roll back when the current one misbehaves.

    .venv/bin/python examples/registry.py                              # on a ledger of its own
    .venv/bin/python examples/registry.py --ledger 127.0.0.1:50051     # on a running ledger
    .venv/bin/python examples/registry.py --family my-model

A version is an immutable artifact (its uri and digest; registering the same digest again answers
the version it already is). Promotion is compare-and-set on the current version and carries the
gate's verdict: the ledger refuses a failed verdict (GATE_NOT_PASSED) and a promotion made
against a current version that moved meanwhile (CURRENT_VERSION_MOVED), and records the refusal
in the history. The verdicts here are asserted (this script judged them); a promotion may instead
name a gate rule the ledger evaluates on recorded scores (`gate_rule="eval_loss <= 0.5"`, on the
version's source checkpoint), recorded as evaluated with its evidence. A rollback makes an
earlier version current again and records why. Every step is an event in the log:

    trainledger registry show registry-demo [--address HOST:PORT]   # versions and history

The story: v1 (eval_loss 0.42) passes the gate (no current version) and is promoted; v2 (0.55)
does worse, so its promotion is refused; v3 (0.35) beats v1 and is promoted; then v3 regresses
in production and the family is rolled back to v1. The gate is the simplest one (the candidate's
eval_loss must beat the current version's); put your own evaluation in `gate`.

With no --ledger it serves a ledger in this process on a temporary SQLite file
(services.embedded). On a ledger that already holds the family, it takes the first free name
after it (registry-demo-2, ...): a story starts on a family with no version.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
from contextlib import ExitStack
from typing import Any

from clients import GateNotPassed, LedgerClient, NotFound

# version's artifact -> its eval_loss (lower is better), in the order they are registered.
CANDIDATES = (("v1", 0.42), ("v2", 0.55), ("v3", 0.35))
METRIC = "eval_loss"


def gate(candidate: dict[str, Any], current: dict[str, Any] | None) -> dict[str, Any]:
    """Pass when no version is current, or when the candidate's eval_loss is lower."""
    score = candidate[METRIC]
    if current is None or METRIC not in current:
        return {"passed": True, "reason": "no current version to beat", "stats": {METRIC: score}}
    passed = score < current[METRIC]
    reason = f"{METRIC} {score:g} {'<' if passed else '>='} current {current[METRIC]:g}"
    return {"passed": passed, "reason": reason, "stats": {METRIC: score, "current": current[METRIC]}}


def free_family(client: LedgerClient, wanted: str) -> str:
    """`wanted`, or the first of wanted-2, wanted-3 ... that has no version yet."""
    name, number = wanted, 1
    while True:
        try:
            if not client.list_versions(family=name, page_size=1).versions:
                return name
        except NotFound:
            return name
        number += 1
        name = f"{wanted}-{number}"


def register(client: LedgerClient, family: str, label: str, score: float) -> int:
    """Register an artifact (made up here: only its uri and digest are recorded) with its score."""
    uri = f"s3://models/{family}/{label}"
    digest = "sha256:" + hashlib.sha256(uri.encode()).hexdigest()
    receipt = client.register(family=family, artifact_uri=uri, digest=digest, metadata={METRIC: score})
    print(f"registered {family} v{receipt.version}: {uri} ({METRIC} {score:g})")
    return receipt.version


def try_promote(client: LedgerClient, family: str, version: int) -> bool:
    """Gate the version against the current one and ask the ledger to promote it with the verdict."""
    current = client.get_current(family=family)
    candidate = next(v for v in client.list_versions(family=family).versions if v.version == version)
    verdict = gate(candidate.metadata, current.metadata if current is not None else None)
    print(f"gate for v{version}: {'passed' if verdict['passed'] else 'failed'} ({verdict['reason']})")
    try:
        promoted = client.promote(
            family=family,
            version=version,
            expected_current=current.version if current is not None else 0,
            verdict=verdict,
        )
    except GateNotPassed as refused:
        print(f"promotion of v{version} refused: {refused.reason}")
        return False
    print(f"promoted {family} v{promoted.current} (was {f'v{promoted.previous}' if promoted.previous else 'none'})")
    return True


def story(client: LedgerClient, family: str) -> None:
    versions = {}
    for label, score in CANDIDATES:
        versions[label] = register(client, family, label, score)
        try_promote(client, family, versions[label])
    # v3 regresses in production: back to v1, compare-and-set on the current version.
    current = client.get_current(family=family)
    assert current is not None
    rolled = client.rollback(
        family=family,
        version=versions["v1"],
        expected_current=current.version,
        reason="v3 regressed in production",
    )
    print(f"rolled back {family} to v{rolled.current} (was v{rolled.previous})")
    print("history:")
    for entry in client.list_versions(family=family, min_position=rolled.position).history:
        # A promotion, or a refused one, carries its verdict: asserted here, or evaluated by the ledger.
        verdict = entry.verdict
        why = f"{verdict.reason} ({verdict.mode})" if verdict is not None else entry.reason
        print(f"  {entry.kind:<9} v{entry.version} (was {f'v{entry.previous}' if entry.previous else 'none'}): {why}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ledger", help="HOST:PORT of a ledger (default: one served in this process)")
    parser.add_argument("--family", default="registry-demo", help="the family (default: %(default)s)")
    opts = parser.parse_args()
    with ExitStack() as stack:
        address = opts.ledger
        if address is None:
            from services.embedded import ServerThread

            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="registry-"))
            address = stack.enter_context(ServerThread(os.path.join(folder, "ledger.db"))).address
            print(f"serving a ledger at {address} on {folder}/ledger.db")
        client = stack.enter_context(LedgerClient(address, principal=os.environ.get("USER", "example")))
        story(client, free_family(client, opts.family))
    return 0


if __name__ == "__main__":
    sys.exit(main())
