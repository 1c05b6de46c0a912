"""Registry gates, refusals, retirement and aliases over the wire: a gate rule the ledger
evaluates on recorded scores (with its evidence), asserted verdicts marked as asserted, refused
promotions recorded in the history, retired families, aliases moved by compare-and-set, and
retries by request id. Expected values are written out here."""

from __future__ import annotations

import uuid
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2

from tests.service.support import Stubs, batch, error_info, open_run
from trainledger.v1 import common_pb2, registry_pb2, runs_pb2

Code = grpc.StatusCode
CHECKPOINT_DIGEST = "sha256:" + "ab" * 32


def refusal(call: Any, request: Any, **kwargs: Any) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    """(status, ErrorInfo reason, metadata) of a call that must be refused."""
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=10, **kwargs)
    info = error_info(caught.value)
    assert info.domain == "trainledger"
    return caught.value.code(), info.reason, dict(info.metadata)


def scored_version(stubs: Stubs, scores: dict[str, float]) -> tuple[str, str, int]:
    """A family whose version 1 is made from a run's checkpoint with `scores`: (family, run id,
    the position of the checkpoint's save)."""
    run_id = open_run(stubs).state.run.run_id
    stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(1, 11))), timeout=10)
    saved = stubs.runs.SaveCheckpoint(
        runs_pb2.SaveCheckpointRequest(
            run_id=run_id,
            attempt=1,
            step=10,
            handle=common_pb2.StateHandle(backend="local", uri="file:///ckpt/10", fidelity="weights"),
            digest=CHECKPOINT_DIGEST,
            scores=scores,
        ),
        timeout=10,
    )
    family = f"fam-{uuid.uuid4().hex[:12]}"
    stubs.registry.Register(
        registry_pb2.RegisterRequest(
            family=family,
            artifact_uri="s3://models/1",
            digest="sha256:" + "01" * 32,
            source_checkpoint=registry_pb2.SourceCheckpoint(
                run_id=run_id, step=10, checkpoint_digest=CHECKPOINT_DIGEST
            ),
        ),
        timeout=10,
    )
    return family, run_id, saved.position


def bare_family(stubs: Stubs, versions: int = 2) -> str:
    """A family of `versions` versions, none current, that the views already hold."""
    family = f"fam-{uuid.uuid4().hex[:12]}"
    for number in range(1, versions + 1):
        registered = stubs.registry.Register(
            registry_pb2.RegisterRequest(
                family=family, artifact_uri=f"s3://models/{number}", digest="sha256:" + f"{number:02x}" * 32
            ),
            timeout=10,
        )
    history(stubs, family, registered.position)
    return family


def history(stubs: Stubs, family: str, min_position: int = 0) -> registry_pb2.ListVersionsResponse:
    return stubs.registry.ListVersions(
        registry_pb2.ListVersionsRequest(family=family, min_position=min_position), timeout=10
    )


def promote_each(stubs: Stubs, family: str, versions: int) -> None:
    """Promote versions 1 to `versions` in turn (an alias names only a version once promoted)."""
    for number in range(1, versions + 1):
        request = registry_pb2.PromoteRequest(
            family=family, version=number, expected_current=number - 1, verdict=asserted(True)
        )
        stubs.registry.Promote(request, timeout=10)


def asserted(passed: bool, reason: str = "checked by hand") -> registry_pb2.GateVerdict:
    return registry_pb2.GateVerdict(passed=passed, reason=reason)


