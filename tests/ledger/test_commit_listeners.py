"""What watches commits (Ledger.commit_listeners, the server's metrics) never decides them: a
listener that fails is logged, and the writes of the group it was told of are answered as saved."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger import Ledger


def test_a_listener_that_fails_never_fails_the_writes_it_was_told_of(ledger: Ledger) -> None:
    told: list[int] = []

    def broken(commands: int, events: Sequence[Any]) -> None:
        told.append(len(events))
        raise RuntimeError("the listener failed")

    ledger.commit_listeners.append(broken)
    opened = ledger.open_account(account="team", cap_usd_micro=100)
    assert opened.created
    held = ledger.reserve(account="team", reservation_id="r", amount_usd_micro=5)
    assert not held.duplicate and held.account is not None and held.account.pending_usd_micro == 5
    again = ledger.reserve(account="team", reservation_id="r", amount_usd_micro=5)
    assert again.duplicate and again.position == held.position
    assert ledger.account_now("team").pending_usd_micro == 5
    assert told == [1, 1]  # Told of each commit that saved events once; the retry saved none.
