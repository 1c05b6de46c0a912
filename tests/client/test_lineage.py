"""Lineage through the client: open_run and RunRecorder.open carry a source checkpoint (the model
or a mapping), the new run's state names its source, and the source's state lists its children."""

from __future__ import annotations

import pytest

from clients import LedgerClient, NotFound, RunRecorder, RunSourceCheckpoint
from tests.client.conftest import new_run


def _base(client: LedgerClient) -> str:
    run_id, attempt = new_run(client)
    client.append_steps(run_id=run_id, attempt=attempt, steps=list(range(8)), metrics={"loss": [1.0] * 8})
    client.save_checkpoint(run_id=run_id, attempt=attempt, step=7, uri="file:///ckpt/base/7", backend="local")
    return run_id


def test_open_run_and_the_recorder_carry_the_source(client: LedgerClient) -> None:
    base = _base(client)
    opened = client.open_run(
        run_key="lineage-from-client",
        name="from-client",
        source_checkpoint=RunSourceCheckpoint(run_id=base, step=7, uri="file:///ckpt/base/7"),
    )
    assert opened.state.source is not None
    assert (opened.state.source.run_id, opened.state.source.name, opened.state.source.step) == (base, "test", 7)
    with RunRecorder.open(
        client, run_key="lineage-from-recorder", name="from-recorder", source_checkpoint={"run_id": base, "step": 7}
    ) as recorder:
        assert recorder.state is not None and recorder.state.source is not None
        assert (recorder.state.source.run_id, recorder.state.source.uri) == (base, "")
        recorder.log(0, loss=1.0)
    state = client.get_run_state(run_id=base, min_position=recorder.state.position)
    assert [(child.name, child.step) for child in state.children] == [("from-recorder", 7), ("from-client", 7)]
    assert state.child_count == 2 and state.source is None


def test_a_missing_source_checkpoint_is_not_found(client: LedgerClient) -> None:
    base = _base(client)
    with pytest.raises(NotFound) as caught:
        client.open_run(run_key="lineage-missing", source_checkpoint=RunSourceCheckpoint(run_id=base, step=3))
    assert caught.value.reason == "CHECKPOINT_NOT_FOUND"