def test_a_gate_rule_is_evaluated_by_the_ledger_on_the_source_checkpoints_scores(stubs: Stubs) -> None:
    family, run_id, saved_at = scored_version(stubs, {"eval_loss": 0.31, "accuracy": 0.86})
    promoted = stubs.registry.Promote(
        registry_pb2.PromoteRequest(family=family, version=1, gate_rule="eval_loss <= 0.5 and accuracy >= 0.8"),
        timeout=10,
    )
    assert promoted.current == 1 and promoted.verdict.passed and promoted.verdict.mode == "evaluated"
    assert promoted.verdict.rule == "eval_loss <= 0.5 and accuracy >= 0.8"
    evidence = {e.name: e for e in promoted.verdict.evidence}
    assert evidence["eval_loss"].value == 0.31 and evidence["accuracy"].value == 0.86
    assert {(e.source, e.run_id, e.step, e.position) for e in evidence.values()} == {
        ("checkpoint", run_id, 10, saved_at)
    }
    current = stubs.registry.GetCurrent(
        registry_pb2.GetCurrentRequest(family=family, min_position=promoted.position), timeout=10
    )
    assert current.version.version == 1 and current.promotion.verdict.mode == "evaluated"
    assert [e.name for e in current.promotion.verdict.evidence] == ["eval_loss", "accuracy"]


def test_a_failed_gate_rule_is_refused_and_the_refusal_is_recorded_with_its_evidence(stubs: Stubs) -> None:
    family, _, saved_at = scored_version(stubs, {"eval_loss": 0.72})
    code, reason, metadata = refusal(
        stubs.registry.Promote, registry_pb2.PromoteRequest(family=family, version=1, gate_rule="eval_loss <= 0.5")
    )
    assert (code, reason) == (Code.FAILED_PRECONDITION, "GATE_NOT_PASSED")
    page = history(stubs, family, int(metadata["recorded_position"]))
    assert page.current == 0
    [refused] = page.history
    assert (refused.kind, refused.version, refused.refusal) == ("refused", 1, "GATE_NOT_PASSED")
    assert refused.verdict.mode == "evaluated" and not refused.verdict.passed
    assert [(e.name, e.value, e.position) for e in refused.verdict.evidence] == [("eval_loss", 0.72, saved_at)]


def test_a_score_the_rule_names_but_nobody_recorded_fails_the_gate(stubs: Stubs) -> None:
    family, _, _ = scored_version(stubs, {"eval_loss": 0.2})
    code, reason, metadata = refusal(
        stubs.registry.Promote, registry_pb2.PromoteRequest(family=family, version=1, gate_rule="bleu >= 30")
    )
    assert (code, reason) == (Code.FAILED_PRECONDITION, "GATE_NOT_PASSED")
    [refused] = history(stubs, family, int(metadata["recorded_position"])).history
    [missing] = refused.verdict.evidence
    assert missing.name == "bleu" and not missing.HasField("value")


def test_a_gate_rule_on_an_evaluation_runs_summary(stubs: Stubs) -> None:
    family = bare_family(stubs, 1)
    evaluation = open_run(stubs).state.run.run_id
    summary = struct_pb2.Struct()
    summary.update({"accuracy": 0.91, "note": "held-out set"})
    noted = stubs.runs.NoteSummary(runs_pb2.NoteSummaryRequest(run_id=evaluation, summary=summary), timeout=10)
    promoted = stubs.registry.Promote(
        registry_pb2.PromoteRequest(family=family, version=1, gate_rule="accuracy > 0.9", evaluation_run_id=evaluation),
        timeout=10,
    )
    [evidence] = promoted.verdict.evidence
    assert (evidence.source, evidence.run_id, evidence.value, evidence.position) == (
        "summary",
        evaluation,
        0.91,
        noted.position,
    )
    code, reason, _ = refusal(
        stubs.registry.Promote,
        registry_pb2.PromoteRequest(family=family, version=1, gate_rule="accuracy > 0.9", evaluation_run_id="nope"),
    )
    assert (code, reason) == (Code.NOT_FOUND, "RUN_NOT_FOUND")
    # A retracted run's summary is no evidence.
    stubs.runs.RetractRun(runs_pb2.RetractRunRequest(run_id=evaluation, reason="leaked eval set"), timeout=10)
    code, reason, _ = refusal(
        stubs.registry.Promote,
        registry_pb2.PromoteRequest(
            family=family, version=1, expected_current=1, gate_rule="accuracy > 0.5", evaluation_run_id=evaluation
        ),
    )
    assert (code, reason) == (Code.FAILED_PRECONDITION, "RUN_RETRACTED")


