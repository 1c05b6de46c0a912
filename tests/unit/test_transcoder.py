"""Every stored event class (and a snapshot) survives the application's msgspec mapper."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import msgspec
import pytest
from eventsourcing.domain import Snapshot

from ledger import Ledger
from ledger.domain import (
    abandoned,
    aliases,
    leases,
    plans,
    run_attempts,
    run_checkpoints,
    run_notes,
    run_steps,
    run_tags,
)
from ledger.domain import spending as spend
from ledger.domain.accounts import Account
from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.domain.basis import CostBasis, check_basis, cost_basis
from ledger.domain.batches import StepBatch
from ledger.domain.bills import Bill, check_line
from ledger.domain.errors import CapExceeded, Refused
from ledger.domain.registry import Family
from ledger.domain.runs import Run
from ledger.storage.transcoder import MsgspecTranscoder

NOW = datetime(2025, 1, 1, 12, 30, 15, 123456, tzinfo=UTC)
AUDIT = Audit("alice@example.com", "request-7", NOW)
BASIS = check_basis(
    {
        "price_sheet": "tinker",
        "price_source": "https://example.com",
        "tokens": [{"token_class": "prefill", "tokens": 10, "usd_micro_per_million_tokens": 3}],
        "gpu": {"gpu_milliseconds": 5, "usd_micro_per_gpu_hour": 7, "gpu_type": "H100", "gpu_count": 2},
    }
)


@pytest.fixture
def app(sqlite_database: str) -> Iterator[Ledger]:
    ledger = Ledger.open(sqlite_database, project=False)
    yield ledger
    ledger.close()


def run_events() -> tuple[Run, list[Any]]:
    run = Run._create(
        Run.Opened,
        id=ledger_id("run", "k"),
        run_key="k",
        name="name",
        spec={"model": "llama", "lr": 1e-4, "layers": [1, 2], "nested": {"ok": True, "none": None}},
        max_steps=10,
        objective={"metric": "eval_loss", "mode": "min"},
        **AUDIT.fields(),
    )
    run_attempts.start_attempt(run, AUDIT, attempt_id="a1", label="host", resume_from_step=None, max_steps=12)
    run_steps.record_steps(
        run,
        AUDIT,
        StepBatch.build(
            attempt=1,
            steps=[1, 2, 3],
            tokens=[10, 20, 30],
            usd_micro=[1, 2, 3],
            metrics={"loss": [0.5, 0.25, 0.125], "eval_loss": {"values": [1.5], "index": [2]}},
        ),
    )
    run_checkpoints.save_checkpoint(
        run,
        AUDIT,
        attempt=1,
        checkpoint={
            "step": 3,
            "backend": "tinker",
            "uri": "tinker://ckpt/3",
            "fidelity": "weights",
            "sampler_uri": "tinker://s/3",
            "final": True,
            "expires_at": NOW + timedelta(days=7),
            "digest": "sha256:00",
            "scores": {"eval_loss": 0.25, "accuracy": 0.75},
        },
    )
    run_checkpoints.save_checkpoint(
        run,
        AUDIT,
        attempt=1,
        checkpoint={
            "step": 2,
            "backend": "local",
            "uri": "file:///c/2",
            "fidelity": "weights+optimizer",
            "sampler_uri": "",
            "final": False,
            "expires_at": None,
            "digest": "",
            "scores": {"eval_loss": 0.5},
        },
    )
    run_attempts.change_plan(run, AUDIT, max_steps=20)
    run_notes.record_dataset(
        run,
        AUDIT,
        dataset={
            "role": "train",
            "digest": "sha256:" + "d" * 64,
            "format": "chat",
            "rows": 1000,
            "tokens": None,
            "source_uri": "hf://data/x",
            "report": {"dropped": {"too_long": 3}, "gate": {"passed": True}},
        },
    )
    run_checkpoints.note_registered(run, AUDIT, family="llama", version=1, attempt=1, step=3)
    run_checkpoints.delete_checkpoint(run, AUDIT, attempt=1, step=2, reason="retention")
    run_attempts.start_attempt(run, AUDIT, attempt_id="a2", label="", resume_from_step=3, lease_s=60)
    leases.heartbeat(run, Audit("alice@example.com", "request-8", NOW + timedelta(seconds=10)), attempt=2)
    leases.lapse(run, Audit("ledger", "", NOW + timedelta(minutes=5)))
    run_attempts.finish(run, AUDIT, attempt=2, status="failed", summary={"loss": 0.125}, error="x" * 2000)
    run_notes.note_summary(run, AUDIT, summary={"note": "ünïcødé ✓"})
    run_notes.link_session(run, AUDIT, provider="tinker", session_id="sess-1", attempt=2)
    run_notes.record_report(run, AUDIT, kind="notes", report={"reviewer": "ünïcødé ✓", "passes": 3})
    run_tags.set_tags(run, AUDIT, changes={"team": "ünïcødé ✓", "sweep/lr": "3e-4"}, removed=["stage"])
    run_notes.retract(run, AUDIT, reason="trained on a leaked eval set")
    return run, run.collect_events()


def account_events() -> tuple[Account, list[Any]]:
    parent = Account._create(
        Account.Opened, id=ledger_id("account", "team"), name="team", parent="", cap=None, **AUDIT.fields()
    )
    account = Account._create(
        Account.Opened, id=ledger_id("account", "run"), name="run", parent="team", cap=100, **AUDIT.fields()
    )
    later = NOW + timedelta(minutes=15)
    spend.set_cap(account, AUDIT, 200)
    spend.reserve(
        account, [parent], AUDIT, reservation_id="r1", amount=50, basis=cost_basis(BASIS), expires_at=later, attempt=1
    )
    spend.commit(account, [parent], AUDIT, reservation_id="r1", actual=60, basis=cost_basis(BASIS))
    spend.reserve(
        account, [parent], AUDIT, reservation_id="r2", amount=10, basis=CostBasis(), expires_at=later, attempt=1
    )
    spend.release(account, [parent], AUDIT, reservation_id="r2", reason="no call")
    spend.reserve(
        account, [parent], AUDIT, reservation_id="r3", amount=10, basis=CostBasis(), expires_at=later, attempt=1
    )
    abandoned.expire_overdue(account, [parent], Audit("ledger", "", later))
    spend.commit(account, [parent], AUDIT, reservation_id="r3", actual=5, basis=CostBasis())
    spend.reserve(
        account, [parent], AUDIT, reservation_id="r5", amount=10, basis=CostBasis(), expires_at=later, attempt=1
    )
    # How ledgers written before abandoned holds were settled recorded an expiry.
    account.record(Account.SpendExpired, Audit("ledger", "", later), reservation_id="r5", amount=10)
    spend.charge(account, [parent], AUDIT, charge_id="c1", amount=500, basis=cost_basis(BASIS), reason="bill")
    with pytest.raises(CapExceeded):
        spend.reserve(
            account, [parent], AUDIT, reservation_id="r4", amount=10, basis=CostBasis(), expires_at=later, attempt=1
        )
    bill = {"billed_usd_micro": 700, "providers": ["tinker"], "lines": 2}
    spend.adjust(account, [parent], AUDIT, adjustment_id="bill:a", amount=140, bill=bill)
    spend.adjust(account, [parent], AUDIT, adjustment_id="bill:b", amount=-40, bill=bill)
    spend.set_cap(account, AUDIT, 10_000)
    with pytest.raises(CapExceeded):
        plans.reserve_plan(
            account,
            [parent],
            AUDIT,
            reservation_id="p0",
            amount=20_000,
            basis=cost_basis(BASIS),
            expires_at=later,
            attempt=1,
        )
    plans.reserve_plan(
        account, [parent], AUDIT, reservation_id="p1", amount=100, basis=cost_basis(BASIS), expires_at=later, attempt=1
    )
    spend.reserve(
        account, [parent], AUDIT, reservation_id="r6", amount=30, basis=CostBasis(), expires_at=later, attempt=1
    )
    plans.release_plan(account, [parent], AUDIT, reason=plans.FINISHED)
    account.retract(AUDIT, reason="trained on a leaked eval set")
    return account, account.collect_events() + parent.collect_events()


def bill_events() -> tuple[Bill, list[Any]]:
    bill = Bill._create(Bill.Opened, id=ledger_id("bill", "tinker"), provider="tinker", **AUDIT.fields())
    line = check_line(
        {
            "line_id": "sess-1|Qwen/Qwen3-8B|training",
            "interval_start": NOW,
            "interval_end": NOW + timedelta(hours=1),
            "amount_usd_micro": 73_400,
            "amount_text": "0.0734",
            "quantities": {"train": 12_000.0, "storage_gb_hours": 0.25},
            "run_id": "run",
            "session_id": "sess-1",
            "tags": {"ledger_run_id": "run", "team": "ünïcødé ✓"},
            "description": "training Qwen/Qwen3-8B",
        },
        0,
    )
    unpriced = check_line(
        {"line_id": "checkpoints", "interval_start": NOW, "interval_end": NOW + timedelta(hours=1)}, 1
    )
    bill.record_lines(AUDIT, [line, unpriced], [], NOW + timedelta(days=1))
    restated = {**line, "amount": 80_000, "amount_text": "0.08"}
    previous = {"amount": 73_400, "amount_text": "0.0734", "digest": line["digest"], "version": 2}
    bill.record_lines(AUDIT, [], [{**restated, "previous": previous}], None)
    return bill, bill.collect_events()


def family_events() -> tuple[Family, list[Any]]:
    family = Family._create(Family.Created, id=ledger_id("family", "llama"), name="llama", **AUDIT.fields())
    for n in (1, 2):
        family.register(
            AUDIT,
            version_fields={
                "artifact_uri": f"s3://m/{n}",
                "digest": str(n) * 64,
                "source_run_id": "run",
                "source_step": n,
                "metadata": {"n": n},
                **(
                    {"source_checkpoint": {"run_id": "run", "step": 2, "attempt": 1, "checkpoint_digest": "x"}}
                    if n == 2
                    else {}
                ),
            },
        )
    family.promote(AUDIT, version=1, expected_current=0, verdict={"passed": True, "reason": "", "stats": {"a": 0.5}})
    family.promote(AUDIT, version=2, expected_current=1, verdict={"passed": True, "reason": "", "stats": {}})
    family.rollback(AUDIT, version=1, expected_current=2, reason="regression")
    with pytest.raises(Refused):
        family.promote(AUDIT, version=2, expected_current=1, verdict={"passed": False, "mode": "evaluated"})
    aliases.move_alias(family, AUDIT, alias="production", version=1, expected_version=0, request_digest="d1")
    family.retire(AUDIT, reason="replaced")
    return family, family.collect_events()


def declared_event_classes(aggregate: type[LedgerAggregate]) -> set[type]:
    """The event classes an aggregate declares (each has its own apply); the library's
    generated base classes (Event, and Created where Opened replaces it) are never recorded."""
    return {
        value
        for value in vars(aggregate).values()
        if isinstance(value, type)
        and issubclass(value, LedgerAggregate.Event)
        and any("apply" in vars(cls) for cls in value.__mro__ if cls.__qualname__ == value.__qualname__)
    }


SAMPLES = {Run: run_events, Account: account_events, Family: family_events, Bill: bill_events}


@pytest.mark.parametrize("aggregate", [Run, Account, Family, Bill], ids=lambda a: a.__name__)
def test_every_event_class_round_trips(app: Ledger, aggregate: type[LedgerAggregate]) -> None:
    _, events = SAMPLES[aggregate]()
    assert {type(event) for event in events} == declared_event_classes(aggregate)
    for event in events:
        stored = app.mapper.to_stored_event(event)
        assert isinstance(stored.state, bytes)
        decoded = app.mapper.to_domain_event(stored)
        assert type(decoded) is type(event)
        assert vars(decoded) == vars(event), type(event).__qualname__
        assert decoded.timestamp.tzinfo is not None
        assert isinstance(decoded.originator_id, UUID)


@pytest.mark.parametrize("aggregate", [Run, Account, Family, Bill], ids=lambda a: a.__name__)
def test_a_snapshot_round_trips_and_restores_the_same_state(app: Ledger, aggregate: type[LedgerAggregate]) -> None:
    original, _ = SAMPLES[aggregate]()
    snapshot = Snapshot.take(original)
    decoded = app.mapper.to_domain_event(app.mapper.to_stored_event(snapshot))
    # An account's entries (ledger.domain.entries) are stored as maps.
    as_stored = msgspec.to_builtins(snapshot.state, builtin_types=(datetime,))
    assert vars(decoded) == {**vars(snapshot), "state": as_stored}
    restored = decoded.mutate(None)
    if isinstance(restored, Account):  # Its entries load as maps and are typed when first read.
        assert (restored.holds, restored.settled) == (original.holds, original.settled)
    assert {k: v for k, v in vars(restored).items() if k != "_pending_events"} == {
        k: v for k, v in vars(original).items() if k != "_pending_events"
    }


def test_the_transcoder_keeps_datetimes_uuids_and_numbers() -> None:
    transcoder = MsgspecTranscoder()
    value = {
        "id": ledger_id("run", "k"),
        "at": NOW,
        "big": 2**53,
        "f": 0.1,
        "none": None,
        "list": [1, "a", 1.5],
        "map": {"k": [True, False]},
        "bytes": b"\x00\x01",
    }
    assert transcoder.decode(transcoder.encode(value)) == value


def test_stored_events_are_msgpack_not_json(sqlite_database: str) -> None:
    app = Ledger.open(sqlite_database, project=False)
    try:
        run_id = app.open_run(run_key="k", spec={"lr": 0.1}).run_id
        app.start_attempt(run_id=run_id)
        app.append_steps(run_id=run_id, attempt=1, steps=[1, 2], metrics={"loss": [1.0, 0.5]})
    finally:
        app.close()
    with sqlite3.connect(sqlite_database) as connection:
        rows = connection.execute("SELECT topic, state FROM stored_events ORDER BY rowid").fetchall()
    assert len(rows) == 4
    for _topic, state in rows:
        assert isinstance(state, bytes)
        with pytest.raises(ValueError):
            json.loads(state)
        decoded = msgspec.msgpack.decode(state, ext_hook=lambda code, data: (code, bytes(data)))
        assert isinstance(decoded, dict)
        assert decoded["principal"] == ""
        assert isinstance(decoded["timestamp"], datetime)
    steps = msgspec.msgpack.decode(rows[-1][1], ext_hook=lambda code, data: None)
    assert steps["steps"] == [1, 2]
    assert steps["metrics"] == {"loss": {"values": [1.0, 0.5], "index": None}}


def test_events_stored_before_their_new_fields_existed_load_with_the_defaults(app: Ledger) -> None:
    """An Opened, AttemptStarted, CheckpointSaved and VersionRegistered stored without the keys
    added later (max_steps, objective, scores, source_checkpoint) load with None."""
    run, events = run_events()
    family, family_events_ = family_events()
    olds = {
        "Opened": ("max_steps", "objective"),
        "AttemptStarted": ("max_steps",),
        "CheckpointSaved": ("scores",),
        "VersionRegistered": ("source_checkpoint",),
    }
    checked = set()
    for event in [*events, *family_events_]:
        name = type(event).__name__
        if name not in olds:
            continue
        stored = app.mapper.to_stored_event(event)
        data = app.mapper.transcoder.decode(stored.state)
        for key in olds[name]:
            data.pop(key)
        legacy = type(stored)(
            originator_id=stored.originator_id,
            originator_version=stored.originator_version,
            topic=stored.topic,
            state=app.mapper.transcoder.encode(data),
        )
        decoded = app.mapper.to_domain_event(legacy)
        for key in olds[name]:
            assert getattr(decoded, key) is None, (name, key)
        checked.add(name)
    assert checked == set(olds)
    # And a run rebuilt from such events has no plan, objective or scores.
    scratch = Run.__new__(Run)
    opened = next(e for e in events if type(e).__name__ == "Opened")
    stored = app.mapper.to_stored_event(opened)
    data = app.mapper.transcoder.decode(stored.state)
    data.pop("max_steps")
    data.pop("objective")
    legacy_opened = app.mapper.to_domain_event(
        type(stored)(
            originator_id=stored.originator_id,
            originator_version=stored.originator_version,
            topic=stored.topic,
            state=app.mapper.transcoder.encode(data),
        )
    )
    legacy_opened.apply(scratch)
    assert scratch.max_steps is None
    assert scratch.objective is None
    assert run.max_steps == 20
    assert family.versions[0].get("source_checkpoint") is None
