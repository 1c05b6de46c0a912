"""A corrupt client outbox never stops a trainer from starting: a file SQLite cannot read is renamed
aside (<name>.corrupt-<timestamp>, the rows still readable in it carried over), an undecodable
row is moved to the quarantined_batches table; each is counted ("quarantined") and warned about
once, the good batches are delivered exactly once, and the bad data is kept for inspection."""

from __future__ import annotations

import logging
import os
import sqlite3
import uuid
from pathlib import Path

import pytest

from clients import LedgerClient, RunRecorder, codec
from clients.outbox import FILE_NAME, SqliteOutbox
from tests.client.conftest import QUICK_RETRIES, series_steps
from tests.client.server_thread import ServerThread, free_port

GARBAGE = b"this is not an outbox, whatever it was. " * 300
UNDECODABLE = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"  # a tag whose varint never ends


def started_attempt(client: LedgerClient, key: str) -> tuple[str, int]:
    """The run of `key`, opened, with an attempt started (the process that then died)."""
    run_id = client.open_run(run_key=key, name="quarantine").state.run.run_id
    return run_id, client.start_attempt(run_id=run_id, label="dead").attempt


def leave_batches(outbox: Path, run_id: str, attempt: int, batches: list[range]) -> None:
    """What a trainer that died before sending them leaves behind: batches in its outbox."""
    box = SqliteOutbox(outbox, run_id, attempt)
    for steps in batches:
        box.add(
            codec.step_batch(
                run_id=run_id,
                attempt=attempt,
                steps=list(steps),
                tokens=[8] * len(steps),
                metrics={"loss": [1.0] * len(steps), "lr": [0.5] * len(steps)},
            )
        )
    box.close()


def insert_row(outbox: Path, run_id: str, attempt: int, steps: int, payload: bytes) -> None:
    """A row written into the outbox file behind the outbox's back."""
    with sqlite3.connect(outbox / FILE_NAME) as db:
        db.execute(
            "INSERT INTO batches (run_id, attempt, steps, payload) VALUES (?, ?, ?, ?)",
            (run_id, attempt, steps, payload),
        )


def good_payload(run_id: str, attempt: int, steps: range) -> bytes:
    return codec.step_batch(run_id=run_id, attempt=attempt, steps=list(steps)).SerializeToString()


def delivered(client: LedgerClient, run_id: str) -> list[int]:
    """Every step the ledger recorded for the run, once per time it was recorded."""
    return [
        step
        for event in client.read_events(from_position=1)
        if event.type.endswith("StepsRecorded") and event.originator_id == run_id
        for step in event.data_json["steps"]
    ]


def set_aside(outbox: Path) -> list[Path]:
    return sorted(
        path
        for path in outbox.iterdir()
        if path.name.startswith(FILE_NAME + ".corrupt-") and not path.name.endswith(("-wal", "-shm"))
    )


def quarantine_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.levelno == logging.WARNING and "outbox" in record.getMessage() and "aside" in record.getMessage()
    ]


