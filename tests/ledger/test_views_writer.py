"""On SQLite the views live in the events' file: the projector's writes and the appenders' share
one write lock and one write-ahead log. In one process the two hand the lock over on this
process's writer slot, not through SQLite's busy handler (which sleeps between tries), and the
projector's connection checkpoints the log first, so that copying it into the file and syncing
that is not part of an append's commit."""

from __future__ import annotations

import struct
import threading
from pathlib import Path

import pytest
from eventsourcing.persistence import ConnectionUnavailableError

from ledger import Ledger

# The write-ahead log's index (the -shm file, SQLite's walformat): two copies of a 48-byte header
# whose mxFrame (the frames in the log) is at byte 16, then the checkpoint's nBackfill (the
# frames already copied into the database file) at byte 96.
MX_FRAME_AT = 16
BACKFILLED_AT = 96
# The events' connections checkpoint once the log holds this many pages (SQLite's default).
EVENTS_CHECKPOINT_PAGES = 1000


def _wal_frames(path: Path) -> tuple[int, int]:
    """(frames in the write-ahead log, frames of it already copied into the file)."""
    index = Path(f"{path}-shm").read_bytes()
    (frames,) = struct.unpack_from("=I", index, MX_FRAME_AT)
    (backfilled,) = struct.unpack_from("=I", index, BACKFILLED_AT)
    return frames, backfilled


def _batch(first: int, count: int = 1000) -> dict[str, object]:
    steps = list(range(first, first + count))
    return {"steps": steps, "metrics": {name: [step / 7 for step in steps] for name in ("loss", "lr", "norm")}}


def test_a_views_transaction_holds_the_writer_slot_the_appenders_take(tmp_path: Path) -> None:
    ledger = Ledger.open(str(tmp_path / "ledger.db"), project=False)
    try:
        pool = ledger.recorder.datastore.pool  # type: ignore[attr-defined]
        run = ledger.open_run(run_key="slot")
        ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
        order: list[str] = []

        def append() -> None:
            ledger.append_steps(run_id=run.run_id, attempt=1, **_batch(1, 10))
            order.append("appended")

        appender = threading.Thread(target=append)
        with ledger.storage.transaction():
            with pytest.raises(ConnectionUnavailableError):
                pool.get_connection(timeout=0.01, is_writer=True)
            appender.start()
            appender.join(0.2)
            order.append("views committed")
        appender.join()
        assert order == ["views committed", "appended"]
        slot = pool.get_connection(timeout=0.01, is_writer=True)  # Free again.
        pool.put_connection(slot)
    finally:
        ledger.close()


def test_the_projector_checkpoints_the_log_before_the_appenders_would(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = Ledger.open(str(path))
    try:
        run = ledger.open_run(run_key="checkpoints")
        ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
        ledger.wait(ledger.head())
        # The projector held: the appends alone fill a few hundred pages of the log, fewer than
        # the events' connections checkpoint at.
        with ledger.projector._projecting:
            for first in range(1, 30_000, 1000):
                ledger.append_steps(run_id=run.run_id, attempt=1, **_batch(first))
            appended, backfilled = _wal_frames(path)
        assert 250 < appended < EVENTS_CHECKPOINT_PAGES
        assert backfilled == 0
        ledger.wait(ledger.head())
        # A projector's commit checkpointed the whole log, its own frames too: the next commit
        # started the log again from its beginning (SQLite does so only once all of it is copied).
        frames, _ = _wal_frames(path)
        assert frames < appended
    finally:
        ledger.close()


def test_a_writer_that_asks_while_the_slot_is_held_goes_before_the_views_transaction(tmp_path: Path) -> None:
    """Writers first: a views' transaction that finds the slot held does not queue for it ahead of
    the log's writers; a writer asking for it later still gets it first when it is let go, so a
    stream of writes is not cut into by a views' transaction between each two of them."""
    ledger = Ledger.open(str(tmp_path / "ledger.db"), project=False)
    try:
        pool = ledger.recorder.datastore.pool  # type: ignore[attr-defined]
        order: list[str] = []
        held = pool.get_connection(is_writer=True)  # A write in progress.

        def views() -> None:
            with ledger.storage.transaction():  # type: ignore[attr-defined]
                order.append("views")

        def writer() -> None:
            slot = pool.get_connection(is_writer=True)
            order.append("writer")
            pool.put_connection(slot)

        first = threading.Thread(target=views)
        first.start()
        threading.Event().wait(0.01)  # The views' transaction is looking for the slot.
        second = threading.Thread(target=writer)
        second.start()
        threading.Event().wait(0.01)  # The writer is waiting for it too.
        pool.put_connection(held)
        first.join(10)
        second.join(10)
        assert order == ["writer", "views"]
    finally:
        ledger.close()
