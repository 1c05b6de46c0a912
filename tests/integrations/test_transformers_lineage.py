"""LedgerCallback's source_checkpoint: a training started from another run's checkpoint records it
as the run's source when the run is opened, and the source run lists the new run."""

from __future__ import annotations

from pathlib import Path

import pytest

from clients import LedgerClient, RunSourceCheckpoint
from clients.integrations.transformers import LedgerCallback
from tests.client.conftest import QUICK_RETRIES
from tests.client.server_thread import ServerThread
from tests.integrations.test_transformers_callback import Trainer, make_spec, run_state, wait_for


@pytest.fixture
def client(tmp_path: Path):
    server = ServerThread(str(tmp_path / "ledger.db")).start()
    with LedgerClient(server.address, principal="tests", retries=QUICK_RETRIES) as client:
        yield client
    server.stop()


def test_a_training_from_another_runs_checkpoint_records_its_source(client: LedgerClient, tmp_path: Path) -> None:
    base_spec = make_spec("lineage-base")
    base = Trainer(LedgerCallback(client=client, spec=base_spec), tmp_path / "base", max_steps=4)
    base.begin()
    for _ in range(4):
        base.step({"loss": 1.0}, save=base.state.global_step + 1 == 4)
    base.end()
    wait_for(lambda: getattr(run_state(client, base_spec).checkpoint, "step", None) == 4)
    base_state = run_state(client, base_spec)
    uri = base_state.checkpoint.handle.uri

    spec = make_spec("lineage-child")
    source = RunSourceCheckpoint(run_id=base_state.run.run_id, step=4, uri=uri)
    child = Trainer(LedgerCallback(client=client, spec=spec, source_checkpoint=source), tmp_path / "child", max_steps=2)
    child.begin()
    child.step({"loss": 0.5})
    child.end()
    state = run_state(client, spec)
    assert state.source is not None
    assert (state.source.run_id, state.source.name, state.source.step, state.source.uri) == (
        base_state.run.run_id,
        "lineage-base",
        4,
        uri,
    )
    listed = client.get_run_state(run_id=base_state.run.run_id, min_position=state.position)
    assert [(c.run_id, c.step) for c in listed.children] == [(state.run.run_id, 4)]