def test_garbage_over_the_outbox_file_is_set_aside_and_the_trainer_starts(
    client: LedgerClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trainledger.clients")
    outbox, key = tmp_path / "outbox", f"garbage-{uuid.uuid4()}"
    run_id, _ = started_attempt(client, key)
    leave_batches(outbox, run_id, 1, [range(0, 10), range(10, 20)])
    (outbox / FILE_NAME).write_bytes(GARBAGE)

    recorder = RunRecorder.open(client, run_key=key, outbox_dir=outbox, batch_interval_s=0.01)
    assert recorder.counters["quarantined"] == 1 and recorder.attempt == 2
    for step in range(100, 150):
        recorder.log(step, loss=1.0)
    recorder.finish()
    assert recorder.counters["acked"] == 50 and recorder.counters["failed"] == 0
    assert delivered(client, run_id) == list(range(100, 150))  # exactly once
    [aside] = set_aside(outbox)
    assert aside.read_bytes() == GARBAGE  # kept, untouched, for inspection
    assert len(quarantine_warnings(caplog)) == 1 and str(aside.name) in quarantine_warnings(caplog)[0]

    # The next start finds a sound outbox: nothing more is set aside or warned about.
    caplog.clear()
    again = RunRecorder.open(client, run_key=f"garbage-next-{uuid.uuid4()}", outbox_dir=outbox)
    assert again.counters["quarantined"] == 0 and not quarantine_warnings(caplog)
    again.finish()
    assert set_aside(outbox) == [aside]


def test_a_deferred_open_with_a_corrupt_outbox_starts_while_the_ledger_is_down(tmp_path: Path) -> None:
    outbox = tmp_path / "outbox"
    outbox.mkdir()
    (outbox / FILE_NAME).write_bytes(GARBAGE)
    server = ServerThread(str(tmp_path / "ledger.db"), port=free_port())  # Not started: the ledger is down.
    client = LedgerClient(server.address, timeout_s=2.0, retries=0)
    recorder = RunRecorder.open(
        client, run_key="deferred-corrupt", defer=True, outbox_dir=outbox, batch_steps_max=10, batch_interval_s=0.01
    )
    try:
        assert not recorder.opened and recorder.counters["quarantined"] == 1
        for step in range(1, 41):
            recorder.log(step, loss=1.0)
        server.start()
        assert recorder.wait_open(20)
        assert recorder.flush(20)
        recorder.finish()
        assert recorder.counters["acked"] == 40 and recorder.counters["quarantined"] == 1
        assert delivered(client, recorder.run_id) == list(range(1, 41))
        assert [path.read_bytes() for path in set_aside(outbox)] == [GARBAGE]
    finally:
        recorder.close(flush_timeout_s=0)
        server.stop()
        client.close()


def test_an_undecodable_row_is_quarantined_and_the_good_batches_are_replayed_once(
    client: LedgerClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trainledger.clients")
    outbox, key = tmp_path / "outbox", f"row-{uuid.uuid4()}"
    run_id, attempt = started_attempt(client, key)
    leave_batches(outbox, run_id, attempt, [range(0, 10), range(10, 20)])
    insert_row(outbox, run_id, attempt, 10, UNDECODABLE)
    insert_row(outbox, run_id, attempt, 10, good_payload(run_id, attempt, range(30, 40)))

    recorder = RunRecorder.open(client, run_key=key, outbox_dir=outbox)
    assert recorder.counters["quarantined"] == 1
    assert recorder.counters["acked"] == 30 and recorder.counters["failed"] == 0
    recorder.finish()
    assert delivered(client, run_id) == [*range(0, 20), *range(30, 40)]  # each good batch exactly once
    assert series_steps(client, run_id, include_superseded=True) == [*range(0, 20), *range(30, 40)]
    with sqlite3.connect(outbox / FILE_NAME) as db:
        assert db.execute("SELECT COUNT(*) FROM batches").fetchone() == (0,)
        kept = db.execute("SELECT run_id, attempt, steps, payload, reason FROM quarantined_batches").fetchall()
    assert [row[:4] for row in kept] == [(run_id, attempt, 10, UNDECODABLE)] and kept[0][4]
    assert len(quarantine_warnings(caplog)) == 1
    assert set_aside(outbox) == []  # the file itself was sound


def test_an_undecodable_row_of_the_running_attempt_does_not_stall_its_sender(
    client: LedgerClient, tmp_path: Path
) -> None:
    outbox = tmp_path / "outbox"
    run_id, attempt = started_attempt(client, f"running-{uuid.uuid4()}")
    leave_batches(outbox, run_id, attempt, [range(0, 10)])
    other = good_payload("another-run", attempt, range(10, 12))  # decodes, but is not the batch its row says
    insert_row(outbox, run_id, attempt, 2, other)
    insert_row(outbox, run_id, attempt, 5, UNDECODABLE)
    insert_row(outbox, run_id, attempt, 10, good_payload(run_id, attempt, range(20, 30)))
    # The same process attaching to its attempt again: its sender reads the outbox itself.
    recorder = RunRecorder(client, run_id=run_id, attempt=attempt, outbox_dir=outbox, batch_interval_s=0.01)
    for step in range(30, 40):
        recorder.log(step, loss=1.0)
    assert recorder.flush(20)
    recorder.close()
    assert recorder.counters["quarantined"] == 2 and recorder.counters["acked"] >= 10
    assert delivered(client, run_id) == [*range(0, 10), *range(20, 40)]
    with sqlite3.connect(outbox / FILE_NAME) as db:
        assert db.execute("SELECT COUNT(*) FROM batches").fetchone() == (0,)
        assert [row[0] for row in db.execute("SELECT payload FROM quarantined_batches ORDER BY sequence")] == [
            other,
            UNDECODABLE,
        ]


def test_an_outbox_truncated_mid_page_is_set_aside_and_its_readable_batches_delivered(
    client: LedgerClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trainledger.clients")
    outbox, key = tmp_path / "outbox", f"truncated-{uuid.uuid4()}"
    run_id, attempt = started_attempt(client, key)
    leave_batches(outbox, run_id, attempt, [range(start, start + 100) for start in range(0, 4_000, 100)])
    path = outbox / FILE_NAME
    assert not (outbox / (FILE_NAME + "-wal")).exists()  # all of it is in the file
    size = os.path.getsize(path)
    cut = size // 2 + 1_000
    assert cut % 4_096 != 0  # mid-page
    with open(path, "r+b") as handle:
        handle.truncate(cut)
    truncated = path.read_bytes()

    recorder = RunRecorder.open(client, run_key=key, outbox_dir=outbox)
    assert recorder.counters["quarantined"] == 1 and recorder.attempt == 2
    recorder.finish()
    steps = delivered(client, run_id)
    assert len(steps) == len(set(steps))  # nothing twice
    assert set(range(0, 100)) <= set(steps) < set(range(4_000))  # the readable batches, not the lost ones
    assert all(step // 100 * 100 in steps and step // 100 * 100 + 99 in steps for step in steps)  # whole batches
    [aside] = set_aside(outbox)
    assert aside.read_bytes() == truncated
    assert len(quarantine_warnings(caplog)) == 1
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA quick_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*) FROM batches").fetchone() == (0,)


def test_a_corrupt_outbox_is_set_aside_by_a_recorder_made_directly(client: LedgerClient, tmp_path: Path) -> None:
    outbox = tmp_path / "outbox"
    run_id, attempt = started_attempt(client, f"direct-{uuid.uuid4()}")
    outbox.mkdir()
    (outbox / FILE_NAME).write_bytes(GARBAGE)
    recorder = RunRecorder(
        LedgerClient(client.address, retries=QUICK_RETRIES),
        run_id=run_id,
        attempt=attempt,
        outbox_dir=outbox,
        batch_interval_s=0.01,
    )
    for step in range(5):
        recorder.log(step, loss=1.0)
    assert recorder.flush(20)
    recorder.close()
    recorder.client.close()
    assert recorder.counters["quarantined"] == 1 and recorder.counters["acked"] == 5
    assert delivered(client, run_id) == list(range(5))
    assert [path.read_bytes() for path in set_aside(outbox)] == [GARBAGE]
