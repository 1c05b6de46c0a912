"""The chart view's rollup is the same whether its batches are projected one per chunk or all in
one chunk (ledger.views.series.rollup): buckets fed by several batches merge alike."""

from __future__ import annotations

from typing import Any

import pytest

from ledger import Ledger


def _record(ledger: Ledger, run_id: str) -> list[int]:
    """Three batches of one attempt; the second and third share the bucket of steps 64 to 127."""
    positions = []
    for steps, values in (([5, 6], [2.0, 1.0]), ([70, 100], [1.0, 3.0]), ([101, 130], [1.0, 0.5])):
        receipt = ledger.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": values})
        positions.append(receipt.position)
        if ledger.projector._thread is not None:
            ledger.wait(receipt.position, 10)
    return positions


def _rollup(ledger: Ledger, run_id: str) -> list[tuple[Any, ...]]:
    return ledger.views.query.rows(
        "SELECT metric, level, bucket, attempt, count, first_step, first_value, last_step, last_value, min_step,"
        " min_value, max_step, max_value, position FROM view_series_rollup WHERE run_id = ?"
        " ORDER BY metric, level, bucket",
        (run_id,),
    )


def _expected(p1: int, p2: int, p3: int) -> list[tuple[Any, ...]]:
    whole = (1, 6, 5, 0.0, 130, 0.0, 5, 0.0, 5, 0.0, p3)
    loss = (1, 6, 5, 2.0, 130, 0.5, 130, 0.5, 100, 3.0, p3)
    del p2  # The second batch feeds only buckets that the third also feeds.
    return [
        ("", 32768, 0, *whole),
        ("loss", 64, 0, 1, 2, 5, 2.0, 6, 1.0, 6, 1.0, 5, 2.0, p1),
        # Steps 70, 100 and 101: the least value, 1.0, is at 70 and at 101: the earlier step is kept.
        ("loss", 64, 1, 1, 3, 70, 1.0, 101, 1.0, 70, 1.0, 100, 3.0, p3),
        ("loss", 64, 2, 1, 1, 130, 0.5, 130, 0.5, 130, 0.5, 130, 0.5, p3),
        ("loss", 512, 0, *loss),
        ("loss", 4096, 0, *loss),
        ("loss", 32768, 0, *loss),
    ]


@pytest.mark.parametrize("live", [True, False], ids=["one-batch-per-chunk", "one-chunk"])
def test_batches_roll_up_alike_in_any_chunks(sqlite_database: str, live: bool) -> None:
    ledger = Ledger.open(sqlite_database, project=live)
    try:
        run_id = ledger.open_run(run_key="rollup").run_id
        ledger.start_attempt(run_id=run_id)
        p1, p2, p3 = _record(ledger, run_id)
        if not live:
            ledger.projector.catch_up()
        assert _rollup(ledger, run_id) == _expected(p1, p2, p3)
    finally:
        ledger.close()
