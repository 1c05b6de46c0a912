"""The rows of a runs frame from records, without a server: document columns named and typed by
their values, an empty search still has the run's columns, and Parquet keeps a column whose
values disagree in kind as their JSON text."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pandas

from clients.frames import RUN_COLUMNS, document_columns, parquet_bytes, runs_frame_of

BASE = {
    "run_id": "r1",
    "name": "n",
    "status": "done",
    "account": None,
    "attempts": 1,
    "last_step": None,
    "started": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    "finished": None,
    "spend_committed_usd_micro": 0,
    "spend_presumed_usd_micro": 0,
    "cap_usd_micro": None,
}


def test_a_document_flattens_with_dots_and_quotes_odd_keys() -> None:
    spec = {"lora": {"r": 8, "target-modules": ["q", "v"]}, "eval/loss": 0.5, "ok": True}
    assert document_columns("spec", spec) == {
        "spec.lora.r": 8,
        "spec.lora.`target-modules`": '["q","v"]',
        "spec.`eval/loss`": 0.5,
        "spec.ok": True,
    }


def test_document_columns_take_the_dtype_of_their_values() -> None:
    records = [
        {**BASE, "spec.big": 10**20, "spec.mixed": 1, "spec.n": 3, "spec.x": 1, "spec.flag": True},
        {**BASE, "run_id": "r2", "spec.big": 1, "spec.mixed": "one", "spec.x": 0.5},
    ]
    frame = runs_frame_of(records)
    assert {name: str(frame[name].dtype) for name in frame.columns if name.startswith("spec.")} == {
        "spec.big": "float64",
        "spec.flag": "boolean",
        "spec.mixed": "object",
        "spec.n": "Int64",
        "spec.x": "float64",
    }
    parquet = pandas.read_parquet(io.BytesIO(parquet_bytes(frame)))
    assert list(parquet["spec.mixed"]) == ["1", '"one"']
    assert list(parquet["spec.x"]) == [1.0, 0.5]


def test_no_runs_is_a_frame_of_the_runs_columns() -> None:
    frame = runs_frame_of([])
    assert (list(frame.columns), len(frame)) == (list(RUN_COLUMNS), 0)
    assert str(frame["started"].dtype) == "datetime64[ns, UTC]"
