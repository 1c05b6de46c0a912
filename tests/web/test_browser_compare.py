"""Search and compare in a real browser (Chromium through Playwright) against a real `trainledger
serve --http` subprocess, with runs recorded through clients.LedgerClient over gRPC: runs picked by
name from a search, several metrics at once, runs of one name told apart, the diff table with its
identical keys folded, the spend and best checkpoint of each, and a compared run that keeps logging
drawn without a reload.

The expected values are written out here from the data each test records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from tests.web.browser import Served, Watch, attributes, chromium, missing_browser, serve, wait_ready

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from clients import LedgerClient

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.browser, pytest.mark.subprocess]

if (reason := missing_browser()) is not None:
    pytest.skip(f"browser tests skipped: {reason}", allow_module_level=True)

LIVE_WAIT_MS = 5_000


@dataclass
class Ledger:
    served: Served
    client: LedgerClient
    browser: Browser
    sweeps: list[str]
    base: str


def _record(client: LedgerClient) -> tuple[list[str], str]:
    """Two runs named "lr-sweep" (lr 0.001 and 0.0003; the first scored and spent $12.50) and one
    named "base"; each logs loss on steps 0..9 and eval_loss on steps 4 and 9."""
    runs = []
    for n, (key, name, lr) in enumerate(
        (("sweep-1", "lr-sweep", 0.001), ("sweep-2", "lr-sweep", 0.0003), ("base", "base", 0.01))
    ):
        spec = {"lr": lr, "model": "tiny", "data": {"rows": 1000}}
        run_id = client.open_run(run_key=key, name=name, spec=spec, objective=("eval_loss", "min")).state.run.run_id
        client.start_attempt(run_id=run_id)
        scale = 1 + n / 4  # each run's lines apart from the others'
        client.append_steps(
            run_id=run_id,
            attempt=1,
            steps=list(range(10)),
            metrics={
                "loss": [scale / (1 + s) for s in range(10)],
                "eval_loss": {"values": [0.8 * scale, 0.6 * scale], "index": [4, 9]},
            },
        )
        runs.append(run_id)
    client.save_checkpoint(
        run_id=runs[0], attempt=1, step=9, uri="s3://ck/1/9", backend="s3", scores={"eval_loss": 0.6}
    )
    client.reserve(account=runs[0], reservation_id="call-1", amount_usd_micro=20_000_000)
    client.commit(account=runs[0], reservation_id="call-1", actual_usd_micro=12_500_000)
    return runs[:2], runs[2]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    from clients import LedgerClient

    directory = tmp_path_factory.mktemp("dashboard-compare")
    served = serve(directory / "ledger.db", directory)
    client = LedgerClient(served.grpc, principal="alice", timeout_s=10.0)
    try:
        client.wait_ready()
        sweeps, base = _record(client)
        with chromium() as browser:
            yield Ledger(served, client, browser, sweeps, base)
    finally:
        client.close()
        served.stop()


@pytest.fixture
def page(ledger: Ledger) -> Iterator[tuple[Page, Watch]]:
    context = ledger.browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    watch = Watch().attach(tab)
    try:
        yield tab, watch
    finally:
        context.close()


def _compare_url(ledger: Ledger, runs: list[str], metrics: list[str]) -> str:
    query = "&".join([*(f"run={r}" for r in runs), *(f"metric={m}" for m in metrics)])
    return f"{ledger.served.base}/compare?{query}"


def test_runs_picked_by_name_from_a_search_are_compared_on_several_metrics(
    ledger: Ledger, page: tuple[Page, Watch]
) -> None:
    tab, watch = page
    one, two = ledger.sweeps
    tab.goto(f"{ledger.served.base}/?where=spec.lr%20%3C%200.005", wait_until="load")
    # The boxes are named as people name the runs: the two of one name by their ids' first characters.
    tab.get_by_label(f"compare lr-sweep {one[:8]}").check()
    tab.get_by_label(f"compare lr-sweep {two[:8]}").check()
    tab.get_by_role("button", name="compare selected").click()
    tab.wait_for_load_state("load")
    wait_ready(tab)
    # In the list's order: newest first.
    assert [label.strip() for label in tab.locator("form.compare label.run").all_inner_texts()] == [
        f"lr-sweep {two[:8]}",
        f"lr-sweep {one[:8]}",
    ]
    # The metrics offered are the runs' own; loss is drawn first, then eval_loss is ticked too.
    assert attributes(tab, "fieldset.metrics input", "value") == ["eval_loss", "loss"]
    assert attributes(tab, "figure.chart.compare", "data-metric") == ["loss"]
    tab.get_by_label("eval_loss").check()
    tab.get_by_role("button", name="compare", exact=True).click()
    tab.wait_for_load_state("load")
    wait_ready(tab)
    assert attributes(tab, "figure.chart.compare", "data-metric") == ["eval_loss", "loss"]
    for metric, points in (("eval_loss", "2"), ("loss", "10")):
        figure = f'figure.chart.compare[data-metric="{metric}"]'
        assert tab.locator(f"{figure} .legend-item").all_inner_texts() == [
            f"lr-sweep {two[:8]}",
            f"lr-sweep {one[:8]}",
        ]
        assert attributes(tab, f"{figure} .legend-item", "data-points") == [points, points]
    assert watch.clear() == []


def test_the_diff_table_folds_identical_keys_and_shows_spend_and_best_checkpoint(
    ledger: Ledger, page: tuple[Page, Watch]
) -> None:
    tab, watch = page
    one, two = ledger.sweeps
    tab.goto(_compare_url(ledger, [one, two, ledger.base], ["loss"]), wait_until="load")
    wait_ready(tab)
    rows = tab.locator("section.diff table.diff tbody tr")
    assert [row.split("\t") for row in rows.all_inner_texts()] == [
        ["spec.lr", "0.001", "0.0003", "0.01"],
        ["spend", "$12.50", "$0.00", "$0.00"],
        ["best checkpoint", "step 9 (eval_loss=0.6)", "-", "-"],
    ]
    folded = tab.locator("details.identical")
    assert folded.locator("summary").inner_text() == "2 identical keys"
    assert not folded.locator("table.same").is_visible()
    folded.locator("summary").click()
    assert [row.split("\t") for row in folded.locator("tbody tr").all_inner_texts()] == [
        ["spec.data.rows", "1000", "1000", "1000"],
        ["spec.model", "tiny", "tiny", "tiny"],
    ]
    assert tab.locator("section[data-live=verdicts] tbody tr td:first-child").all_inner_texts() == [
        f"lr-sweep {one[:8]}",
        f"lr-sweep {two[:8]}",
        "base",
    ]
    assert watch.clear() == []


def test_a_compared_run_that_keeps_logging_is_drawn_without_a_reload(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    client = ledger.client
    live = client.open_run(run_key="live-compare", name="live", spec={"lr": 0.1}).state.run.run_id
    client.start_attempt(run_id=live)
    client.append_steps(run_id=live, attempt=1, steps=[0, 1], metrics={"loss": [1.0, 0.9]})
    tab.goto(_compare_url(ledger, [live, ledger.base], ["loss"]), wait_until="load")
    wait_ready(tab)
    legend = f'figure.chart.compare .legend-item[data-run-id="{live}"]'
    assert tab.locator(legend).get_attribute("data-points") == "2"
    tab.evaluate("() => (window.__kept = true)")  # gone if the page were loaded again

    client.append_steps(run_id=live, attempt=1, steps=[2, 3, 4], metrics={"loss": [0.8, 0.7, 0.6]})
    client.note_summary(run_id=live, summary={"eval_loss": 0.42})
    tab.wait_for_function(f"() => document.querySelector('{legend}')?.dataset.points === '5'", timeout=LIVE_WAIT_MS)
    tab.wait_for_function(
        "() => document.querySelector('section.diff tr[data-key=\"summary.eval_loss\"]') !== null",
        timeout=LIVE_WAIT_MS,
    )
    assert tab.locator('section.diff tr[data-key="summary.eval_loss"]').inner_text().split("\t") == [
        "summary.eval_loss",
        "0.42",
        "-",
    ]
    assert tab.evaluate("() => window.__kept") is True
    assert watch.clear() == []


def test_an_eleventh_run_is_refused_and_a_metric_typo_is_said(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    client = ledger.client
    for n in range(11):
        client.open_run(run_key=f"many-{n}", name=f"many-{n:02d}")
    tab.goto(f"{ledger.served.base}/?name=many-", wait_until="load")
    boxes = tab.locator('table.runs input[name="run"]')
    assert boxes.count() == 11
    for n in range(10):
        boxes.nth(n).check()
    assert tab.locator("#compare-limit").is_hidden()
    boxes.nth(10).click()
    assert not boxes.nth(10).is_checked()
    assert tab.locator("#compare-limit").inner_text() == "Compare takes at most 10 runs at once: untick one first."
    assert tab.locator('table.runs input[name="run"]:checked').count() == 10

    tab.goto(_compare_url(ledger, [ledger.base, "no-such-run"], ["loss", "lsos"]), wait_until="load")
    wait_ready(tab)
    assert tab.locator("#compare-refused li").all_inner_texts() == [
        "no-such-run: no run no-such-run",
        "no compared run has the metric 'lsos'",
    ]
    assert attributes(tab, "figure.chart.compare", "data-metric") == ["loss"]
    assert watch.clear() == []
