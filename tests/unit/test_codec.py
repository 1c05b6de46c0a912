"""The codec's read models: each has the fields of the trainledger.v1 message it is sent as (one
vocabulary for the ledger, the wire and the client), and each is encoded field for field."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest
from google.protobuf import struct_pb2, timestamp_pb2

from ledger.views import models
from services.grpc.codec import messages
from trainledger.v1 import common_pb2, events_pb2, registry_pb2, runs_pb2, spend_pb2

AT = datetime(2025, 3, 1, 12, 30, tzinfo=UTC)
LATER = datetime(2025, 3, 2, tzinfo=UTC)


def stamp(moment: datetime) -> timestamp_pb2.Timestamp:
    message = timestamp_pb2.Timestamp()
    message.FromDatetime(moment)
    return message


def document(value: dict[str, object]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(value)
    return message


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (models.StateHandle, common_pb2.StateHandle),
        (models.RunInfo, runs_pb2.RunInfo),
        (models.Attempt, runs_pb2.Attempt),
        (models.Checkpoint, runs_pb2.Checkpoint),
        (models.Resume, runs_pb2.Resume),
        (models.SpendTotals, runs_pb2.SpendTotals),
        (models.RunState, runs_pb2.RunState),
        (models.RunSummary, runs_pb2.RunSummary),
        (models.SeriesPage, runs_pb2.GetSeriesResponse),
        (models.MetricColumn, common_pb2.MetricColumn),
        (models.Account, spend_pb2.Account),
        (models.Reservation, spend_pb2.Reservation),
        (models.ModelVersion, registry_pb2.ModelVersion),
        (models.GateVerdict, registry_pb2.GateVerdict),
        (models.Promotion, registry_pb2.Promotion),
        (models.BillTotals, common_pb2.BillTotals),
        (models.Reconciliation, spend_pb2.Reconciliation),
        (models.TokenClassDrift, spend_pb2.TokenClassDrift),
        (models.ProviderBill, spend_pb2.ProviderBill),
        (models.UnattributedGroup, spend_pb2.UnattributedGroup),
        (models.ReconcileReport, spend_pb2.ReconcileResponse),
    ],
)
def test_a_read_model_has_the_fields_of_its_message(model: type[msgspec.Struct], message: type) -> None:
    assert sorted(model.__struct_fields__) == sorted(field.name for field in message.DESCRIPTOR.fields)


def test_a_run_state_is_encoded_field_for_field() -> None:
    handle = models.StateHandle(backend="tinker", uri="tinker://c/8", fidelity="weights")
    checkpoint = models.Checkpoint(
        attempt=2,
        step=8,
        handle=handle,
        sampler_uri="tinker://s/8",
        final=True,
        saved_at=AT,
        expires_at=LATER,
        digest="d8",
    )
    scored = models.Checkpoint(
        attempt=2,
        step=6,
        handle=handle,
        sampler_uri="",
        final=False,
        saved_at=AT,
        expires_at=None,
        digest="d6",
        scores={"eval_loss": 0.25},
    )
    state = models.RunState(
        run=models.RunInfo(
            run_id="r",
            run_key="k",
            name="sft",
            status="failed",
            spec={"lr": 0.5, "epochs": 3},
            summary={"loss": 0.25},
            error="oom",
            opened_at=AT,
            finished_at=LATER,
            objective=models.Objective(metric="eval_loss", mode="min"),
            retraction=models.Retraction(reason="leaked eval data", retracted_at=LATER, principal="ops"),
        ),
        attempts=(
            models.Attempt(number=1, attempt_id="a1", label="host", started_at=AT, resumed_from_step=None, ended=True),
            models.Attempt(number=2, attempt_id="a2", label="", started_at=LATER, resumed_from_step=0, ended=False),
        ),
        current_attempt=2,
        checkpoint=checkpoint,
        expired_checkpoints=(checkpoint,),
        expired_checkpoint_count=7,
        resume=models.Resume(
            available=True, from_step=8, handle=handle, sampler_uri="tinker://s/8", spend_committed_usd_micro=120
        ),
        last_step=9,
        spend=models.SpendTotals(
            cap_usd_micro=None,
            committed_usd_micro=120,
            pending_usd_micro=30,
            remaining_usd_micro=None,
            overrun_usd_micro=5,
        ),
        position=42,
        best_checkpoint=scored,
        progress=models.Progress(max_steps=20, step=9, fraction=0.45, steps_per_second=0.5, eta=LATER),
        datasets=(
            models.Dataset(
                role="eval",
                digest="sha256:" + "d" * 64,
                format="chat",
                rows=10,
                tokens=None,
                source_uri="file:///eval.jsonl",
                report={"gate": "passed"},
                recorded_at=AT,
            ),
        ),
        reports={"holdout": {"metric": "loss", "before": 2.5, "after": 1.75}},
    )
    wire_handle = common_pb2.StateHandle(backend="tinker", uri="tinker://c/8", fidelity="weights")
    wire_checkpoint = runs_pb2.Checkpoint(
        attempt=2,
        step=8,
        handle=wire_handle,
        sampler_uri="tinker://s/8",
        final=True,
        saved_at=stamp(AT),
        expires_at=stamp(LATER),
        digest="d8",
    )
    assert messages.run_state(state) == runs_pb2.RunState(
        run=runs_pb2.RunInfo(
            run_id="r",
            run_key="k",
            name="sft",
            status=common_pb2.RUN_STATUS_FAILED,
            spec=document({"lr": 0.5, "epochs": 3}),
            summary=document({"loss": 0.25}),
            error="oom",
            opened_at=stamp(AT),
            finished_at=stamp(LATER),
            objective=runs_pb2.Objective(metric="eval_loss", mode=runs_pb2.OBJECTIVE_MODE_MIN),
            retraction=runs_pb2.Retraction(reason="leaked eval data", retracted_at=stamp(LATER), principal="ops"),
        ),
        attempts=[
            runs_pb2.Attempt(number=1, attempt_id="a1", label="host", started_at=stamp(AT), ended=True),
            runs_pb2.Attempt(number=2, attempt_id="a2", started_at=stamp(LATER), resumed_from_step=0),
        ],
        current_attempt=2,
        checkpoint=wire_checkpoint,
        expired_checkpoints=[wire_checkpoint],
        expired_checkpoint_count=7,
        resume=runs_pb2.Resume(
            available=True, from_step=8, handle=wire_handle, sampler_uri="tinker://s/8", spend_committed_usd_micro=120
        ),
        last_step=9,
        spend=runs_pb2.SpendTotals(committed_usd_micro=120, pending_usd_micro=30, overrun_usd_micro=5),
        position=42,
        best_checkpoint=runs_pb2.Checkpoint(
            attempt=2, step=6, handle=wire_handle, saved_at=stamp(AT), digest="d6", scores={"eval_loss": 0.25}
        ),
        progress=runs_pb2.Progress(max_steps=20, step=9, fraction=0.45, steps_per_second=0.5, eta=stamp(LATER)),
        datasets=[
            runs_pb2.Dataset(
                role=runs_pb2.DATASET_ROLE_EVAL,
                digest="sha256:" + "d" * 64,
                format="chat",
                rows=10,
                source_uri="file:///eval.jsonl",
                report=document({"gate": "passed"}),
                recorded_at=stamp(AT),
            )
        ],
        reports=document({"holdout": {"metric": "loss", "before": 2.5, "after": 1.75}}),
    )


def test_optional_fields_stay_absent_on_the_wire() -> None:
    state = models.RunState(
        run=models.RunInfo(
            run_id="r",
            run_key="k",
            name="",
            status="running",
            spec={},
            summary={},
            error="",
            opened_at=AT,
            finished_at=None,
        ),
        attempts=(),
        current_attempt=0,
        checkpoint=None,
        expired_checkpoints=(),
        expired_checkpoint_count=0,
        resume=models.Resume(available=False, from_step=0, handle=None, sampler_uri="", spend_committed_usd_micro=0),
        last_step=None,
        spend=models.SpendTotals(
            cap_usd_micro=0, committed_usd_micro=0, pending_usd_micro=0, remaining_usd_micro=0, overrun_usd_micro=0
        ),
        position=3,
    )
    message = messages.run_state(state)
    assert not message.HasField("checkpoint") and not message.HasField("last_step")
    assert not message.HasField("best_checkpoint") and not message.run.HasField("objective")
    assert not message.run.HasField("retraction") and not message.progress.HasField("eta")
    assert not any(message.progress.HasField(name) for name in ("max_steps", "step", "fraction", "steps_per_second"))
    assert not message.resume.HasField("handle") and not message.run.HasField("finished_at")
    assert not message.HasField("reports")  # no report recorded
    # A cap of 0 (spend nothing) is sent, unlike no cap at all.
    assert message.spend.HasField("cap_usd_micro") and message.spend.HasField("remaining_usd_micro")


def test_a_series_page_sends_only_the_columns_someone_gave() -> None:
    page = models.SeriesPage(
        steps=(4, 5, 6),
        attempts=(1, 1, 2),
        tokens=(0, 0, 0),
        usd_micro=(0, 7, 0),
        superseded=(False, True, False),
        metrics=(
            models.MetricColumn(name="eval_loss", values=(0.5,), index=(2,)),
            models.MetricColumn(name="loss", values=(3.0, 2.0, 1.0)),
        ),
        next_from_step=7,
    )
    assert messages.series(page) == runs_pb2.GetSeriesResponse(
        steps=[4, 5, 6],
        attempts=[1, 1, 2],
        usd_micro=[0, 7, 0],
        superseded=[False, True, False],
        metrics=[
            common_pb2.MetricColumn(name="eval_loss", values=[0.5], index=[2]),
            common_pb2.MetricColumn(name="loss", values=[3.0, 2.0, 1.0]),
        ],
        next_from_step=7,
    )


def test_a_reservation_and_a_promotion_are_encoded_field_for_field() -> None:
    basis = {
        "price_sheet": "sheet",
        "tokens": [{"token_class": "train", "tokens": 10, "usd_micro_per_million_tokens": 3}],
    }
    reservation = models.Reservation(
        reservation_id="r1",
        kind="reservation",
        state="committed",
        amount_usd_micro=100,
        actual_usd_micro=150,
        overrun_usd_micro=50,
        basis=basis,
        actual_basis=None,
        reason="",
        attempt=2,
        reserved_at=AT,
        settled_at=LATER,
        expires_at=None,
        position=9,
    )
    wire_basis = common_pb2.CostBasis(
        price_sheet="sheet",
        tokens=[common_pb2.TokenCost(token_class="train", tokens=10, usd_micro_per_million_tokens=3)],
    )
    assert messages.reservation(reservation) == spend_pb2.Reservation(
        reservation_id="r1",
        kind="reservation",
        state="committed",
        amount_usd_micro=100,
        actual_usd_micro=150,
        overrun_usd_micro=50,
        basis=wire_basis,
        attempt=2,
        reserved_at=stamp(AT),
        settled_at=stamp(LATER),
        position=9,
    )
    promotion = models.Promotion(
        version=3,
        previous=1,
        kind="promote",
        verdict=models.GateVerdict(passed=True, reason="gate", stats={"acc": 0.9}),
        reason="",
        at=AT,
        principal="ci",
        position=12,
    )
    assert messages.promotion(promotion) == registry_pb2.Promotion(
        version=3,
        previous=1,
        kind="promote",
        verdict=registry_pb2.GateVerdict(passed=True, reason="gate", stats=document({"acc": 0.9}), mode="asserted"),
        at=stamp(AT),
        principal="ci",
        position=12,
    )
    rollback = msgspec.structs.replace(promotion, kind="rollback", verdict=None, reason="regressed")
    assert not messages.promotion(rollback).HasField("verdict")


GENERIC = (
    runs_pb2.RunState,
    runs_pb2.RunSummary,
    runs_pb2.MetricStats,
    runs_pb2.PruneEntry,
    spend_pb2.Account,
    spend_pb2.ReconcileResponse,
    spend_pb2.Reservation,
    registry_pb2.ModelVersion,
    registry_pb2.Promotion,
    registry_pb2.Alias,
    registry_pb2.Retirement,
    events_pb2.VerifyResponse,
)


def test_every_enum_of_a_message_encoded_by_name_has_its_rule() -> None:
    """A read model holds a word where the wire has an enum: the generic encoder cannot guess the
    number, so each such field, however deep, is in messages.RULES."""
    missing, seen, waiting = [], set(), [message.DESCRIPTOR for message in GENERIC]
    while waiting:
        descriptor = waiting.pop()
        if descriptor.full_name in seen or descriptor.full_name.startswith("google.protobuf."):
            continue
        seen.add(descriptor.full_name)
        rules = next((r for m, r in messages.RULES.items() if m.DESCRIPTOR is descriptor), {})
        for field in descriptor.fields:
            if field.name in rules:
                continue
            if field.enum_type is not None:
                missing.append(field.full_name)
            elif field.message_type is not None and not field.message_type.GetOptions().map_entry:
                waiting.append(field.message_type)
    assert "trainledger.v1.RunInfo" in seen and "trainledger.v1.Dataset" in seen
    assert missing == []


def test_a_verification_sends_where_the_chain_breaks_only_when_it_does() -> None:
    head = models.ChainHead(position=9, digest="ab")
    verified = models.Verification(ok=True, head=head, checked=9, broken_at=0)
    broken = models.Verification(ok=False, head=head, checked=4, broken_at=5, problem="digest", detail="differs")
    assert messages.verification(verified) == events_pb2.VerifyResponse(
        ok=True, head=events_pb2.ChainHead(position=9, digest="ab"), checked=9
    )
    assert not messages.verification(verified).HasField("broken_at")
    assert messages.verification(broken) == events_pb2.VerifyResponse(
        ok=False,
        head=events_pb2.ChainHead(position=9, digest="ab"),
        checked=4,
        broken_at=5,
        problem="digest",
        detail="differs",
    )