def test_a_version_with_no_source_checkpoint_has_no_scores_to_evaluate(stubs: Stubs) -> None:
    family = bare_family(stubs, 1)
    code, reason, _ = refusal(
        stubs.registry.Promote, registry_pb2.PromoteRequest(family=family, version=1, gate_rule="eval_loss < 1")
    )
    assert (code, reason) == (Code.FAILED_PRECONDITION, "GATE_EVIDENCE_MISSING")


@pytest.mark.parametrize(
    "rule,position",
    [
        ("eval_loss <=", 12),
        ("eval_loss => 0.5", 10),
        ("eval_loss <= 0.5 or accuracy > 1", 17),
        ("eval_loss <= nan", 13),
        ("eval_loss <= 1e999", 13),
        ("eval_loss <= ٠.٥", 13),
        ("", 0),
    ],
)
def test_a_malformed_gate_rule_is_invalid_with_its_position(stubs: Stubs, rule: str, position: int) -> None:
    family = bare_family(stubs, 1)
    code, reason, metadata = refusal(
        stubs.registry.Promote, registry_pb2.PromoteRequest(family=family, version=1, gate_rule=rule or " ")
    )
    assert (code, reason) == (Code.INVALID_ARGUMENT, "INVALID_GATE_RULE")
    assert metadata["position"] == str(position)
    assert not history(stubs, family).history


def test_a_gate_rule_is_bounded_and_excludes_an_asserted_verdict(stubs: Stubs) -> None:
    family = bare_family(stubs, 1)
    long_rule = " and ".join(["eval_loss <= 0.5"] * 17)
    code, reason, _ = refusal(
        stubs.registry.Promote, registry_pb2.PromoteRequest(family=family, version=1, gate_rule=long_rule)
    )
    assert (code, reason) == (Code.INVALID_ARGUMENT, "INVALID_GATE_RULE")
    code, reason, _ = refusal(
        stubs.registry.Promote,
        registry_pb2.PromoteRequest(family=family, version=1, gate_rule="x < " + "1" * 1100),
    )
    assert (code, reason) == (Code.INVALID_ARGUMENT, "INVALID_GATE_RULE")
    code, reason, _ = refusal(
        stubs.registry.Promote,
        registry_pb2.PromoteRequest(family=family, version=1, gate_rule="x < 1", verdict=asserted(True)),
    )
    assert (code, reason) == (Code.INVALID_ARGUMENT, "INVALID_FIELD")


def test_an_asserted_verdict_is_marked_asserted_and_an_asserted_failure_is_recorded(stubs: Stubs) -> None:
    family = bare_family(stubs)
    code, reason, _ = refusal(
        stubs.registry.Promote,
        registry_pb2.PromoteRequest(family=family, version=2, verdict=asserted(False, "eval loss rose")),
    )
    assert (code, reason) == (Code.FAILED_PRECONDITION, "GATE_NOT_PASSED")
    promoted = stubs.registry.Promote(
        registry_pb2.PromoteRequest(family=family, version=1, verdict=asserted(True, "looked fine")), timeout=10
    )
    assert promoted.verdict.mode == "asserted" and not promoted.verdict.evidence
    page = history(stubs, family, promoted.position)
    assert [(p.kind, p.version, p.refusal, p.verdict.mode) for p in page.history] == [
        ("refused", 2, "GATE_NOT_PASSED", "asserted"),
        ("promote", 1, "", "asserted"),
    ]
    assert page.history[0].verdict.reason == "eval loss rose"


def test_a_lost_compare_and_set_is_recorded_as_a_refusal(stubs: Stubs) -> None:
    family = bare_family(stubs)
    stubs.registry.Promote(registry_pb2.PromoteRequest(family=family, version=1, verdict=asserted(True)), timeout=10)
    code, reason, metadata = refusal(
        stubs.registry.Promote,
        registry_pb2.PromoteRequest(family=family, version=2, expected_current=0, verdict=asserted(True)),
    )
    assert (code, reason, metadata["current"]) == (Code.ABORTED, "CURRENT_VERSION_MOVED", "1")
    page = history(stubs, family, int(metadata["recorded_position"]))
    assert page.current == 1
    assert [(p.kind, p.version, p.previous, p.expected_current, p.refusal) for p in page.history] == [
        ("promote", 1, 0, 0, ""),
        ("refused", 2, 1, 0, "CURRENT_VERSION_MOVED"),
    ]


