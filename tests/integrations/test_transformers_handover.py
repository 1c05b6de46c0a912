"""How LedgerCallback hands a fast training loop's steps to the recorder: HANDOVER_ROWS rows of
steps that are over in one RunRecorder.log_steps call (the rest at the end), each row checked on
the recorder's sender thread, none in the training loop; every step still reaches the ledger."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import clients.sender
from clients import LedgerClient
from clients.integrations.transformers import LedgerCallback, steps
from tests.client.conftest import QUICK_RETRIES
from tests.client.server_thread import ServerThread
from tests.integrations.test_transformers_callback import Trainer, make_spec


@pytest.fixture
def client(tmp_path: Path):
    server = ServerThread(str(tmp_path / "ledger.db")).start()
    with LedgerClient(server.address, principal="tests", retries=QUICK_RETRIES) as client:
        yield client
    server.stop()


def test_forty_steps_go_in_two_handovers_checked_off_the_training_loop(
    client: LedgerClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(steps, "HANDOVER_S", 3600.0)  # Only the row count hands over here.
    checked_on: list[str] = []
    make_row = clients.sender.make_row

    def counted_make_row(*row: Any) -> Any:
        checked_on.append(threading.current_thread().name)
        return make_row(*row)

    monkeypatch.setattr(clients.sender, "make_row", counted_make_row)
    callback = LedgerCallback(client=client, spec=make_spec("handover"), recorder_options={"system_metrics_s": None})
    trainer = Trainer(callback, tmp_path, max_steps=40)
    trainer.begin()
    recorder = callback.recorder
    assert recorder is not None
    handovers: list[list[int]] = []
    log_steps, log = recorder.log_steps, recorder.log

    def counted_log_steps(rows: Any) -> None:
        handovers.append([row[0] for row in rows])
        log_steps(rows)

    def no_log(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a step was logged one at a time")

    monkeypatch.setattr(recorder, "log_steps", counted_log_steps)
    monkeypatch.setattr(recorder, "log", no_log)
    for step in range(1, 41):
        trainer.step({"loss": 1.0 / step, "learning_rate": 1e-3, "train_runtime": 0.1}, tokens=10)
    trainer.end()
    monkeypatch.setattr(recorder, "log", log)
    assert handovers == [list(range(1, 33)), list(range(33, 41))]
    assert checked_on == ["trainledger-recorder"] * 40
    counters = recorder.counters
    assert counters["acked"] == 40 and counters["dropped"] == 0
    page = client.get_series(run_id=recorder.run_id)
    assert page.steps == list(range(1, 41)) and page.tokens == [10 * step for step in range(1, 41)]
    assert {column.name for column in page.metrics} == {"loss", "lr"}
