"""A snapshot is only a shortcut: a write whose events are durable is answered as written even when
the snapshot due after it cannot be stored (the store refuses the row), and the aggregate keeps
loading from its events."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ledger import Ledger
from ledger.domain.base import ledger_id
from tests.service.support import Served
from trainledger.v1 import spend_pb2

# Refuses every snapshot row, as a full disk or a failing storage would, while events still save.
REFUSE_SNAPSHOTS = (
    "CREATE TRIGGER refuse_snapshots BEFORE INSERT ON stored_snapshots"
    " BEGIN SELECT RAISE(ABORT, 'the snapshot store refuses the row'); END"
)


def test_a_reserve_whose_snapshot_cannot_be_stored_answers_its_durable_hold(tmp_path: Path) -> None:
    database = str(tmp_path / "ledger.db")
    ledger = Ledger.open(database)
    served = Served(ledger)
    try:
        ledger.open_account(account="team")  # The account's version 1.
        for index in range(998):  # Versions 2 to 999.
            ledger.reserve(account="team", reservation_id=f"r{index}", amount_usd_micro=1)
        with sqlite3.connect(database) as connection:
            connection.execute(REFUSE_SNAPSHOTS)
        request = spend_pb2.ReserveRequest(account="team", reservation_id="r998", amount_usd_micro=1)
        held = served.stubs.spend.Reserve(request, timeout=10)  # Version 1,000: a snapshot is due.
        assert not held.duplicate and held.account.pending_usd_micro == 999
        again = served.stubs.spend.Reserve(request, timeout=10)
        assert again.duplicate and again.position == held.position
        assert ledger.account_now("team").pending_usd_micro == 999
        after = served.stubs.spend.Reserve(
            spend_pb2.ReserveRequest(account="team", reservation_id="r999", amount_usd_micro=1), timeout=10
        )
        assert after.account.pending_usd_micro == 1_000
    finally:
        served.close()
        ledger.close()
    reopened = Ledger.open(database, project=False)
    try:
        assert list(reopened.snapshots.get(ledger_id("account", "team"))) == []
        assert reopened.account_now("team").pending_usd_micro == 1_000
    finally:
        reopened.close()
