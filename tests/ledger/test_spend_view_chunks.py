"""The spend view writes each chunk of the log in batches (ledger.views.spend.handlers.SpendView): a
chunk that holds a reservation's whole life, caps set between an account's totals and the same
reservation id on two accounts projects exactly as its events did one write at a time."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ledger import CapExceeded, Ledger
from tests.ledger.conftest import FakeClock, dump_views, summary_of


def basis(tokens: int) -> dict[str, object]:
    """A basis of `tokens` train tokens at a micro-dollar each: it works out to `tokens` micro-dollars."""
    return {
        "price_sheet": "tinker-2025",
        "tokens": [{"token_class": "train", "tokens": tokens, "usd_micro_per_million_tokens": 1_000_000}],
    }


def test_a_chunk_of_spend_events_projects_as_its_writes_one_at_a_time(database: str, clock: FakeClock) -> None:
    app = Ledger.open(database, clock=clock, project=False)
    try:

        def write() -> None:
            # Each write is projected alone, as a projector that keeps up projects it.
            app.projector.catch_up()

        app.open_account(account="team", cap_usd_micro=100_000)
        write()
        run = app.open_run(run_key="run", cap_usd_micro=10_000, parent_account="team").run_id
        other = app.open_run(run_key="other", parent_account="team").run_id
        write()
        for i in range(4):
            app.reserve(account=run, reservation_id=f"r{i}", amount_usd_micro=100 + i, basis=basis(100 + i))
            write()
            # A cap set between the account's totals: the row keeps the position of its last event.
            app.set_cap(account=run, cap_usd_micro=10_000 + i)
            write()
            app.reserve(account=other, reservation_id=f"r{i}", amount_usd_micro=7)
            write()
        app.commit(account=run, reservation_id="r0", actual_usd_micro=150, basis=basis(150))
        write()
        app.commit(account=other, reservation_id="r0", actual_usd_micro=5)
        write()
        app.release(account=run, reservation_id="r1", reason="call not made")
        write()
        app.reserve(account=run, reservation_id="r-expire", amount_usd_micro=30, ttl=timedelta(minutes=5))
        write()
        with pytest.raises(CapExceeded):
            app.reserve(account=run, reservation_id="r-refused", amount_usd_micro=1_000_000)
        write()
        app.charge(account=run, charge_id="c1", amount_usd_micro=40, basis=basis(40), reason="provider bill")
        write()
        clock.advance(minutes=10)
        assert app.expire_reservations() == 1
        write()
        # Committed after its expiry: the same reservation written three times.
        app.commit(account=run, reservation_id="r-expire", actual_usd_micro=35)
        write()
        app.set_cap(account="team", cap_usd_micro=None)
        write()
        one_at_a_time = dump_views(app)
        assert len(one_at_a_time["view_reservations"]) == 11

        # The whole log again, in one chunk.
        app.projector.rebuild()
        assert dump_views(app) == one_at_a_time
        for account in ("team", run, other):
            assert summary_of(app.account(account)) == app.account_now(account)
    finally:
        app.close()
