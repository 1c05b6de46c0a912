"""What `verify` may and may not do, on SQLite and PostgreSQL, with the scenario of test_chain: it
never writes (a log without seals is reported, never sealed; sealing is `seal_log`, recorded with
who and why); it checks the keys index against the log, and opening a ledger to write rebuilds a
missing key from the log, so a retry is never taken for a new id; it names a snapshot that cannot
be decoded, which a load passes over; it runs one at a time per ledger and stops between pages
when its caller asks.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger
from ledger.application.integrity import Stopped
from ledger.domain.errors import Exhausted, Refused
from ledger.views.models import ChainHead
from tests.ledger.conftest import FakeClock
from tests.ledger.test_chain import HEAD, SNAPSHOT_POSITION, Store, verify, write_scenario

RESERVATION_POSITION = 204
CORPUS = Path(__file__).resolve().parents[1] / "data" / "0.1.0"


@pytest.fixture
def written(database: str) -> Iterator[tuple[str, Store]]:
    write_scenario(database)
    store = Store(database)
    try:
        yield database, store
    finally:
        store.close()


def table_rows(store: Store) -> dict[str, list[Any]]:
    """Everything verify could touch: the log, the seals, the keys index, the snapshots, a view."""
    keys = "trainledger_events_keys" if store.postgres else "stored_keys"
    return {
        "events": store.sql("SELECT {position}, topic, state FROM {events} ORDER BY 1"),
        "seals": store.sql("SELECT position, digest FROM {seals} ORDER BY 1"),
        "keys": store.sql(f"SELECT originator_id, key, originator_version FROM {keys} ORDER BY 1, 2, 3"),
        "snapshots": store.sql("SELECT originator_id, originator_version, state FROM {snapshots} ORDER BY 1, 2"),
        "tracking": store.sql("SELECT view, position FROM view_tracking ORDER BY 1"),
    }


def keys_table(store: Store) -> str:
    return "trainledger_events_keys" if store.postgres else "stored_keys"


def test_verify_reports_a_log_without_seals_and_writes_nothing(written: tuple[str, Store]) -> None:
    """An edited event and every seal deleted: verify says so, and leaves the seals table empty."""
    database, store = written
    store.sql("DELETE FROM {seals}")
    store.sql("UPDATE {events} SET topic = topic || 'x' WHERE {position} = 10")
    before = table_rows(store)
    for views in (False, True):
        result = verify(database, views=views)
        assert (result.ok, result.broken_at, result.problem) == (False, 1, "SEAL_MISSING")
        assert "trainledger seal" in result.detail
    assert table_rows(store) == before and before["seals"] == []


def test_verify_writes_nothing_to_an_intact_ledger(written: tuple[str, Store]) -> None:
    database, store = written
    before = table_rows(store)
    assert verify(database).ok
    assert table_rows(store) == before


def test_opening_a_ledger_never_seals_it_and_sealing_is_recorded(written: tuple[str, Store]) -> None:
    database, store = written
    sealed_before = store.sql("SELECT position, digest FROM {seals} ORDER BY position")
    store.sql("DELETE FROM {seals}")
    Ledger.open(database).close()
    assert store.sql("SELECT position FROM {seals}") == []
    ledger = Ledger.open(database, clock=FakeClock())
    try:
        with pytest.raises(Exception) as unexplained:
            ledger.seal_log(reason="", principal="local:admin")
        assert getattr(unexplained.value, "reason", "") == "MISSING_FIELD"
        receipt = ledger.seal_log(reason="written before the chain existed", principal="local:admin")
        assert receipt.position == HEAD + 2  # The seal book's opening, then LogSealed.
        recorded = ledger.read_events(from_position=HEAD + 1)
        with pytest.raises(Refused) as again:
            ledger.seal_log(reason="once more", principal="local:admin")
        assert again.value.reason == "LOG_SEALED_ALREADY"
    finally:
        ledger.close()
    assert [event["type"] for event in recorded] == ["SealBook.Opened", "SealBook.LogSealed"]
    sealing = recorded[-1]
    assert sealing["principal"] == "local:admin"
    assert (sealing["data"]["reason"], sealing["data"]["events_sealed"], sealing["data"]["head_position"]) == (
        "written before the chain existed",
        HEAD,
        HEAD,
    )
    sealed_after = store.sql("SELECT position, digest FROM {seals} WHERE position <= ? ORDER BY position", (HEAD,))
    assert [(p, bytes(d)) for p, d in sealed_after] == [(p, bytes(d)) for p, d in sealed_before]
    result = verify(database)
    assert result.ok and result.checked == HEAD + 2


def test_a_changed_log_sealed_again_differs_from_the_head_written_down(written: tuple[str, Store]) -> None:
    """Seals dropped and an event edited, then the log sealed on an admin's word: the chain no
    longer passes through the head that was written down."""
    database, store = written
    (digest,) = store.sql("SELECT digest FROM {seals} WHERE position = 150")[0]
    store.sql("DELETE FROM {seals}")
    store.sql("UPDATE {events} SET topic = topic || 'x' WHERE {position} = 10")
    ledger = Ledger.open(database, project=False)
    try:
        ledger.seal_log(reason="restored from an old copy", principal="local:admin")
    finally:
        ledger.close()
    result = verify(database, expect_head=ChainHead(position=150, digest=bytes(digest).hex()), views=False)
    assert (result.ok, result.broken_at, result.problem) == (False, 150, "HEAD_DIFFERS")


def test_the_tail_check_finds_missing_and_broken_seals(written: tuple[str, Store]) -> None:
    database, store = written
    ledger = Ledger.open(database, read_only=True)
    try:
        assert ledger.chain_tail_break() is None
        store.sql("UPDATE {seals} SET digest = ? WHERE position = ?", (bytes(32), HEAD - 3))
        broken = ledger.chain_tail_break()
        assert broken is not None and (broken.position, broken.problem) == (HEAD - 3, "EVENT_CHANGED")
        store.sql("DELETE FROM {seals}")
        broken = ledger.chain_tail_break()
        assert broken is not None and (broken.position, broken.problem) == (1, "SEAL_MISSING")
    finally:
        ledger.close()


def test_a_key_deleted_from_the_index_is_found_and_rebuilt_from_the_log(written: tuple[str, Store]) -> None:
    """The reservation's keys deleted behind the ledger's back: verify names the reservation; a
    ledger opened to write puts them back, so a retried commit is the duplicate it is."""
    database, store = written
    store.sql(f"DELETE FROM {keys_table(store)} WHERE key = 'spend:r1'")
    result = verify(database, views=False)
    assert (result.ok, result.broken_at, result.problem) == (False, RESERVATION_POSITION, "INDEX_DISAGREES")
    assert "spend:r1" in result.detail
    ledger = Ledger.open(database, clock=FakeClock())
    try:
        run_id = ledger.read_events(from_position=2, limit=1)[0]["originator_id"]
        retried = ledger.commit(account=run_id, reservation_id="r1", actual_usd_micro=7)
        assert retried.duplicate and retried.position == HEAD
        again = ledger.reserve(account=run_id, reservation_id="r1", amount_usd_micro=10)
        assert again.duplicate and again.position == RESERVATION_POSITION
        assert ledger.head() == HEAD
        assert ledger.account(run_id, min_position=HEAD).committed_usd_micro == 7
    finally:
        ledger.close()
    assert verify(database).ok


def test_a_key_the_log_never_made_is_found(written: tuple[str, Store]) -> None:
    database, store = written
    (account_id,) = store.sql(f"SELECT originator_id FROM {keys_table(store)} WHERE key = 'spend:r1' LIMIT 1")[0]
    store.sql(
        f"INSERT INTO {keys_table(store)} (originator_id, key, originator_version) VALUES (?, 'spend:forged', 2)",
        (account_id,),
    )
    result = verify(database, views=False)
    assert (result.ok, result.broken_at, result.problem) == (False, RESERVATION_POSITION, "INDEX_DISAGREES")
    assert "spend:forged" in result.detail


def test_a_snapshot_that_cannot_be_decoded_is_named_and_passed_over(
    written: tuple[str, Store], caplog: pytest.LogCaptureFixture
) -> None:
    """One byte of the run's snapshot flipped to one MessagePack never uses: verify names the
    snapshot; the run loads from its events (logged once) and takes its next batch."""
    database, store = written
    (state,) = store.sql("SELECT state FROM {snapshots}")[0]
    damaged = bytearray(state)
    damaged[0] = 0xC1
    store.sql("UPDATE {snapshots} SET state = ?", (bytes(damaged),))
    result = verify(database)
    assert (result.ok, result.broken_at, result.problem) == (False, SNAPSHOT_POSITION, "SNAPSHOT_DISAGREES")
    assert "version 200" in result.detail and "cannot be decoded" in result.detail
    ledger = Ledger.open(database, clock=FakeClock())
    try:
        run_id = ledger.read_events(from_position=2, limit=1)[0]["originator_id"]
        for step in (201, 202):
            receipt = ledger.append_steps(run_id=run_id, attempt=1, steps=[step], metrics={"loss": [0.1]})
        assert ledger.run_state(run_id, min_position=receipt.position).last_step == 202
    finally:
        ledger.close()
    assert sum("cannot be decoded" in record.getMessage() for record in caplog.records) == 1


def test_one_verification_at_a_time_and_it_stops_when_asked(written: tuple[str, Store]) -> None:
    database, _ = written
    ledger = Ledger.open(database, read_only=True)
    try:
        with ledger.integrity.verifying:
            with pytest.raises(Exhausted) as busy:
                ledger.verify()
        assert busy.value.reason == "VERIFY_BUSY"
        stop, stages = threading.Event(), []

        def progress(stage: str, checked: int) -> None:
            stages.append(stage)
            stop.set()

        with pytest.raises(Stopped):
            ledger.verify(stop=stop, progress=progress)
        assert stages == ["chain"]
        seen: list[str] = []
        assert ledger.verify(progress=lambda stage, checked: seen.append(stage)).ok
        assert list(dict.fromkeys(seen)) == ["chain", "keys", "snapshots", "views"]
    finally:
        ledger.close()


def test_a_log_with_missing_seals_takes_no_write_until_sealed(written: tuple[str, Store]) -> None:
    """A write would seal only itself and leave the log unsealable: it is refused, nothing is
    stored, and once sealed the log takes writes again and verifies."""
    database, store = written
    store.sql("DELETE FROM {seals}")
    before = table_rows(store)
    ledger = Ledger.open(database, clock=FakeClock())
    try:
        with pytest.raises(Refused) as refused:
            ledger.issue_token(holder="root", role="admin", principal="local:admin")
        assert refused.value.reason == "LOG_UNSEALED"
        assert "trainledger seal" in str(refused.value)
        after = table_rows(store)
        assert len(after["events"]) == len(before["events"]), after["events"][len(before["events"]) :]
        assert after == before
        ledger.seal_log(reason="seals deleted", principal="local:admin")
        ledger.issue_token(holder="root", role="admin", principal="local:admin")
    finally:
        ledger.close()
    assert verify(database).ok


def test_verify_reads_a_ledger_written_before_a_view_was_added(written: tuple[str, Store]) -> None:
    """A ledger last opened to write by a release without the search view (no view_run_fields, no
    tracking row for it) verifies as it stands: verify makes no table, and a view the ledger has
    never projected has nothing to contradict."""
    database, store = written
    store.sql("DROP TABLE view_run_fields")
    store.sql("DELETE FROM view_tracking WHERE view = 'search'")
    result = verify(database, views=True)
    assert result.ok, result


def test_verify_reads_the_upgrade_corpus_of_0_1_0_as_it_stands(tmp_path: Path) -> None:
    """`trainledger verify` on a copy of the 0.1.0 corpus, never opened to write since: its
    views lack the tables of views added after it (view_leases, view_run_fields), which verify
    does not make and has nothing to compare with."""
    copy = tmp_path / "ledger.sqlite"
    shutil.copyfile(CORPUS / "ledger.sqlite", copy)
    result = verify(str(copy), views=True)
    assert result.ok, result
    assert result.checked == json.loads((CORPUS / "manifest.json").read_text())["sqlite"]["head"]
