"""Benchmark of the hash chain: how fast `verify` checks a large log, and how fast a log is sealed.

Run:  PYTHONPATH=. .venv/bin/python bench/integrity.py [--events 200000] [--steps-per-batch 10]
A real run records a template of step batches through the ledger; the template's stored events are
then copied under fresh aggregate ids (through the sealing recorder, a page per transaction) until
the log holds --events events. Prints each figure as it goes; the LAST line is one JSON object with
events, verify_events_per_s (`verify(views=False)`: every digest recomputed and compared with its
seal, and the template run's snapshots checked; the copies have no views to compare),
seal_events_per_s (`seal_log`: sealing a log written before the chain existed) and the command.
Goal (never a test assertion): verify_events_per_s >= 200,000.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventsourcing.persistence import StoredEvent  # noqa: E402

from ledger import Ledger  # noqa: E402
from ledger.storage.keys import event_keys  # noqa: E402

TEMPLATE_BATCHES = 1_000
COPY_PAGE = 2_000


def build(path: str, events: int, steps_per_batch: int) -> int:
    """A log of at least `events` events; returns how many it holds."""
    ledger = Ledger.open(path, project=False)
    try:
        run = ledger.open_run(run_key="bench-integrity", cap_usd_micro=10**12)
        ledger.start_attempt(run_id=run.run_id, attempt_id="a")
        for index in range(TEMPLATE_BATCHES):
            steps = list(range(index * steps_per_batch + 1, (index + 1) * steps_per_batch + 1))
            ledger.append_steps(
                run_id=run.run_id,
                attempt=1,
                steps=steps,
                tokens=[4096] * len(steps),
                metrics={"loss": [1.0 / step for step in steps], "lr": [1e-4] * len(steps)},
            )
        template = ledger.recorder.select_events(uuid.UUID(run.run_id))
        # Each copy's client-made ids are indexed with it, as the ledger indexes its own writes.
        keys = {e.originator_version: event_keys(ledger.mapper.to_domain_event(e)) for e in template}
        total = ledger.head()
        while total < events:
            copy = uuid.uuid4()
            stored = [StoredEvent(copy, e.originator_version, e.topic, e.state) for e in template]
            for start in range(0, len(stored), COPY_PAGE):
                page = stored[start : start + COPY_PAGE]
                rows = [(copy, key, e.originator_version) for e in page for key in keys[e.originator_version]]
                ledger.recorder.insert_events(page, keys=rows)
            total += len(stored)
        return ledger.head()
    finally:
        ledger.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--steps-per-batch", type=int, default=10)
    args = parser.parse_args()
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as directory:
        path = str(Path(directory) / "integrity.db")
        started = time.perf_counter()
        figures["events"] = build(path, args.events, args.steps_per_batch)
        print(f"built a log of {figures['events']} events in {time.perf_counter() - started:.1f} s", flush=True)

        ledger = Ledger.open(path, read_only=True)
        try:
            started = time.perf_counter()
            result = ledger.verify(views=False)
            elapsed = time.perf_counter() - started
        finally:
            ledger.close()
        assert result.ok, result
        figures["verify_events_per_s"] = round(result.checked / elapsed)
        print(f"verify (chain and snapshots): {result.checked} events in {elapsed:.2f} s", flush=True)

        with sqlite3.connect(path) as connection:
            connection.execute("DELETE FROM stored_seals")
        ledger = Ledger.open(path, project=False)
        try:
            started = time.perf_counter()
            ledger.seal_log(reason="bench", principal="local:bench")
            elapsed = time.perf_counter() - started
        finally:
            ledger.close()
        figures["seal_events_per_s"] = round(int(figures["events"]) / elapsed)  # type: ignore[call-overload]
        print(f"sealed {figures['events']} events in {elapsed:.2f} s", flush=True)
    figures["command"] = "PYTHONPATH=. .venv/bin/python bench/integrity.py " + " ".join(sys.argv[1:])
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
