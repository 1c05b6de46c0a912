"""The client's registry gates, refusals, aliases and retirement against a real server: a gate
rule the ledger evaluates (the verdict and its evidence come back typed), a refused promotion
raised as its error class and found in the history, aliases moved and looked up, a retired
family refused further writes; the asyncio client the same."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from clients import (
    Aborted,
    AsyncLedgerClient,
    FailedPrecondition,
    GateNotPassed,
    InvalidArgument,
    LedgerClient,
    SourceCheckpoint,
    run_key,
)
from tests.client.server_thread import ServerThread

CHECKPOINT_DIGEST = "sha256:" + "56" * 32


def scored_family(client: LedgerClient, loss: float) -> tuple[str, str]:
    """A family whose version 1 is made from a checkpoint scored eval_loss = `loss`: (family, run id)."""
    run_id = client.open_run(run_key=run_key({"test": str(uuid.uuid4())}), name="gated").state.run.run_id
    attempt = client.start_attempt(run_id=run_id).attempt
    client.append_steps(run_id=run_id, attempt=attempt, steps=[5], metrics={"loss": [1.0]})
    client.save_checkpoint(
        run_id=run_id,
        attempt=attempt,
        step=5,
        uri="file:///ckpt/5",
        backend="local",
        digest=CHECKPOINT_DIGEST,
        scores={"eval_loss": loss},
    )
    family = f"fam-{uuid.uuid4().hex[:12]}"
    client.register(
        family=family,
        artifact_uri="s3://models/1",
        digest="sha256:" + "78" * 32,
        source_checkpoint=SourceCheckpoint(run_id=run_id, step=5, checkpoint_digest=CHECKPOINT_DIGEST),
    )
    return family, run_id


def test_a_gate_rule_comes_back_evaluated_with_its_evidence(client: LedgerClient) -> None:
    family, run_id = scored_family(client, 0.25)
    receipt = client.promote(family=family, version=1, expected_current=0, gate_rule="eval_loss < 0.3")
    assert receipt.current == 1 and receipt.verdict is not None and receipt.verdict.mode == "evaluated"
    [evidence] = receipt.verdict.evidence
    assert (evidence.name, evidence.value, evidence.source, evidence.run_id, evidence.step) == (
        "eval_loss",
        0.25,
        "checkpoint",
        run_id,
        5,
    )
    current = client.current_version(family=family, min_position=receipt.position)
    assert current.version is not None and current.version.version == 1
    assert current.promotion is not None and current.promotion.verdict is not None
    assert current.promotion.verdict.mode == "evaluated" and current.retired is None


def test_a_refused_promotion_raises_and_is_in_the_history(client: LedgerClient) -> None:
    family, _ = scored_family(client, 0.9)
    with pytest.raises(GateNotPassed) as caught:
        client.promote(family=family, version=1, expected_current=0, gate_rule="eval_loss < 0.3")
    recorded = int(caught.value.metadata["recorded_position"])
    page = client.list_versions(family=family, min_position=recorded)
    [refused] = page.history
    assert (refused.kind, refused.refusal, refused.position) == ("refused", "GATE_NOT_PASSED", recorded)
    assert refused.verdict is not None and refused.verdict.evidence[0].value == 0.9
    with pytest.raises(InvalidArgument) as invalid:
        client.promote(family=family, version=1, expected_current=0, gate_rule="eval_loss < ")
    assert invalid.value.reason == "INVALID_GATE_RULE" and invalid.value.metadata["position"] == "12"


def test_aliases_and_retirement(client: LedgerClient) -> None:
    family, _ = scored_family(client, 0.1)
    client.promote(family=family, version=1, expected_current=0, gate_rule="eval_loss <= 0.5")
    moved = client.move_alias(family=family, alias="production", version=1, expected_version=0)
    assert (moved.version, moved.previous, moved.duplicate) == (1, 0, False)
    with pytest.raises(Aborted) as lost:
        client.move_alias(family=family, alias="production", version=1, expected_version=0)
    assert lost.value.reason == "ALIAS_MOVED"
    found = client.get_current(family=family, alias="production", min_position=moved.position)
    assert found is not None and found.version == 1 and found.aliases == ["production"]
    retired = client.retire_family(family=family, reason="replaced")
    with pytest.raises(FailedPrecondition) as refused:
        client.promote(family=family, version=1, expected_current=1, verdict={"passed": True, "reason": "checked"})
    assert refused.value.reason == "FAMILY_RETIRED"
    page = client.list_versions(family=family, min_position=retired.position)
    assert page.retired is not None and page.retired.reason == "replaced"
    assert [(a.alias, a.version) for a in page.aliases] == [("production", 1)]


def test_the_asyncio_client_the_same(client: LedgerClient, server: ServerThread) -> None:
    family, _ = scored_family(client, 0.2)

    async def scenario() -> None:
        async with AsyncLedgerClient(server.address, principal="tests", timeout_s=10.0) as aio:
            receipt = await aio.promote(family=family, version=1, expected_current=0, gate_rule="eval_loss <= 0.2")
            assert receipt.verdict is not None and receipt.verdict.passed
            moved = await aio.move_alias(family=family, alias="staging", version=1, expected_version=0)
            current = await aio.current_version(family=family, alias="staging", min_position=moved.position)
            assert current.version is not None and current.version.version == 1
            retired = await aio.retire_family(family=family, reason="done")
            assert not retired.duplicate

    asyncio.run(scenario())
