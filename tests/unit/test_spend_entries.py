"""An account's stored shape is the same with its entries typed (ledger.domain.entries) as when
they were maps. tests/data/spend_entries/account_maps.hex holds, one a line in hex, the stored
state of each event `account()` records and then the state of the account's snapshot, as the
ledger wrote them when an account kept its holds and settled entries as maps (with the bases
given as the maps below): a hold pending, a plan drawn by holds, a commit with an overrun, a
release, two refusals (a hold's and a plan's), a hold the ledger settled pro rata and then
committed late, one it settled as reserved when it expired, a charge and an adjustment.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from eventsourcing.domain import Snapshot
from eventsourcing.persistence import Mapper
from eventsourcing.utils import get_topic

from ledger.domain import abandoned, plans, spending
from ledger.domain.accounts import Account
from ledger.domain.base import Audit, ledger_id
from ledger.domain.basis import CostBasis, cost_basis
from ledger.domain.entries import Hold, SettledEntry
from ledger.domain.errors import CapExceeded
from ledger.storage.transcoder import MsgspecTranscoder, ext_hook

STORED = Path(__file__).parent.parent / "data" / "spend_entries" / "account_maps.hex"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = T0 + timedelta(hours=1)
GPU = {"gpu": {"gpu_milliseconds": 3_600_000, "usd_micro_per_gpu_hour": 100, "gpu_type": "H100", "gpu_count": 1}}
TOKENS = {
    "price_sheet": "sheet",
    "price_source": "https://x",
    "tokens": [{"token_class": "sample", "tokens": 1000, "usd_micro_per_million_tokens": 200_000}],
}
# The entries whose maps the ledger wrote with their keys in another order (the same keys and
# values): a plan's refusal took its kind last, a late commit kept its settled_version in place.
REORDERED = {"p0", "r1"}


def at(second: int) -> Audit:
    return Audit("p", f"q{second}", T0 + timedelta(seconds=second))


def refused(call: Any) -> None:
    with pytest.raises(CapExceeded):
        call()


def account() -> Account:
    """The account of the stored states, played with the spend commands."""
    held = Account._create(
        Account.Opened,
        id=ledger_id("account", "acct"),
        name="acct",
        parent="",
        cap=10_000,
        principal="p",
        request_id="r",
        timestamp=T0,
    )
    gpu, tokens, empty = cost_basis(GPU), cost_basis(TOKENS), CostBasis()
    spending.reserve(held, [], at(1), reservation_id="r1", amount=100, basis=gpu, expires_at=HOUR, attempt=1)
    spending.reserve(held, [], at(2), reservation_id="r2", amount=200, basis=tokens, expires_at=HOUR, attempt=1)
    spending.commit(held, [], at(3), reservation_id="r2", actual=250, basis=empty)
    spending.reserve(held, [], at(4), reservation_id="r3", amount=50, basis=empty, expires_at=HOUR, attempt=1)
    spending.release(held, [], at(5), reservation_id="r3", reason="not made")
    refused(
        lambda: spending.reserve(
            held, [], at(6), reservation_id="r4", amount=20_000, basis=empty, expires_at=HOUR, attempt=1
        )
    )
    refused(
        lambda: plans.reserve_plan(
            held, [], at(7), reservation_id="p0", amount=50_000, basis=empty, expires_at=HOUR, attempt=2
        )
    )
    seen = T0 + timedelta(minutes=30)
    abandoned.settle_attempts(held, [], at(8), below=2, reason=abandoned.SUPERSEDED, last_seen=lambda _: seen)
    spending.commit(held, [], at(9), reservation_id="r1", actual=40, basis=empty)
    plan_basis = cost_basis({"price_sheet": "plan"})
    plans.reserve_plan(held, [], at(10), reservation_id="p1", amount=1000, basis=plan_basis, expires_at=HOUR, attempt=2)
    spending.reserve(held, [], at(11), reservation_id="r5", amount=300, basis=empty, expires_at=HOUR, attempt=2)
    spending.charge(held, [], at(12), charge_id="c1", amount=70, basis=cost_basis({"price_sheet": "s"}), reason="after")
    spending.adjust(held, [], at(13), adjustment_id="a1", amount=-30, bill={"invoice": "i1", "usd_micro": 5})
    soon = T0 + timedelta(seconds=15)
    spending.reserve(held, [], at(14), reservation_id="r6", amount=60, basis=empty, expires_at=soon, attempt=2)
    spending.reserve(held, [], at(20), reservation_id="r7", amount=5, basis=empty, expires_at=HOUR, attempt=2)
    return held


def stored() -> tuple[list[bytes], bytes]:
    """The stored states of the events, and of the snapshot, as the ledger wrote them with maps."""
    *events, snapshot = (bytes.fromhex(line) for line in STORED.read_text().split())
    return events, snapshot


def decode(data: bytes) -> Any:
    return msgspec.msgpack.decode(data, ext_hook=ext_hook)


def stored_events(held: Account) -> list[bytes]:
    mapper = Mapper(transcoder=MsgspecTranscoder())
    return [mapper.to_stored_event(event).state for event in held.collect_events()]


def test_the_events_are_stored_byte_for_byte_as_before() -> None:
    events, _ = stored()
    assert stored_events(account()) == events


def test_a_snapshot_holds_the_maps_it_held_before() -> None:
    _, before = stored()
    now = MsgspecTranscoder().encode(Snapshot.take(account()).state)
    old, new = decode(before), decode(now)
    assert new == old
    # Byte for byte too, but for the order of the keys of the REORDERED entries.
    for entry in REORDERED:
        assert list(new["settled"][entry]) != list(old["settled"][entry])
        del new["settled"][entry], old["settled"][entry]
    assert msgspec.msgpack.encode(new) == msgspec.msgpack.encode(old)
    assert now != before


def test_a_snapshot_stored_with_maps_loads_as_typed_entries_and_goes_on_alike() -> None:
    _, before = stored()
    fresh = account()
    fresh.collect_events()
    snapshot = Snapshot(  # type: ignore[call-arg]
        originator_id=fresh.id,
        originator_version=fresh.version,
        timestamp=T0,
        topic=get_topic(Account),
        state=decode(before),
    )
    loaded = snapshot.mutate(None)
    assert isinstance(loaded, Account)
    assert all(type(hold) is Hold for hold in loaded.holds.values())
    assert all(type(entry) is SettledEntry for entry in loaded.settled.values())
    assert (loaded.holds, loaded.settled, loaded.summary()) == (fresh.holds, fresh.settled, fresh.summary())
    assert loaded.holds["p1"].drawn_usd_micro == 365
    assert loaded.settled["r1"].presumed_usd_micro == 50
    answers = []
    for held in (loaded, fresh):
        answers.append(
            (
                spending.commit(held, [], at(30), reservation_id="r5", actual=280, basis=CostBasis()),
                spending.charge(
                    held, [], at(31), charge_id="c1", amount=70, basis=cost_basis({"price_sheet": "s"}), reason=""
                ),
                plans.release_plan(held, [], at(32), reason=plans.FINISHED),
                spending.commit(held, [], at(33), reservation_id="r1", actual=40, basis=CostBasis()),
            )
        )
        refused(
            lambda held=held: plans.reserve_plan(
                held, [], at(34), reservation_id="p0", amount=50_000, basis=CostBasis(), expires_at=HOUR, attempt=2
            )
        )
    # The commit of r5 and the plan's release are new; the charge and the late commit are retries.
    assert answers[0] == answers[1] == ((None, 0), (14, 0), 635, (10, 0))
    recorded = stored_events(loaded)
    assert [decode(event)["reservation_id"] for event in recorded] == ["r5", "p1"]
    assert recorded == stored_events(fresh)
