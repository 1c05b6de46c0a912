"""Runs and series as pandas DataFrames, read from a real server over loopback: every page of the
search and of the series, the superseded steps of a killed and resumed attempt flagged, sparse
metrics as NaN, tags, a nested spec and the summary as columns, money as integers; a frame too
large is refused, and without the `frames` extra the error names it."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pandas
import pytest

from clients import AsyncLedgerClient, FrameTooLarge, InvalidArgument, LedgerClient, frames_methods
from tests.client.server_thread import ServerThread

ROOT = Path(__file__).resolve().parents[2]


def record_sweep(client: LedgerClient, sweep: str) -> dict[str, str]:
    """Three runs tagged with `sweep`: "resumed" (killed after step 4, resumed from step 2,
    finished), "plain" (finished, no cap) and "running"; their ids by name."""
    ids = {}
    spec = {"lr": 0.1, "lora": {"r": 8, "alpha": 16}, "warmup-steps": 10, "layers": [1, 2]}
    resumed = client.open_run(run_key=f"{sweep}-resumed", name="resumed", spec=spec, cap_usd_micro=5_000_000)
    ids["resumed"] = run_id = resumed.state.run.run_id
    first = client.start_attempt(run_id=run_id).attempt
    client.append_steps(
        run_id=run_id,
        attempt=first,
        steps=[0, 1, 2, 3, 4],
        usd_micro=[100, 100, 100, 100, 100],
        metrics={"loss": [5.0, 4.0, 3.0, 2.5, 2.25], "eval/acc": {"values": [0.5, 0.75], "index": [1, 3]}},
    )
    client.save_checkpoint(run_id=run_id, attempt=first, step=2, uri="file:///ck/2", backend="local")
    second = client.start_attempt(run_id=run_id, resume_from_step=2).attempt
    client.append_steps(
        run_id=run_id, attempt=second, steps=[3, 4, 5], usd_micro=[200, 200, 200], metrics={"loss": [2.0, 1.5, 1.0]}
    )
    hold = client.reserve(account=run_id, amount_usd_micro=1_000_000, attempt=second)
    client.commit(account=run_id, reservation_id=hold.reservation_id, actual_usd_micro=750_001)
    client.finish_run(run_id=run_id, attempt=second, summary={"best": {"loss": 1.25}, "train/steps": 6})
    client.open_account(account=f"{sweep}-lab")
    plain = client.open_run(
        run_key=f"{sweep}-plain", name="plain", spec={"lr": 0.3, "optimizer": "adamw"}, parent_account=f"{sweep}-lab"
    )
    ids["plain"] = plain.state.run.run_id
    attempt = client.start_attempt(run_id=ids["plain"]).attempt
    client.append_steps(run_id=ids["plain"], attempt=attempt, steps=[0], metrics={"loss": [9.0]})
    client.finish_run(run_id=ids["plain"], attempt=attempt, status="failed")
    ids["running"] = client.open_run(run_key=f"{sweep}-running", name="running", spec={"lr": 0.2}).state.run.run_id
    for name, run_id in ids.items():
        client.set_tags(run_id, {"sweep": sweep, "kind": name})
    return ids


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory):
    server = ServerThread(str(tmp_path_factory.mktemp("frames") / "ledger.db")).start()
    with LedgerClient(server.address, principal="tests") as client:
        sweep = f"s{uuid.uuid4().hex[:8]}"
        ids = record_sweep(client, sweep)
        yield client, server.address, sweep, ids
    server.stop()


def test_a_runs_frame_has_one_row_per_run_in_the_searchs_order_across_pages(ledger, monkeypatch) -> None:
    client, _, sweep, ids = ledger
    monkeypatch.setattr(frames_methods, "PAGE_SIZE_MAX", 2)  # three runs: two pages of the search
    frame = client.runs_frame(f"tags.sweep = '{sweep}'", order_by="spec.lr")

    assert list(frame.columns) == [
        "run_id",
        "name",
        "status",
        "account",
        "attempts",
        "last_step",
        "started",
        "finished",
        "spend_committed_usd_micro",
        "spend_presumed_usd_micro",
        "cap_usd_micro",
        "tags.kind",
        "tags.sweep",
        "spec.`warmup-steps`",
        "spec.layers",
        "spec.lora.alpha",
        "spec.lora.r",
        "spec.lr",
        "spec.optimizer",
        "summary.`train/steps`",
        "summary.best.loss",
    ]
    rows = frame.drop(columns=["started", "finished"]).astype(object).where(frame.notna(), None)
    assert rows.to_dict("records") == [
        {
            "run_id": ids["resumed"],
            "name": "resumed",
            "status": "done",
            "account": None,
            "attempts": 2,
            "last_step": 5,
            "spend_committed_usd_micro": 750_001,
            "spend_presumed_usd_micro": 0,
            "cap_usd_micro": 5_000_000,
            "tags.kind": "resumed",
            "tags.sweep": sweep,
            "spec.`warmup-steps`": 10,
            "spec.layers": "[1,2]",
            "spec.lora.alpha": 16,
            "spec.lora.r": 8,
            "spec.lr": 0.1,
            "spec.optimizer": None,
            "summary.`train/steps`": 6,
            "summary.best.loss": 1.25,
        },
        {
            "run_id": ids["running"],
            "name": "running",
            "status": "running",
            "account": None,
            "attempts": 0,
            "last_step": None,
            "spend_committed_usd_micro": 0,
            "spend_presumed_usd_micro": 0,
            "cap_usd_micro": None,
            "tags.kind": "running",
            "tags.sweep": sweep,
            "spec.`warmup-steps`": None,
            "spec.layers": None,
            "spec.lora.alpha": None,
            "spec.lora.r": None,
            "spec.lr": 0.2,
            "spec.optimizer": None,
            "summary.`train/steps`": None,
            "summary.best.loss": None,
        },
        {
            "run_id": ids["plain"],
            "name": "plain",
            "status": "failed",
            "account": f"{sweep}-lab",
            "attempts": 1,
            "last_step": 0,
            "spend_committed_usd_micro": 0,
            "spend_presumed_usd_micro": 0,
            "cap_usd_micro": None,
            "tags.kind": "plain",
            "tags.sweep": sweep,
            "spec.`warmup-steps`": None,
            "spec.layers": None,
            "spec.lora.alpha": None,
            "spec.lora.r": None,
            "spec.lr": 0.3,
            "spec.optimizer": "adamw",
            "summary.`train/steps`": None,
            "summary.best.loss": None,
        },
    ]
    dtypes = {name: str(dtype) for name, dtype in frame.dtypes.items()}
    assert dtypes == {
        "run_id": "string",
        "name": "string",
        "status": "string",
        "account": "string",
        "attempts": "int64",
        "last_step": "Int64",
        "started": "datetime64[ns, UTC]",
        "finished": "datetime64[ns, UTC]",
        "spend_committed_usd_micro": "int64",
        "spend_presumed_usd_micro": "int64",
        "cap_usd_micro": "Int64",
        "tags.kind": "string",
        "tags.sweep": "string",
        "spec.`warmup-steps`": "Int64",
        "spec.layers": "string",
        "spec.lora.alpha": "Int64",
        "spec.lora.r": "Int64",
        "spec.lr": "float64",
        "spec.optimizer": "string",
        "summary.`train/steps`": "Int64",
        "summary.best.loss": "float64",
    }
    finished = frame.set_index("name")["finished"]
    started = frame.set_index("name")["started"]
    assert pandas.isna(finished["running"]) and not pandas.isna(started["running"])
    assert started["resumed"] <= finished["resumed"]


def test_limit_cuts_where_asked_and_max_rows_refuses_a_larger_search(ledger, monkeypatch) -> None:
    client, _, sweep, ids = ledger
    monkeypatch.setattr(frames_methods, "PAGE_SIZE_MAX", 1)
    where = f"tags.sweep = '{sweep}'"
    assert list(client.runs_frame(where, order_by="spec.lr", limit=2)["name"]) == ["resumed", "running"]
    assert list(client.runs_frame(where, max_rows=3)["run_id"]) == [ids["running"], ids["plain"], ids["resumed"]]
    with pytest.raises(FrameTooLarge, match="more than max_rows=2 rows"):
        client.runs_frame(where, max_rows=2)
    with pytest.raises(InvalidArgument):
        client.runs_frame("tags.sweep = ")


def test_a_series_frame_flags_superseded_steps_and_leaves_sparse_metrics_nan(ledger, monkeypatch) -> None:
    client, _, _, ids = ledger
    monkeypatch.setattr(frames_methods, "PAGE_SIZE_MAX", 2)  # several pages; eval/acc spans two
    frame = client.series_frame(ids["resumed"])
    assert list(frame.columns) == ["step", "attempt", "superseded", "eval/acc", "loss"]
    assert {name: str(dtype) for name, dtype in frame.dtypes.items()} == {
        "step": "int64",
        "attempt": "int64",
        "superseded": "bool",
        "eval/acc": "float64",
        "loss": "float64",
    }
    nan = math.nan
    expected = [
        (0, 1, False, nan, 5.0),
        (1, 1, False, 0.5, 4.0),
        (2, 1, False, nan, 3.0),
        (3, 1, True, 0.75, 2.5),
        (3, 2, False, nan, 2.0),
        (4, 1, True, nan, 2.25),
        (4, 2, False, nan, 1.5),
        (5, 2, False, nan, 1.0),
    ]
    assert same_rows(list(frame.itertuples(index=False, name=None)), expected)

    live = client.series_frame(ids["resumed"], ["loss"], include_superseded=False)
    assert list(live.columns) == ["step", "attempt", "superseded", "loss"]
    expected_live = [(0, 1, False, 5.0), (1, 1, False, 4.0), (2, 1, False, 3.0), (3, 2, False, 2.0)]
    expected_live += [(4, 2, False, 1.5), (5, 2, False, 1.0)]
    assert same_rows(list(live.itertuples(index=False, name=None)), expected_live)
    with pytest.raises(FrameTooLarge, match="max_rows=7"):
        client.series_frame(ids["resumed"], max_rows=7)


def same_rows(found: list[tuple[object, ...]], expected: list[tuple[object, ...]]) -> bool:
    """Rows equal value for value, NaN equal to NaN."""

    def key(row: tuple[object, ...]) -> tuple[object, ...]:
        return tuple("NaN" if isinstance(value, float) and math.isnan(value) else value for value in row)

    return [key(row) for row in found] == [key(row) for row in expected]


def test_the_asyncio_client_reads_the_same_frames(ledger) -> None:
    sync_client, address, sweep, ids = ledger

    async def read() -> tuple[pandas.DataFrame, pandas.DataFrame]:
        async with AsyncLedgerClient(address, principal="tests") as client:
            runs = await client.runs_frame(f"tags.sweep = '{sweep}'", order_by="spec.lr")
            return runs, await client.series_frame(ids["resumed"])

    runs, series = asyncio.run(read())
    pandas.testing.assert_frame_equal(runs, sync_client.runs_frame(f"tags.sweep = '{sweep}'", order_by="spec.lr"))
    pandas.testing.assert_frame_equal(series, sync_client.series_frame(ids["resumed"]))


MISSING_PANDAS = """
import sys
sys.modules["pandas"] = None
from clients import LedgerClient
LedgerClient("127.0.0.1:1").runs_frame()
"""


@pytest.mark.subprocess
def test_without_the_frames_extra_the_error_names_it() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", MISSING_PANDAS], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "clients.integrations.extras.MissingExtra: this needs the 'frames' extra (pandas is not installed):"
        " pip install -e '.[frames]' (from a checkout) or pip install 'trainledger[frames]'"
    )
