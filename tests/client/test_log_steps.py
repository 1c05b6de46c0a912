"""RunRecorder.log_steps: several steps handed over in one call, each recorded as log() records it,
checked (and a due system metrics sample read) on the sender thread, never in the training loop."""

from __future__ import annotations

import math
import threading
from typing import Any

import pytest

import clients.sender
from clients import LedgerClient, RunRecorder, run_key
from tests.client.conftest import series_steps


def test_rows_are_recorded_as_log_records_them_and_checked_on_the_sender_thread(
    client: LedgerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked_on: list[str] = []
    make_row = clients.sender.make_row

    def counted_make_row(*row: Any) -> Any:
        checked_on.append(threading.current_thread().name)
        return make_row(*row)

    monkeypatch.setattr(clients.sender, "make_row", counted_make_row)
    read_on: list[str] = []

    def probe() -> dict[str, float]:
        read_on.append(threading.current_thread().name)
        return {"probe_units": 7.0}

    recorder = RunRecorder.open(client, run_key=run_key({"t": "log_steps"}), system_metrics_s=3600.0)
    assert recorder._system is not None
    recorder._system.sources = {"probe": probe}
    recorder.log_steps(
        [
            (0, 10, None, {"loss": 1.0}),
            (1, 20, None, {"loss": math.nan, "lr": 0.1}),
            ("not a step", None, None, {"loss": 1.0}),
            (2, None, 5, {"loss": 0.5, "note": "text"}),
        ]
    )
    recorder.log_steps([(3, 40, None, {"loss": 0.25})])  # The next sample is an hour away.
    assert recorder.flush(30)
    counters = recorder.counters
    assert counters["acked"] == 4 and counters["non_finite"] == 1 and counters["dropped"] == 1
    assert checked_on == ["trainledger-recorder"] * 5 and read_on == ["trainledger-recorder"]
    page = client.get_series(run_id=recorder.run_id)
    assert page.steps == [0, 1, 2, 3] and page.tokens == [10, 20, 0, 40]
    columns = {column.name: column for column in page.metrics}
    assert set(columns) == {"loss", "lr", "system/probe_units"}
    assert columns["loss"].index == [0, 2, 3] and columns["loss"].values == [1.0, 0.5, 0.25]
    assert columns["system/probe_units"].index == [0] and columns["system/probe_units"].values == [7.0]
    recorder.finish()
    assert series_steps(client, recorder.run_id) == [0, 1, 2, 3]


def test_rows_handed_over_after_close_are_dropped_and_counted(client: LedgerClient) -> None:
    recorder = RunRecorder.open(client, run_key=run_key({"t": "log_steps closed"}))
    recorder.log_steps([(0, None, None, {"loss": 1.0})])
    recorder.close()
    recorder.log_steps([(1, None, None, {"loss": 1.0}), (2, None, None, {"loss": 1.0})])
    recorder.log_steps([])
    counters = recorder.counters
    assert counters["acked"] == 1 and counters["dropped"] == 2
