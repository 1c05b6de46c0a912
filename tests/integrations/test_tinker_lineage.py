"""The Tinker integration's source_checkpoint: a training started from another run's checkpoint
records it as the run's source when the run is opened (the source lists the new run), with the
real SDK against the loopback fake and a real in-process ledger; a source that does not exist is
refused before Tinker sees anything."""

from __future__ import annotations

import pytest

pytest.importorskip("tinker")

from clients import LedgerClient, NotFound, RunSourceCheckpoint  # noqa: E402
from clients.integrations.tinker import LedgeredServiceClient, ResumeRefused  # noqa: E402
from tests.integrations.test_tinker import (  # noqa: E402, F401
    HYPERPARAMETERS,
    MODEL,
    fake,
    head,
    ledger,
    ledger_server,
    service,
    train,
)


def test_a_training_from_another_runs_checkpoint_records_its_source(
    service: LedgeredServiceClient,  # noqa: F811
    ledger: LedgerClient,  # noqa: F811
    fake,  # noqa: F811
) -> None:
    with service.create_lora_training_client(MODEL, rank=8, hyperparameters=HYPERPARAMETERS, name="base") as base:
        train(base, 3)
        paths = base.save_checkpoint("ckpt-3").result(timeout=30)
        base_id = base.run_id

    source = RunSourceCheckpoint(run_id=base_id, step=3, uri=paths["path"])
    child = service.create_lora_training_client(
        MODEL,
        rank=8,
        hyperparameters={**HYPERPARAMETERS, "learning_rate": 5e-5},
        name="child",
        source_checkpoint=source,
    )
    with child:
        train(child, 1)
    made = fake.models[child.training_client.model_id]
    assert (made.loaded_from, made.optimizer_loaded) == (paths["path"], False)  # the weights, a fresh optimizer

    state = ledger.get_run_state(run_id=child.run_id, min_position=head(ledger))
    assert state.source is not None
    assert (state.source.run_id, state.source.name, state.source.step, state.source.uri) == (
        base_id,
        "base",
        3,
        paths["path"],
    )
    listed = ledger.get_run_state(run_id=base_id, min_position=head(ledger))
    assert [(c.run_id, c.step) for c in listed.children] == [(child.run_id, 3)]


def test_a_resumed_child_loads_its_own_checkpoint_and_keeps_its_source(
    service: LedgeredServiceClient,  # noqa: F811
    ledger: LedgerClient,  # noqa: F811
    fake,  # noqa: F811
) -> None:
    with service.create_lora_training_client(MODEL, rank=8, hyperparameters=HYPERPARAMETERS) as base:
        train(base, 2)
        source_path = base.save_checkpoint("ckpt-2").result(timeout=30)["path"]
        source = {"run_id": base.run_id, "step": 2, "uri": source_path}
    hyperparameters = {**HYPERPARAMETERS, "learning_rate": 5e-5}
    child = service.create_lora_training_client(
        MODEL, rank=8, hyperparameters=hyperparameters, source_checkpoint=source
    )
    train(child, 2)
    own_path = child.save_checkpoint("child-2").result(timeout=30)["path"]
    assert child.recorder.flush(10)  # The crash: nothing is finished.

    resumed = service.resume(base_model=MODEL, rank=8, hyperparameters=hyperparameters, source_checkpoint=source)
    made = fake.models[resumed.training_client.model_id]
    assert (made.loaded_from, made.optimizer_loaded) == (own_path, True)
    assert (resumed.run_id, resumed.attempt, resumed.step) == (child.run_id, 2, 2)
    resumed.finish()
    child.close()  # Only to stop the dead attempt's threads in this test process.
    state = ledger.get_run_state(run_id=child.run_id, min_position=head(ledger))
    assert (state.source.run_id, state.source.step, state.source.uri) == (base.run_id, 2, source_path)


def test_a_source_that_does_not_exist_is_refused_before_tinker_is_called(
    service: LedgeredServiceClient,  # noqa: F811
    ledger: LedgerClient,  # noqa: F811
    fake,  # noqa: F811
) -> None:
    with service.create_lora_training_client(MODEL, rank=8, hyperparameters=HYPERPARAMETERS) as base:
        train(base, 1)
        base_id = base.run_id
    sessions = len(fake.sessions)
    missing = {"run_id": base_id, "step": 7, "uri": "tinker://nowhere/7"}
    with pytest.raises(NotFound) as refused:
        service.create_lora_training_client(
            MODEL, rank=8, hyperparameters={"learning_rate": 1e-3}, source_checkpoint=missing
        )
    assert refused.value.reason == "CHECKPOINT_NOT_FOUND"
    with pytest.raises(ResumeRefused) as not_tinkers:
        service.create_lora_training_client(
            MODEL, rank=8, hyperparameters={"learning_rate": 2e-3}, source_checkpoint={**missing, "uri": "/ck/7"}
        )
    assert not_tinkers.value.reason == "URI_SCHEME_MISMATCH"
    assert len(fake.sessions) == sessions