def test_a_retry_by_request_id_answers_first_and_another_payload_is_already_exists(stubs: Stubs) -> None:
    family = bare_family(stubs)
    request_id = (("x-request-id", f"req-{uuid.uuid4().hex}"),)
    failing = registry_pb2.PromoteRequest(family=family, version=1, verdict=asserted(False, "no"))
    first = refusal(stubs.registry.Promote, failing, metadata=request_id)
    again = refusal(stubs.registry.Promote, failing, metadata=request_id)
    assert first[:2] == again[:2] == (Code.FAILED_PRECONDITION, "GATE_NOT_PASSED")
    other = registry_pb2.PromoteRequest(family=family, version=1, verdict=asserted(True))
    code, reason, _ = refusal(stubs.registry.Promote, other, metadata=request_id)
    assert (code, reason) == (Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")
    assert [p.kind for p in history(stubs, family, int(first[2]["recorded_position"])).history] == ["refused"]

    promote_each(stubs, family, 2)
    moved_id = (("x-request-id", f"req-{uuid.uuid4().hex}"),)
    move = registry_pb2.MoveAliasRequest(family=family, alias="staging", version=2, expected_version=0)
    moved = stubs.registry.MoveAlias(move, timeout=10, metadata=moved_id)
    repeated = stubs.registry.MoveAlias(move, timeout=10, metadata=moved_id)
    assert (repeated.position, repeated.duplicate, moved.duplicate) == (moved.position, True, False)
    changed = registry_pb2.MoveAliasRequest(family=family, alias="staging", version=1, expected_version=0)
    code, reason, _ = refusal(stubs.registry.MoveAlias, changed, metadata=moved_id)
    assert (code, reason) == (Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")


def test_aliases_move_by_compare_and_set_and_name_a_version(stubs: Stubs) -> None:
    family = bare_family(stubs)
    promote_each(stubs, family, 2)
    staged = stubs.registry.MoveAlias(
        registry_pb2.MoveAliasRequest(family=family, alias="staging", version=2, expected_version=0), timeout=10
    )
    assert (staged.version, staged.previous, staged.duplicate) == (2, 0, False)
    stubs.registry.MoveAlias(
        registry_pb2.MoveAliasRequest(family=family, alias="production", version=1, expected_version=0), timeout=10
    )
    code, reason, metadata = refusal(
        stubs.registry.MoveAlias,
        registry_pb2.MoveAliasRequest(family=family, alias="staging", version=1, expected_version=0),
    )
    assert (code, reason, metadata["current"]) == (Code.ABORTED, "ALIAS_MOVED", "2")
    moved = stubs.registry.MoveAlias(
        registry_pb2.MoveAliasRequest(family=family, alias="production", version=2, expected_version=1), timeout=10
    )
    by_alias = stubs.registry.GetCurrent(
        registry_pb2.GetCurrentRequest(family=family, alias="production", min_position=moved.position), timeout=10
    )
    assert by_alias.version.version == 2 and sorted(by_alias.version.aliases) == ["production", "staging"]
    page = history(stubs, family)
    assert [(a.alias, a.version) for a in page.aliases] == [("production", 2), ("staging", 2)]
    none = stubs.registry.GetCurrent(registry_pb2.GetCurrentRequest(family=family, alias="canary"), timeout=10)
    assert not none.HasField("version")
    code, reason, _ = refusal(stubs.registry.GetCurrent, registry_pb2.GetCurrentRequest(family=family, alias="Canary"))
    assert (code, reason) == (Code.INVALID_ARGUMENT, "INVALID_ALIAS")
    removed = stubs.registry.MoveAlias(
        registry_pb2.MoveAliasRequest(family=family, alias="staging", version=0, expected_version=2), timeout=10
    )
    assert [a.alias for a in history(stubs, family, removed.position).aliases] == ["production"]


@pytest.mark.parametrize(
    "alias,version,reason,code",
    [
        ("Staging", 1, "INVALID_ALIAS", Code.INVALID_ARGUMENT),
        ("9prod", 1, "INVALID_ALIAS", Code.INVALID_ARGUMENT),
        ("a" * 65, 1, "INVALID_ALIAS", Code.INVALID_ARGUMENT),
        ("staging", 7, "VERSION_NOT_FOUND", Code.NOT_FOUND),
        ("staging", -1, "OUT_OF_RANGE", Code.INVALID_ARGUMENT),
    ],
)
def test_bad_alias_moves_are_refused(stubs: Stubs, alias: str, version: int, reason: str, code: Any) -> None:
    family = bare_family(stubs, 1)
    got = refusal(stubs.registry.MoveAlias, registry_pb2.MoveAliasRequest(family=family, alias=alias, version=version))
    assert got[:2] == (code, reason)


def test_a_family_holds_a_bounded_number_of_aliases(stubs: Stubs) -> None:
    family = bare_family(stubs, 1)
    promote_each(stubs, family, 1)
    for index in range(32):
        stubs.registry.MoveAlias(registry_pb2.MoveAliasRequest(family=family, alias=f"a{index}", version=1), timeout=10)
    code, reason, _ = refusal(
        stubs.registry.MoveAlias, registry_pb2.MoveAliasRequest(family=family, alias="one-more", version=1)
    )
    assert (code, reason) == (Code.FAILED_PRECONDITION, "TOO_MANY_ALIASES")


def test_a_retired_family_takes_no_promotions_and_still_reads(stubs: Stubs) -> None:
    family = bare_family(stubs)
    promoted = stubs.registry.Promote(
        registry_pb2.PromoteRequest(family=family, version=1, verdict=asserted(True)), timeout=10
    )
    retired = stubs.registry.RetireFamily(
        registry_pb2.RetireFamilyRequest(family=family, reason="superseded by fam-b"), timeout=10
    )
    again = stubs.registry.RetireFamily(
        registry_pb2.RetireFamilyRequest(family=family, reason="superseded by fam-b"), timeout=10
    )
    assert (again.position, again.duplicate) == (retired.position, True)
    code, reason, _ = refusal(
        stubs.registry.RetireFamily, registry_pb2.RetireFamilyRequest(family=family, reason="another reason")
    )
    assert (code, reason) == (Code.ALREADY_EXISTS, "EXISTS_WITH_DIFFERENT_PAYLOAD")
    for call, request in (
        (
            stubs.registry.Promote,
            registry_pb2.PromoteRequest(family=family, version=2, expected_current=1, verdict=asserted(True)),
        ),
        (
            stubs.registry.Rollback,
            registry_pb2.RollbackRequest(family=family, version=1, expected_current=1, reason="x"),
        ),
        (stubs.registry.MoveAlias, registry_pb2.MoveAliasRequest(family=family, alias="staging", version=1)),
        (
            stubs.registry.Register,
            registry_pb2.RegisterRequest(family=family, artifact_uri="s3://m/3", digest="sha256:" + "03" * 32),
        ),
    ):
        got = refusal(call, request)
        assert got[:2] == (Code.FAILED_PRECONDITION, "FAMILY_RETIRED"), call
    current = stubs.registry.GetCurrent(
        registry_pb2.GetCurrentRequest(family=family, min_position=retired.position), timeout=10
    )
    assert current.version.version == 1 and current.retired.reason == "superseded by fam-b"
    assert current.promotion.position == promoted.position
    page = history(stubs, family)
    assert page.retired.reason == "superseded by fam-b" and page.retired.position == retired.position
    assert [p.kind for p in page.history] == ["promote"]
    code, reason, _ = refusal(stubs.registry.RetireFamily, registry_pb2.RetireFamilyRequest(family=family, reason=""))
    assert (code, reason) == (Code.INVALID_ARGUMENT, "MISSING_FIELD")


def test_an_alias_names_only_a_version_that_passed_a_gate(stubs: Stubs) -> None:
    family = bare_family(stubs)
    refusal(
        stubs.registry.Promote,
        registry_pb2.PromoteRequest(family=family, version=1, verdict=asserted(False, "eval loss rose")),
    )
    code, reason, metadata = refusal(
        stubs.registry.MoveAlias, registry_pb2.MoveAliasRequest(family=family, alias="production", version=1)
    )
    assert (code, reason, metadata["version"]) == (Code.FAILED_PRECONDITION, "NEVER_PROMOTED", "1")
    code, reason, _ = refusal(
        stubs.registry.MoveAlias, registry_pb2.MoveAliasRequest(family=family, alias="production", version=2)
    )
    assert (code, reason) == (Code.FAILED_PRECONDITION, "NEVER_PROMOTED")
    stubs.registry.Promote(
        registry_pb2.PromoteRequest(family=family, version=2, verdict=asserted(True, "checked by hand")), timeout=10
    )
    moved = stubs.registry.MoveAlias(
        registry_pb2.MoveAliasRequest(family=family, alias="production", version=2), timeout=10
    )
    assert (moved.version, moved.duplicate) == (2, False)


def test_an_asserted_verdict_does_not_promote_a_version_of_a_retracted_run(stubs: Stubs) -> None:
    family, run_id, _ = scored_version(stubs, {"eval_loss": 0.2})
    retracted = stubs.runs.RetractRun(runs_pb2.RetractRunRequest(run_id=run_id, reason="leaked eval set"), timeout=10)
    code, reason, _ = refusal(
        stubs.registry.Promote, registry_pb2.PromoteRequest(family=family, version=1, verdict=asserted(True, "ok"))
    )
    assert (code, reason) == (Code.FAILED_PRECONDITION, "RUN_RETRACTED")
    assert history(stubs, family, retracted.position).current == 0


@pytest.mark.parametrize("given", ["", "   "])
def test_an_asserted_verdict_needs_a_reason(stubs: Stubs, given: str) -> None:
    family = bare_family(stubs, 1)
    code, reason, metadata = refusal(
        stubs.registry.Promote, registry_pb2.PromoteRequest(family=family, version=1, verdict=asserted(True, given))
    )
    assert (code, reason, metadata["field"]) == (Code.INVALID_ARGUMENT, "MISSING_FIELD", "verdict.reason")
    assert not history(stubs, family).history


def test_a_rollback_goes_to_any_version_current_before(stubs: Stubs) -> None:
    family = bare_family(stubs, 3)
    promote_each(stubs, family, 3)
    back = stubs.registry.Rollback(
        registry_pb2.RollbackRequest(family=family, version=1, expected_current=3, reason="v3 regressed"), timeout=10
    )
    assert (back.current, back.previous) == (1, 3)
    forward = stubs.registry.Rollback(
        registry_pb2.RollbackRequest(family=family, version=2, expected_current=1, reason="v2 was fine"), timeout=10
    )
    assert (forward.current, forward.previous) == (2, 1)
    code, reason, _ = refusal(
        stubs.registry.Rollback,
        registry_pb2.RollbackRequest(family=family, version=2, expected_current=2, reason="again"),
    )
    assert (code, reason) == (Code.FAILED_PRECONDITION, "ROLLBACK_NOT_EARLIER")


def test_the_list_of_families_marks_a_retired_one(stubs: Stubs) -> None:
    live, gone = bare_family(stubs, 1), bare_family(stubs, 1)
    retired = stubs.registry.RetireFamily(registry_pb2.RetireFamilyRequest(family=gone, reason="replaced"), timeout=10)
    listed = stubs.registry.ListFamilies(
        registry_pb2.ListFamiliesRequest(min_position=retired.position, page_size=1000), timeout=10
    )
    marks = {f.family: f.retired for f in listed.families if f.family in (live, gone)}
    assert marks == {live: False, gone: True}
