"""Write the upgrade corpus of this release: a small ledger holding every kind of event the ledger
records (runs, attempts, steps, checkpoints, datasets, sessions, plans, retractions; accounts, caps,
holds committed, released, refused, expired, charges, roll-ups, adjustments to bills; the registry;
tokens issued and revoked; providers' bills billed and restated), snapshots and the seals of its
hash chain, as a SQLite file and as a PostgreSQL dump (plain SQL, INSERT statements), under
tests/data/<version>/. tests/ledger/test_upgrade_corpus.py opens every release's corpus, verifies
it, serves it, reads it and writes to it. Run it once per release (the corpus of a release is
never rewritten):

    PYTHONPATH=. .venv/bin/python scripts/make_upgrade_corpus.py [--database-url postgresql://...]

Without --database-url (or TRAINLEDGER_TEST_DATABASE_URL) only the SQLite file is written. The dump
is of a schema named CORPUS_SCHEMA, which the test loads under a schema of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ledger import Ledger  # noqa: E402
from ledger.storage.version import SCHEMA_VERSION, package_version  # noqa: E402

CORPUS_SCHEMA = "trainledger_corpus"
DIGEST = "sha256:" + "c" * 64
HOUR = timedelta(hours=1)


def runs(ledger: Ledger) -> str:
    opened = ledger.open_run(run_key="corpus-run", name="corpus", spec={"lr": 0.0001}, cap_usd_micro=5_000_000)
    run_id = opened.run_id
    ledger.open_run(run_key="corpus-run", name="corpus", spec={"lr": 0.0001}, cap_usd_micro=5_000_000, max_steps=400)
    ledger.start_attempt(run_id=run_id, attempt_id="a1")
    for first in range(0, 300, 10):  # Over 200 events on the run: it is snapshotted.
        steps = list(range(first, first + 10))
        ledger.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": [1.0 / (s + 1) for s in steps]})
    for step in (100, 200):
        ledger.save_checkpoint(
            run_id=run_id, attempt=1, step=step, backend="local", uri=f"file:///ckpt/{step}", digest=DIGEST
        )
    ledger.delete_checkpoint(run_id=run_id, attempt=1, step=100, reason="retention")
    ledger.record_dataset(run_id=run_id, role="train", digest=DIGEST, format="jsonl", rows=1000, tokens=50_000)
    ledger.link_session(run_id=run_id, provider="tinker", session_id="session-1", attempt=1)
    ledger.note_summary(run_id=run_id, summary={"eval_loss": 0.25})
    ledger.finish_run(run_id=run_id, attempt=1, status="done", summary={"loss": 0.1})
    other = ledger.open_run(run_key="corpus-retracted", name="retracted").run_id
    ledger.retract_run(run_id=other, reason="a test run")
    return run_id


def spend(ledger: Ledger, run_id: str) -> None:
    ledger.open_account(account="corpus-team", cap_usd_micro=100_000_000)
    ledger.open_account(account="corpus-lab", parent="corpus-team", cap_usd_micro=2_000_000)
    ledger.set_cap(account="corpus-lab", cap_usd_micro=3_000_000)
    ledger.reserve(account="corpus-lab", reservation_id="r1", amount_usd_micro=1_000_000)
    ledger.commit(account="corpus-lab", reservation_id="r1", actual_usd_micro=900_000)
    ledger.reserve(account="corpus-lab", reservation_id="r2", amount_usd_micro=500_000)
    ledger.release(account="corpus-lab", reservation_id="r2", reason="not needed")
    try:
        ledger.reserve(account="corpus-lab", reservation_id="r3", amount_usd_micro=50_000_000)
    except Exception:
        pass  # Over the cap: refused, and the refusal recorded.
    ledger.reserve(account="corpus-lab", reservation_id="r4", amount_usd_micro=10_000, ttl=timedelta(seconds=1))
    ledger.reserve(account="corpus-lab", reservation_id="r5", amount_usd_micro=20_000)  # Left pending.
    ledger.charge(account="corpus-lab", charge_id="c1", amount_usd_micro=1_234, reason="storage")
    ledger.reserve(account=run_id, reservation_id="run-r1", amount_usd_micro=100_000)
    ledger.commit(account=run_id, reservation_id="run-r1", actual_usd_micro=100_000)
    time.sleep(1.2)
    ledger.expire_reservations()


def registry(ledger: Ledger, run_id: str) -> None:
    ledger.register(
        family="corpus-model",
        artifact_uri="file:///models/1",
        digest=DIGEST,
        source_checkpoint={"run_id": run_id, "step": 200, "attempt": 0, "checkpoint_digest": DIGEST},
    )
    ledger.register(family="corpus-model", artifact_uri="file:///models/2", digest="sha256:" + "d" * 64)
    verdict = {"passed": True, "reason": "eval ok", "stats": {"eval_loss": 0.2}}
    ledger.promote(family="corpus-model", version=1, expected_current=0, verdict=verdict)
    ledger.promote(family="corpus-model", version=2, expected_current=1, verdict=verdict)
    ledger.rollback(family="corpus-model", version=1, expected_current=2, reason="regression")


def bills(ledger: Ledger, run_id: str) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for hour in range(55):  # Over 50 events on the bill: it is snapshotted.
        ledger.record_billed_usage(
            provider="tinker",
            lines=[
                {
                    "line_id": f"line-{hour}",
                    "interval_start": start + hour * HOUR,
                    "interval_end": start + (hour + 1) * HOUR,
                    "amount_usd_micro": 2_000,
                    "amount_text": "0.002000",
                    "run_id": run_id,
                }
            ],
        )
    ledger.record_billed_usage(
        provider="tinker",
        lines=[
            {
                "line_id": "line-0",
                "interval_start": start,
                "interval_end": start + HOUR,
                "amount_usd_micro": 3_000,
                "amount_text": "0.003000",
                "run_id": run_id,
            }
        ],
    )
    ledger.adjust_to_bill(run_id=run_id)


def tokens(ledger: Ledger) -> None:
    ledger.issue_token(holder="corpus-admin", role="admin")
    scoped = ledger.issue_token(holder="corpus-ops", role="operator", account="corpus-team")
    ledger.revoke_token(token_id=scoped.token.token_id, reason="rotated")


def write(database: str) -> dict[str, Any]:
    """Record the corpus on `database` (empty); what it holds, for the manifest."""
    ledger = Ledger.open(database)
    try:
        run_id = runs(ledger)
        spend(ledger, run_id)
        registry(ledger, run_id)
        bills(ledger, run_id)
        tokens(ledger)
        ledger.wait(ledger.head(), 60)
        verified = ledger.verify()
        assert verified.ok, verified
        types = sorted({event["type"] for event in ledger.read_events(limit=10_000)})
        return {"run_id": run_id, "head": ledger.head(), "chain_digest": verified.head.digest, "types": types}
    finally:
        ledger.close()


def dump_postgres(url: str, target: Path) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{CORPUS_SCHEMA}" CASCADE')
    separator = "&" if "?" in url else "?"
    try:
        made = write(f"{url}{separator}schema={CORPUS_SCHEMA}")
        dumped = subprocess.run(
            ["pg_dump", "--no-owner", "--no-privileges", "--inserts", "--schema", CORPUS_SCHEMA, url.split("?")[0]],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        # Lines of psql's own (\restrict and the like) are not SQL: the test runs the rest.
        target.write_text("".join(line for line in dumped.splitlines(True) if not line.startswith("\\")))
        return made
    finally:
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{CORPUS_SCHEMA}" CASCADE')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", ""))
    parser.add_argument("--out", default=str(REPO / "tests" / "data"), help="(default: %(default)s)")
    args = parser.parse_args()
    release = package_version()
    directory = Path(args.out) / release
    directory.mkdir(parents=True, exist_ok=True)
    sqlite_file = directory / "ledger.sqlite"
    if sqlite_file.exists():
        raise SystemExit(f"{sqlite_file} exists: a release's corpus is written once")
    manifest: dict[str, Any] = {"release": release, "schema_version": SCHEMA_VERSION}
    manifest["sqlite"] = write(str(sqlite_file))
    for leftover in (f"{sqlite_file}-wal", f"{sqlite_file}-shm"):
        if os.path.exists(leftover):
            raise SystemExit(f"{leftover} was left beside the file")
    if args.database_url:
        manifest["postgres"] = dump_postgres(args.database_url, directory / "ledger.postgres.sql")
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote the corpus of trainledger {release} (schema version {SCHEMA_VERSION}) to {directory}")


if __name__ == "__main__":
    main()
