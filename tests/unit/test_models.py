"""The client's typed results (clients.models) against the proto messages they mirror: the same
fields, decoded from real messages with the documented value rules, immutable, and JSON-ready
through `.to_dict()`. No server: messages are built here and decoded by clients.codec."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, get_type_hints

import msgspec
import pytest
from google.protobuf.descriptor import Descriptor

from clients import codec, models
from trainledger.v1 import common_pb2, events_pb2, registry_pb2, runs_pb2, spend_pb2

# What each response message is decoded into, and the fields the client adds that the message
# does not carry (client-made ids) or leaves out (a watch's state mask is folded, not returned).
RESPONSES: list[tuple[Descriptor, type[models.Model], set[str], set[str]]] = [
    (runs_pb2.OpenRunResponse.DESCRIPTOR, models.OpenRunReceipt, set(), set()),
    (runs_pb2.StartAttemptResponse.DESCRIPTOR, models.StartAttemptReceipt, set(), set()),
    (runs_pb2.AppendStepsResponse.DESCRIPTOR, models.AppendReceipt, set(), set()),
    (runs_pb2.RecordStepsResponse.DESCRIPTOR, models.StepAck, set(), set()),
    (runs_pb2.SaveCheckpointResponse.DESCRIPTOR, models.CheckpointReceipt, set(), set()),
    (runs_pb2.FinishRunResponse.DESCRIPTOR, models.FinishReceipt, set(), set()),
    (runs_pb2.NoteSummaryResponse.DESCRIPTOR, models.SummaryReceipt, set(), set()),
    (runs_pb2.RunState.DESCRIPTOR, models.RunState, set(), set()),
    (runs_pb2.ListRunsResponse.DESCRIPTOR, models.RunPage, set(), set()),
    (runs_pb2.GetSeriesResponse.DESCRIPTOR, models.SeriesPage, set(), set()),
    (runs_pb2.WatchRunResponse.DESCRIPTOR, models.WatchUpdate, set(), {"state_mask"}),
    (spend_pb2.Account.DESCRIPTOR, models.Account, set(), set()),
    (spend_pb2.OpenAccountResponse.DESCRIPTOR, models.OpenAccountReceipt, set(), set()),
    (spend_pb2.SetCapResponse.DESCRIPTOR, models.SetCapReceipt, set(), set()),
    (spend_pb2.ReserveResponse.DESCRIPTOR, models.ReserveReceipt, {"reservation_id"}, set()),
    (spend_pb2.CommitResponse.DESCRIPTOR, models.CommitReceipt, set(), set()),
    (spend_pb2.ReleaseResponse.DESCRIPTOR, models.ReleaseReceipt, set(), set()),
    (spend_pb2.ChargeResponse.DESCRIPTOR, models.ChargeReceipt, {"charge_id"}, set()),
    (spend_pb2.ListReservationsResponse.DESCRIPTOR, models.ReservationPage, set(), set()),
    (spend_pb2.RecordBilledUsageResponse.DESCRIPTOR, models.BilledUsageReceipt, set(), set()),
    (spend_pb2.ReconcileResponse.DESCRIPTOR, models.ReconcileReport, set(), set()),
    (spend_pb2.AdjustToBillResponse.DESCRIPTOR, models.AdjustReceipt, set(), set()),
    (runs_pb2.LinkSessionResponse.DESCRIPTOR, models.LinkSessionReceipt, set(), set()),
    (runs_pb2.RetractRunResponse.DESCRIPTOR, models.RetractReceipt, set(), set()),
    (runs_pb2.RecordDatasetResponse.DESCRIPTOR, models.DatasetReceipt, set(), set()),
    (runs_pb2.DeleteCheckpointResponse.DESCRIPTOR, models.DeleteCheckpointReceipt, set(), set()),
    (runs_pb2.PlanPruneResponse.DESCRIPTOR, models.PrunePage, set(), set()),
    # The objective's metric and mode sit beside the checkpoint and its score.
    (runs_pb2.BestCheckpointResponse.DESCRIPTOR, models.BestCheckpoint, {"metric", "mode"}, {"objective"}),
    (registry_pb2.ModelVersion.DESCRIPTOR, models.ModelVersion, set(), set()),
    (registry_pb2.RegisterResponse.DESCRIPTOR, models.RegisterReceipt, set(), set()),
    (registry_pb2.PromoteResponse.DESCRIPTOR, models.PromoteReceipt, set(), set()),
    (registry_pb2.RollbackResponse.DESCRIPTOR, models.RollbackReceipt, set(), set()),
    (registry_pb2.ListVersionsResponse.DESCRIPTOR, models.Family, set(), set()),
    (events_pb2.Event.DESCRIPTOR, models.Event, set(), set()),
    (events_pb2.GetHeadResponse.DESCRIPTOR, models.ChainHead, set(), set()),
    (events_pb2.VerifyResponse.DESCRIPTOR, models.Verification, set(), set()),
]


def _nested(model: type[Any], name: str) -> type[Any] | None:
    """The Struct type a field of `model` holds (itself, in a list, or optional), if any."""
    hint = get_type_hints(model)[name]
    for candidate in (hint, *getattr(hint, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, msgspec.Struct):
            return candidate
    return None


def _mismatches(descriptor: Descriptor, model: type[Any], extra: set[str], left_out: set[str]) -> list[str]:
    fields = {field.name for field in descriptor.fields} - left_out
    found = (
        []
        if set(model.__struct_fields__) == fields | extra
        else [f"{model.__name__}: {sorted(set(model.__struct_fields__) ^ (fields | extra))}"]
    )
    for field in descriptor.fields:
        kind = field.message_type
        if field.name in left_out or kind is None or kind.full_name.startswith("google.protobuf."):
            continue
        if kind.GetOptions().map_entry:  # A map of scalars: a dict.
            continue
        nested = _nested(model, field.name)
        if nested is None:
            found.append(f"{model.__name__}.{field.name} is not a typed result")
        else:
            found += _mismatches(kind, nested, set(), set())
    return found


@pytest.mark.parametrize(
    ("descriptor", "model", "extra", "left_out"), RESPONSES, ids=[model.__name__ for _, model, _, _ in RESPONSES]
)
def test_each_result_mirrors_its_message_field_for_field(
    descriptor: Descriptor, model: type[models.Model], extra: set[str], left_out: set[str]
) -> None:
    assert _mismatches(descriptor, model, extra, left_out) == []


def _state_message() -> runs_pb2.RunState:
    opened = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    state = runs_pb2.RunState(
        run=runs_pb2.RunInfo(
            run_id="r1",
            run_key="k",
            name="n",
            status=common_pb2.RUN_STATUS_STOPPED,
            spec=codec.struct({"steps": 30, "lr": 0.5, "big": 2.0**60, "tags": ["a"]}),
        ),
        attempts=[runs_pb2.Attempt(number=1, attempt_id="a1", label="host")],
        current_attempt=1,
        resume=runs_pb2.Resume(
            available=True,
            from_step=20,
            handle=common_pb2.StateHandle(backend="tinker", uri="tinker://w/20", fidelity="weights"),
        ),
        spend=runs_pb2.SpendTotals(committed_usd_micro=7),
        position=9,
    )
    state.run.opened_at.FromDatetime(opened)
    return state


def test_a_run_state_decodes_by_the_documented_rules() -> None:
    state = codec.decode(_state_message(), models.RunState)
    assert state.resume.handle is not None and state.resume.handle.uri == "tinker://w/20"
    assert state.run.status == "stopped"
    # Struct numbers: whole ones within 2**53 as ints, others stay floats.
    assert state.run.spec == {"steps": 30, "lr": 0.5, "big": 2.0**60, "tags": ["a"]}
    assert type(state.run.spec["steps"]) is int and type(state.run.spec["big"]) is float
    assert state.run.opened_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    # Unset: optional scalars, messages and timestamps are None; an unset Struct an empty dict.
    assert state.last_step is None and state.checkpoint is None and state.run.finished_at is None
    assert state.spend.cap_usd_micro is None and state.run.summary == {}
    assert state.attempts[0].resumed_from_step is None and state.attempts[0].started_at is None


def test_an_unspecified_status_reads_as_empty() -> None:
    assert codec.decode(runs_pb2.RunSummary(run_id="r"), models.RunSummary).status == ""


def test_results_are_immutable_and_compared_by_value() -> None:
    state = codec.decode(_state_message(), models.RunState)
    with pytest.raises(AttributeError):
        state.current_attempt = 2  # type: ignore[misc]
    assert state == codec.decode(_state_message(), models.RunState)


def test_to_dict_is_json_ready() -> None:
    document = codec.decode(_state_message(), models.RunState).to_dict()
    assert json.loads(json.dumps(document)) == document
    assert document["run"]["opened_at"] == "2026-01-02T03:04:05Z"
    assert document["resume"]["handle"] == {"backend": "tinker", "uri": "tinker://w/20", "fidelity": "weights"}
    assert document["checkpoint"] is None and document["position"] == 9


def test_an_event_decodes_its_data() -> None:
    message = events_pb2.Event(position=3, type="Run.Opened", data_json=b'{"name": "n", "cap": 5}')
    event = codec.decode(message, models.Event)
    assert (event.position, event.data_json, event.recorded_at) == (3, {"name": "n", "cap": 5}, None)
    assert codec.decode(events_pb2.Event(position=4), models.Event).data_json == {}


def test_scores_objective_progress_datasets_and_retraction_decode_as_words_and_dicts() -> None:
    state = _state_message()
    state.run.objective.CopyFrom(runs_pb2.Objective(metric="eval_loss", mode=runs_pb2.OBJECTIVE_MODE_MIN))
    state.run.retraction.CopyFrom(runs_pb2.Retraction(reason="leaked eval set", principal="ops"))
    state.best_checkpoint.CopyFrom(runs_pb2.Checkpoint(attempt=1, step=20, scores={"eval_loss": 0.25, "acc": 0.5}))
    state.progress.CopyFrom(runs_pb2.Progress(max_steps=100, step=20, fraction=0.2))
    state.datasets.add(role=runs_pb2.DATASET_ROLE_EVAL, digest="sha256:" + "a" * 64, format="sft", rows=3)
    decoded = codec.decode(state, models.RunState)
    assert decoded.run.objective == models.Objective(metric="eval_loss", mode="min")
    assert decoded.run.retraction is not None and decoded.run.retraction.reason == "leaked eval set"
    assert decoded.best_checkpoint is not None
    assert decoded.best_checkpoint.scores == {"eval_loss": 0.25, "acc": 0.5}
    assert decoded.best_checkpoint.deleted_at is None and decoded.best_checkpoint.expired is False
    assert decoded.progress == models.Progress(max_steps=100, step=20, fraction=0.2)
    assert [(d.role, d.rows, d.tokens, d.report) for d in decoded.datasets] == [("eval", 3, None, {})]
    # Unset: no objective, no retraction, an empty progress; a role or mode no word names is "".
    empty = codec.decode(_state_message(), models.RunState)
    assert (empty.run.objective, empty.run.retraction, empty.best_checkpoint) == (None, None, None)
    assert empty.progress == models.Progress() and empty.datasets == []
    assert codec.decode(runs_pb2.Dataset(role=7), models.Dataset).role == ""
    assert codec.decode(runs_pb2.Objective(metric="m"), models.Objective).mode == ""


def test_objective_and_role_words_encode_and_other_words_are_refused() -> None:
    assert codec.objective(("reward", "max")) == runs_pb2.Objective(metric="reward", mode=runs_pb2.OBJECTIVE_MODE_MAX)
    assert codec.objective(None) is None
    assert codec.dataset_role("train") == runs_pb2.DATASET_ROLE_TRAIN
    with pytest.raises(ValueError, match="'minimum'"):
        codec.objective(("loss", "minimum"))
    with pytest.raises(ValueError, match="'test'"):
        codec.dataset_role("test")


def test_a_source_checkpoint_encodes_field_for_field() -> None:
    source = models.SourceCheckpoint(run_id="r", step=40, attempt=2, checkpoint_digest="sha256:" + "b" * 64)
    assert codec.source_checkpoint(source) == registry_pb2.SourceCheckpoint(
        run_id="r", step=40, attempt=2, checkpoint_digest="sha256:" + "b" * 64
    )
    version = registry_pb2.ModelVersion(family="f", source_retracted=True)
    version.source_checkpoint.CopyFrom(codec.source_checkpoint(source))
    assert codec.decode(version, models.ModelVersion).source_checkpoint == source
