"""The dashboard in a real browser: Debian's Chromium (Playwright, sync API) against a real
`trainledger serve --http` subprocess, with runs recorded through clients.LedgerClient over gRPC.

One server per module. Its ledger holds:
- "sft-alpha" in the capped account "team": attempt 1 logs steps 0..79 (loss every step,
  eval_loss every 20 steps) and checkpoints step 49, then dies; attempt 2 resumes from step 49
  (so attempt 1's steps 50..79 are superseded) and logs steps 50..119, checkpointing step 99; one
  reservation committed, one released and one still pending;
- "sft-beta" (for compare): loss on steps 0..99;
- "sft-live" (cap $5): steps 0..9, then more appended while its page is open;
- the registry family "sft-alpha" with a version promoted through a passing gate;
and the tests of live updates open runs of their own ("sft-resumed", "sft-row"). A second server,
with authentication on, serves the test of logging in (fixture `guarded`).

Every page loads without a console error or a failed request, and its screenshot is written
under the test's tmp_path (the run page's also to $TRAINLEDGER_DOCS_SCREENSHOT when set, which is
how docs/dashboard-run.png is made). The counts of points, markers and holds checked are written
out here from the data above, never read from the code under test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.web.browser import (
    Served,
    Watch,
    attributes,
    chromium,
    missing_browser,
    serve,
    wait_ready,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, ViewportSize

    from clients import LedgerClient

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.browser, pytest.mark.subprocess]

if (reason := missing_browser()) is not None:
    pytest.skip(f"browser tests skipped: {reason}", allow_module_level=True)

LIVE_WAIT_MS = 2_000
VIEWPORT: ViewportSize = {"width": 1280, "height": 900}


def loss_at(step: int, attempt: int) -> float:
    return round(2.0 / (1 + step / 30) + 0.05 * attempt, 6)


def sparse(evals: list[int], steps: list[int], attempt: int) -> dict[str, list[float] | list[int]]:
    """A metric logged on some steps of a batch: its values and their index in the batch."""
    return {"values": [loss_at(s, attempt) + 0.1 for s in evals], "index": [steps.index(s) for s in evals]}


@dataclass
class Ledger:
    served: Served
    client: LedgerClient
    alpha: str
    beta: str
    live: str
    browser: Browser


def record(client: LedgerClient) -> tuple[str, str, str]:
    """The runs of the module docstring; their ids."""
    client.open_account(account="team", cap_usd_micro=200_000_000)
    alpha = client.open_run(
        run_key="alpha",
        name="sft-alpha",
        spec={"base_model": "llama-8b", "lr": 1e-4},
        cap_usd_micro=50_000_000,
        parent_account="team",
    ).state.run.run_id
    client.start_attempt(run_id=alpha, label="node-a")
    steps = list(range(80))
    evals = [0, 20, 40, 60]  # eval_loss only on these steps: an index column, no placeholders
    metrics = {"loss": [loss_at(s, 1) for s in steps], "eval_loss": sparse(evals, steps, 1)}
    client.append_steps(run_id=alpha, attempt=1, steps=steps, metrics=metrics)
    client.save_checkpoint(run_id=alpha, attempt=1, step=49, uri="s3://ckpt/alpha/49", backend="s3")
    client.start_attempt(run_id=alpha, label="node-b", resume_from_step=49)
    steps = list(range(50, 120))
    metrics = {"loss": [loss_at(s, 2) for s in steps], "eval_loss": sparse([60, 80, 100], steps, 2)}
    client.append_steps(run_id=alpha, attempt=2, steps=steps, metrics=metrics)
    client.save_checkpoint(run_id=alpha, attempt=2, step=99, uri="s3://ckpt/alpha/99", backend="s3")
    done = client.reserve(account=alpha, amount_usd_micro=20_000_000, attempt=2)
    client.commit(account=alpha, reservation_id=done.reservation_id, actual_usd_micro=18_500_000)
    dropped = client.reserve(account=alpha, amount_usd_micro=5_000_000, attempt=2)
    client.release(account=alpha, reservation_id=dropped.reservation_id, reason="call failed")
    client.reserve(account=alpha, amount_usd_micro=10_000_000, attempt=2)

    beta = client.open_run(run_key="beta", name="sft-beta", parent_account="team").state.run.run_id
    client.start_attempt(run_id=beta)
    steps = list(range(100))
    client.append_steps(run_id=beta, attempt=1, steps=steps, metrics={"loss": [loss_at(s, 3) for s in steps]})

    live = client.open_run(run_key="live", name="sft-live", cap_usd_micro=5_000_000).state.run.run_id
    client.start_attempt(run_id=live)
    steps = list(range(10))
    client.append_steps(run_id=live, attempt=1, steps=steps, metrics={"loss": [loss_at(s, 1) for s in steps]})

    client.register(
        family="sft-alpha",
        artifact_uri="s3://models/alpha/99",
        digest="sha256:" + "ab" * 32,
        source_run_id=alpha,
        source_step=99,
    )
    client.promote(
        family="sft-alpha",
        version=1,
        expected_current=0,
        verdict={"passed": True, "reason": "eval_loss 0.31 <= 0.35", "stats": {"eval_loss": 0.31}},
    )
    return alpha, beta, live


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    from clients import LedgerClient

    directory = tmp_path_factory.mktemp("dashboard")
    served = serve(directory / "ledger.db", directory)
    client = LedgerClient(served.grpc, principal="alice", timeout_s=10.0)
    try:
        client.wait_ready()
        alpha, beta, live = record(client)
        with chromium() as browser:
            yield Ledger(served, client, alpha, beta, live, browser)
    finally:
        client.close()
        served.stop()


@pytest.fixture
def page(ledger: Ledger) -> Iterator[tuple[Page, Watch]]:
    context = ledger.browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    watch = Watch().attach(page)
    try:
        yield page, watch
    finally:
        context.close()


PAGES = {
    "runs": "/",
    "run": "/runs/{alpha}",
    "compare": "/compare?run={alpha}&run={beta}&metric=loss",
    "accounts": "/accounts",
    "registry": "/registry",
    "family": "/registry/sft-alpha",
    "events": "/events",
}


@pytest.mark.parametrize("name", list(PAGES))
def test_each_page_loads_without_errors(ledger: Ledger, page: tuple[Page, Watch], name: str, tmp_path: Path) -> None:
    tab, watch = page
    url = ledger.served.base + PAGES[name].format(alpha=ledger.alpha, beta=ledger.beta)
    tab.goto(url, wait_until="load")
    wait_ready(tab)
    assert tab.locator(f'main[data-page="{name}"]').count() == 1
    assert [f for f in attributes(tab, "figure", "data-error") if f] == []
    assert tab.locator("nav a").count() >= 5
    tab.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
    if name == "run" and (target := os.environ.get("TRAINLEDGER_DOCS_SCREENSHOT")):
        tab.screenshot(path=target, full_page=False)
    assert watch.clear() == []


def run_page(ledger: Ledger, tab: Page, run_id: str) -> None:
    tab.goto(f"{ledger.served.base}/runs/{run_id}", wait_until="load")
    wait_ready(tab)


def test_the_run_chart_draws_live_superseded_and_sparse_series_with_markers(
    ledger: Ledger, page: tuple[Page, Watch]
) -> None:
    tab, watch = page
    run_page(ledger, tab, ledger.alpha)
    loss = 'figure.chart[data-metric="loss"]'
    # Attempt 1 kept steps 0..49, its steps 50..79 were superseded; attempt 2 logged 50..119.
    assert tab.locator(f'{loss} .legend-item.series.live[data-attempt="1"]').get_attribute("data-points") == "50"
    assert tab.locator(f'{loss} .legend-item.series.superseded[data-attempt="1"]').get_attribute("data-points") == "30"
    assert tab.locator(f'{loss} .legend-item.series.live[data-attempt="2"]').get_attribute("data-points") == "70"
    assert tab.locator(f"{loss} .legend-item.series").count() == 3
    assert tab.locator(f'{loss} .legend-item.series[data-metric="loss"]').count() == 3
    # The plot draws one uPlot series per legend line (after the x column).
    assert tab.eval_on_selector(loss, "(f) => f.plot.series.length") == 4
    # eval_loss is sparse: points, not lines; step 60 of attempt 1 superseded by attempt 2's.
    evals = 'figure.chart[data-metric="eval_loss"]'
    assert tab.locator(evals).get_attribute("data-sparse") == "true"
    assert tab.eval_on_selector(evals, "(f) => f.plot.series.slice(1).every((s) => s.points.show)")
    assert tab.locator(f'{evals} .legend-item.series.live[data-attempt="1"]').get_attribute("data-points") == "3"
    assert tab.locator(f'{evals} .legend-item.series.superseded[data-attempt="1"]').get_attribute("data-points") == "1"
    assert tab.locator(f'{evals} .legend-item.series.live[data-attempt="2"]').get_attribute("data-points") == "3"
    # Attempt 1 starts at its first step, attempt 2 after the checkpoint it resumed from.
    assert attributes(tab, f"{loss} .marker.attempt", "data-step") == ["0", "50"]
    assert sorted(attributes(tab, f"{loss} .marker.checkpoint", "data-step"), key=int) == ["49", "99"]
    assert tab.locator(loss).get_attribute("data-last-step") == "119"
    assert tab.locator('[data-field="last_step"]').first.inner_text().strip() == "119"
    assert watch.clear() == []


def test_the_spend_chart_shows_committed_spend_the_cap_and_the_pending_hold(
    ledger: Ledger, page: tuple[Page, Watch]
) -> None:
    tab, watch = page
    run_page(ledger, tab, ledger.alpha)
    spend = "figure.spend-chart"
    assert tab.locator(f"{spend} .legend-item").all_inner_texts() == [
        "committed",
        "committed + held",
        "cap $50.00",
    ]
    # $18.50 committed and $10 held: the $50 cap is in range, drawn as a line.
    assert tab.locator(spend).get_attribute("data-cap-shown") == "line"
    # The last point of each line: the committed total, then with the pending hold on top.
    assert tab.eval_on_selector(spend, "(f) => f.plot.data.slice(1).map((c) => c[c.length - 1])") == [
        18_500_000,
        28_500_000,
    ]
    assert attributes(tab, "table.holds tbody tr", "data-state") == ["pending", "released", "committed"]
    totals = tab.locator(f"{spend} .totals").inner_text()
    assert "committed $18.50" in totals and "pending $10.00" in totals and "cap $50.00" in totals
    assert watch.clear() == []


def test_hover_reads_out_the_nearest_point_and_a_dragged_range_zooms_in(
    ledger: Ledger, page: tuple[Page, Watch]
) -> None:
    tab, watch = page
    run_page(ledger, tab, ledger.alpha)
    figure = tab.locator('figure.chart[data-metric="loss"]')
    box = tab.locator('figure.chart[data-metric="loss"] .u-over').bounding_box()
    assert box is not None
    tab.mouse.move(box["x"] + box["width"] - 0.5, box["y"] + box["height"] / 2)
    assert figure.locator(".readout").inner_text().startswith("step 119 · loss ")
    # Drag over the last quarter of the plot: only later steps of attempt 2 remain, refetched.
    tab.mouse.move(box["x"] + box["width"] * 0.75, box["y"] + 20)
    tab.mouse.down()
    tab.mouse.move(box["x"] + box["width"] * 0.95, box["y"] + 20, steps=5)
    tab.mouse.up()
    tab.wait_for_function(
        "(f) => f.classList.contains('zoomed') && !f.hasAttribute('aria-busy')", arg=figure.element_handle()
    )
    assert figure.locator(".legend-item.series.superseded").count() == 0
    zoomed = int(figure.locator('.legend-item.series.live[data-attempt="2"]').get_attribute("data-points") or 0)
    assert 15 < zoomed < 35  # about steps 89..113 of 0..119
    # The run's other chart shows the same range.
    evals = tab.locator('figure.chart[data-metric="eval_loss"]')
    zoomed_and_loaded = "(f) => f.classList.contains('zoomed') && !f.hasAttribute('aria-busy')"
    tab.wait_for_function(zoomed_and_loaded, arg=evals.element_handle())
    assert evals.get_attribute("data-x-min") == figure.get_attribute("data-x-min")
    assert evals.get_attribute("data-x-max") == figure.get_attribute("data-x-max")
    figure.locator(".u-over").dblclick()
    tab.wait_for_function(
        "(f) => !f.classList.contains('zoomed') && !f.hasAttribute('aria-busy')", arg=figure.element_handle()
    )
    assert figure.locator('.legend-item.series.live[data-attempt="2"]').get_attribute("data-points") == "70"
    assert watch.clear() == []


def test_the_compare_page_overlays_two_runs(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    tab.goto(f"{ledger.served.base}/compare?run={ledger.alpha}&run={ledger.beta}&metric=loss", wait_until="load")
    wait_ready(tab)
    figure = "figure.chart.compare"
    assert attributes(tab, f"{figure} .legend-item.series", "data-run-id") == [ledger.alpha, ledger.beta]
    assert tab.locator(f'{figure} .legend-item[data-run-id="{ledger.beta}"]').get_attribute("data-points") == "100"
    # The alpha run's live line: attempt 1's kept steps 0..49 and attempt 2's 50..119.
    alpha = tab.locator(f'{figure} .legend-item[data-run-id="{ledger.alpha}"]')
    assert alpha.get_attribute("data-points") == "120"
    assert alpha.get_attribute("data-attempts") == "1,2"
    assert tab.locator(f"{figure} .legend-item").all_inner_texts() == ["sft-alpha", "sft-beta"]
    assert watch.clear() == []


def test_the_compare_legend_tells_runs_of_one_name_apart(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    # Runs that share a name (one spec swept over lr) are told apart by their ids' first characters.
    tab, watch = page
    client = ledger.client
    twins = []
    for key in ("twin-1", "twin-2"):
        run_id = client.open_run(run_key=key, name="sft-twin").state.run.run_id
        client.start_attempt(run_id=run_id)
        client.append_steps(run_id=run_id, attempt=1, steps=[0, 1], metrics={"loss": [1.0, 0.5]})
        twins.append(run_id)
    runs = "&".join(f"run={r}" for r in [*twins, ledger.beta])
    tab.goto(f"{ledger.served.base}/compare?{runs}&metric=loss", wait_until="load")
    wait_ready(tab)
    assert tab.locator("figure.chart.compare .legend-item").all_inner_texts() == [
        f"sft-twin {twins[0][:8]}",
        f"sft-twin {twins[1][:8]}",
        "sft-beta",
    ]
    assert watch.clear() == []


def test_a_step_a_checkpoint_and_spend_appear_on_the_open_run_page(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    run_page(ledger, tab, ledger.live)
    figure = tab.locator('figure.chart[data-metric="loss"]')
    assert figure.get_attribute("data-last-step") == "9"
    client = ledger.client
    client.append_steps(run_id=ledger.live, attempt=1, steps=[10, 11], metrics={"loss": [0.5, 0.49]})
    tab.wait_for_function(
        "() => document.querySelector('figure.chart[data-metric=\"loss\"]').dataset.lastStep === '11'",
        timeout=LIVE_WAIT_MS,
    )
    assert figure.locator('.legend-item.series.live[data-attempt="1"]').get_attribute("data-points") == "12"
    assert tab.locator('[data-field="last_step"]').first.inner_text().strip() == "11"
    client.save_checkpoint(run_id=ledger.live, attempt=1, step=11, uri="s3://ckpt/live/11", backend="s3")
    tab.wait_for_selector('figure.chart[data-metric="loss"] .marker.checkpoint[data-step="11"]', timeout=LIVE_WAIT_MS)
    hold = client.reserve(account=ledger.live, amount_usd_micro=1_000_000, attempt=1)
    client.commit(account=ledger.live, reservation_id=hold.reservation_id, actual_usd_micro=750_000)
    tab.wait_for_function(
        "() => [...document.querySelectorAll('[data-field=\"spend\"] .amount')]"
        ".some((c) => c.textContent.startsWith('$0.75'))",
        timeout=LIVE_WAIT_MS,
    )
    tab.wait_for_selector('table.holds tr[data-state="committed"]', timeout=LIVE_WAIT_MS)
    assert tab.locator("p.holds-empty").is_hidden()
    # Grown past twice the figure's width, the line is fetched again, downsampled by the server.
    steps = list(range(12, 1_512))
    client.append_steps(run_id=ledger.live, attempt=1, steps=steps, metrics={"loss": [1 / s for s in steps]})
    tab.wait_for_function(
        "() => { const f = document.querySelector('figure.chart[data-metric=\"loss\"]');"
        " const line = f.querySelector('.legend-item.series.live[data-attempt=\"1\"]');"
        " return f.dataset.lastStep === '1511' && !f.hasAttribute('aria-busy')"
        " && Number(line.dataset.points) <= 2 * f.plot.width; }",
        timeout=LIVE_WAIT_MS,
    )
    assert int(figure.locator('.legend-item.series.live[data-attempt="1"]').get_attribute("data-points") or 0) < 1_512
    assert watch.clear() == []


def test_a_new_attempt_redraws_the_open_run_page_with_the_superseded_steps(
    ledger: Ledger, page: tuple[Page, Watch]
) -> None:
    tab, watch = page
    client = ledger.client
    run_id = client.open_run(run_key="resumed", name="sft-resumed").state.run.run_id
    client.start_attempt(run_id=run_id)
    steps = list(range(10))
    client.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": [loss_at(s, 1) for s in steps]})
    client.save_checkpoint(run_id=run_id, attempt=1, step=4, uri="s3://ckpt/resumed/4", backend="s3")
    run_page(ledger, tab, run_id)
    loss = 'figure.chart[data-metric="loss"]'
    assert tab.locator(f"{loss} .legend-item.series.superseded").count() == 0
    # Attempt 2 resumes from step 4: attempt 1's steps 5..9 are superseded, its 0..4 kept.
    client.start_attempt(run_id=run_id, resume_from_step=4)
    client.append_steps(run_id=run_id, attempt=2, steps=[5, 6, 7], metrics={"loss": [0.3, 0.29, 0.28]})
    tab.wait_for_selector(
        f'{loss} .legend-item.series.superseded[data-attempt="1"][data-points="5"]', timeout=LIVE_WAIT_MS
    )
    tab.wait_for_selector(f'{loss} .legend-item.series.live[data-attempt="2"][data-points="3"]', timeout=LIVE_WAIT_MS)
    assert tab.locator(f'{loss} .legend-item.series.live[data-attempt="1"]').get_attribute("data-points") == "5"
    assert attributes(tab, f"{loss} .marker.attempt", "data-step") == ["0", "5"]
    assert tab.locator('[data-field="attempt"]').first.inner_text().strip() == "2"
    assert tab.locator(loss).get_attribute("data-last-step") == "7"
    assert tab.locator('[data-field="last_step"]').first.inner_text().strip() == "7"
    assert watch.clear() == []


def test_a_finished_run_near_its_cap_shows_a_warning_spend_bar(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    # $0.90 of a $1.00 cap: the run page's bar warns as the runs page's does, without a live event.
    tab, watch = page
    client = ledger.client
    run_id = client.open_run(run_key="near-cap", name="sft-near-cap", cap_usd_micro=1_000_000).state.run.run_id
    client.start_attempt(run_id=run_id)
    hold = client.reserve(account=run_id, amount_usd_micro=900_000, attempt=1)
    client.commit(account=run_id, reservation_id=hold.reservation_id, actual_usd_micro=900_000)
    run_page(ledger, tab, run_id)
    assert tab.locator('dd[data-field="spend"] .bar.warn').count() == 1
    assert tab.locator('dd[data-field="spend"] .bar.over').count() == 0
    assert watch.clear() == []


def test_the_runs_page_follows_a_run_live(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    client = ledger.client
    run_id = client.open_run(run_key="row", name="sft-row", cap_usd_micro=5_000_000).state.run.run_id
    client.start_attempt(run_id=run_id)
    client.append_steps(run_id=run_id, attempt=1, steps=[0, 1, 2], metrics={"loss": [1.0, 0.9, 0.8]})
    tab.goto(ledger.served.base + "/", wait_until="load")
    row = f'table.runs tr[data-run-id="{run_id}"]'
    assert tab.locator(f'{row} [data-field="last_step"]').inner_text().strip() == "2"
    client.append_steps(run_id=run_id, attempt=1, steps=[3], metrics={"loss": [0.7]})
    tab.wait_for_function(
        f"() => document.querySelector('{row} [data-field=\"last_step\"]').textContent.trim() === '3'",
        timeout=LIVE_WAIT_MS,
    )
    assert tab.locator(f'{row} [data-field="spend"] .bar .fill').get_attribute("style") == "width:0%"
    # $2 of the $5 cap: the bar fills to 40%, its text follows.
    hold = client.reserve(account=run_id, amount_usd_micro=2_000_000, attempt=1)
    client.commit(account=run_id, reservation_id=hold.reservation_id, actual_usd_micro=2_000_000)
    tab.wait_for_function(
        f"() => document.querySelector('{row} [data-field=\"spend\"] .fill').style.width === '40%'",
        timeout=LIVE_WAIT_MS,
    )
    assert tab.locator(f'{row} [data-field="spend"] .amount').inner_text() == "$2.00 of $5.00"
    assert tab.locator(f'{row} [data-field="spend"] .bar.over').count() == 0
    # A call that cost more than its hold commits past the cap: the bar fills and turns red.
    hold = client.reserve(account=run_id, amount_usd_micro=1_000_000, attempt=1)
    client.commit(account=run_id, reservation_id=hold.reservation_id, actual_usd_micro=4_000_000)
    tab.wait_for_selector(f'{row} [data-field="spend"] .bar.over', timeout=LIVE_WAIT_MS)
    assert tab.locator(f'{row} [data-field="spend"] .bar .fill').get_attribute("style") == "width: 100%;"
    assert tab.locator(f'{row} [data-field="spend"] .amount').inner_text() == "$6.00 of $5.00"
    # A run opened meanwhile gets a row on top, laid out as the server's.
    fresh = client.open_run(run_key="fresh", name="sft-fresh", cap_usd_micro=1_000_000).state.run.run_id
    client.start_attempt(run_id=fresh)
    client.append_steps(run_id=fresh, attempt=1, steps=[0], metrics={"loss": [1.0]})
    first = "table.runs tbody tr:first-child"
    tab.wait_for_selector(
        f'{first}[data-run-id="{fresh}"] td[data-field="last_step"]:text-is("0")', timeout=LIVE_WAIT_MS
    )
    assert tab.locator(f'{first} [data-field="name"] a').inner_text() == "sft-fresh"
    assert tab.locator(f'{first} [data-field="name"] a').get_attribute("href") == f"/runs/{fresh}"
    assert tab.locator(f'{first} [data-field="spend"] .amount').inner_text() == "$0.00 of $1.00"
    assert tab.locator(f"{first} td").count() == tab.locator(f"{row} td").count()
    assert watch.clear() == []


@dataclass
class Guarded:
    served: Served
    admin: LedgerClient
    team_token: str
    team_run: str
    lab_run: str


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guarded]:
    """A second server, with authentication on: an admin token records a run in the account
    "team" (loss on steps 0..19) and one in "lab"; an operator token is scoped to "team"."""
    from clients import LedgerClient
    from ledger import Ledger as LedgerCore

    directory = tmp_path_factory.mktemp("guarded")
    database = directory / "ledger.db"
    with closing(LedgerCore.open(str(database))) as core:  # before serving: the server holds the file
        for account in ("team", "lab"):
            core.open_account(account=account, cap_usd_micro=10_000_000)
        admin_token = core.issue_token(holder="root", role="admin").bearer
        team_token = core.issue_token(holder="ops", role="operator", account="team").bearer
    served = serve(database, directory, "--auth")
    admin = LedgerClient(served.grpc, token=admin_token, timeout_s=10.0)
    try:
        admin.wait_ready()
        runs = []
        for account in ("team", "lab"):
            run_id = admin.open_run(run_key=account, name=f"{account}-run", parent_account=account).state.run.run_id
            admin.start_attempt(run_id=run_id)
            steps = list(range(20))
            admin.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": [loss_at(s, 1) for s in steps]})
            runs.append(run_id)
        yield Guarded(served, admin, team_token, runs[0], runs[1])
    finally:
        admin.close()
        served.stop()


def test_with_authentication_the_dashboard_asks_for_a_token_and_shows_what_it_may_read(
    ledger: Ledger, guarded: Guarded, tmp_path: Path
) -> None:
    context = ledger.browser.new_context(viewport=VIEWPORT)
    try:
        tab = context.new_page()
        watch = Watch().attach(tab)
        tab.goto(f"{guarded.served.base}/runs/{guarded.team_run}", wait_until="load")
        assert tab.locator('main[data-page="login"]').count() == 1
        watch.clear()  # the redirect from the page itself
        tab.fill('input[name="token"]', guarded.team_token)
        tab.click('form.login button[type="submit"]')
        tab.wait_for_url(f"**/runs/{guarded.team_run}")
        wait_ready(tab)
        loss = 'figure.chart[data-metric="loss"]'
        assert tab.locator(f'{loss} .legend-item.series.live[data-attempt="1"]').get_attribute("data-points") == "20"
        # The live stream rides on the same cookie.
        guarded.admin.append_steps(run_id=guarded.team_run, attempt=1, steps=[20], metrics={"loss": [0.2]})
        tab.wait_for_function(f"() => document.querySelector('{loss}').dataset.lastStep === '20'", timeout=LIVE_WAIT_MS)
        tab.goto(guarded.served.base + "/", wait_until="load")
        assert attributes(tab, "table.runs tr[data-run-id]", "data-run-id") == [guarded.team_run]
        tab.screenshot(path=str(tmp_path / "runs-scoped.png"), full_page=True)
        assert watch.clear() == []
    finally:
        context.close()


def test_the_readme_screenshot_is_a_small_png() -> None:
    """docs/dashboard-run.png, shown in the README, stays a small PNG."""
    data = (Path(__file__).resolve().parents[2] / "docs" / "dashboard-run.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) < 300_000


def test_a_planned_run_shows_progress_scores_datasets_and_leaves_the_list_when_retracted(
    ledger: Ledger, page: tuple[Page, Watch], tmp_path: Path
) -> None:
    """ "sft-planned": 200 steps planned, eval_loss (lower is better) its objective, steps 0..49
    recorded, checkpoints at step 20 (eval_loss 0.8) and 40 (0.6), a train dataset. Its page shows
    the progress (25%), which follows the steps as they arrive (50%), the best checkpoint, the
    scores and the dataset; retracted, its row leaves the open runs page and its page says so."""
    tab, watch = page
    client = ledger.client
    run_id = client.open_run(
        run_key="planned", name="sft-planned", max_steps=200, objective=("eval_loss", "min")
    ).state.run.run_id
    client.start_attempt(run_id=run_id)
    steps = list(range(50))
    client.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": [loss_at(s, 1) for s in steps]})
    for step, score in ((20, 0.8), (40, 0.6)):
        client.save_checkpoint(
            run_id=run_id,
            attempt=1,
            step=step,
            uri=f"s3://ckpt/planned/{step}",
            backend="s3",
            scores={"eval_loss": score},
        )
    recorded = client.record_dataset(
        run_id=run_id,
        role="train",
        digest="sha256:" + "7c" * 32,
        format="chat",
        rows=12_000,
        tokens=3_400_000,
        source_uri="s3://data/chat.jsonl",
        report={"gate": "passed"},
    )
    client.get_run_state(run_id=run_id, min_position=recorded.position)  # projected before the page reads it
    run_page(ledger, tab, run_id)
    progress = 'dd[data-field="progress"]'
    assert tab.locator(f"{progress} .progress-text").inner_text().startswith("step 49 of 200 (24.5%)")
    assert tab.locator(f"{progress} .fill").get_attribute("style") == "width:24%"
    assert tab.locator('[data-field="best"]').inner_text() == "step 40, attempt 1 (eval_loss=0.6)"
    states = tab.locator('table.checkpoints [data-field="checkpoint_state"]').all_inner_texts()
    assert states == ["live", "live (resume), best"]
    assert tab.locator('table.checkpoints [data-field="scores"]').all_inner_texts() == [
        "eval_loss=0.8",
        "eval_loss=0.6",
    ]
    assert tab.locator('table.datasets [data-field="verdict"]').all_inner_texts() == ["passed"]
    steps = list(range(50, 100))
    client.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": [loss_at(s, 1) for s in steps]})
    tab.wait_for_function(
        f"() => document.querySelector('{progress} .fill').style.width === '49%'", timeout=LIVE_WAIT_MS
    )
    assert tab.locator(f"{progress} .progress-text").inner_text().startswith("step 99 of 200 (49.5%)")
    tab.screenshot(path=str(tmp_path / "run-planned.png"), full_page=True)
    if target := os.environ.get("TRAINLEDGER_PLANNED_SCREENSHOT"):
        tab.screenshot(path=target, full_page=True)

    tab.goto(ledger.served.base + "/", wait_until="load")
    row = f'table.runs tr[data-run-id="{run_id}"]'
    assert tab.locator(f'{row} [data-field="progress"] .amount').inner_text() == "49%"
    client.retract_run(run_id=run_id, reason="eval rows leaked into train")
    tab.wait_for_selector(row, state="detached", timeout=LIVE_WAIT_MS)
    run_page(ledger, tab, run_id)
    assert "eval rows leaked into train" in tab.locator("p.retracted").inner_text()
    assert watch.clear() == []


def test_the_runs_page_search_box_finds_runs_and_shows_a_refusal(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    client = ledger.client
    tagged = client.open_run(run_key="searched", name="sft-searched").state.run.run_id
    client.start_attempt(run_id=tagged)
    client.set_tags(tagged, {"team": "vision"})
    receipt = client.set_tags(ledger.beta, {"team": "audio"})
    client.get_run_state(run_id=ledger.beta, min_position=receipt.position)
    # Each page loads the charts' scripts after "load": leaving before they came aborts them.
    scripts_loaded = "() => globalThis.uPlot !== undefined"
    tab.goto(ledger.served.base + "/", wait_until="load")
    tab.wait_for_function(scripts_loaded)
    tab.fill('form.filters input[name="where"]', "tags.team = 'vision'")
    tab.click('form.filters button[type="submit"]')
    tab.wait_for_load_state("load")
    tab.wait_for_function(scripts_loaded)
    listed = tab.locator("table.runs tbody tr[data-run-id]")
    assert [listed.nth(i).get_attribute("data-run-id") for i in range(listed.count())] == [tagged]
    assert tab.input_value('form.filters input[name="where"]') == "tags.team = 'vision'"
    # A run opened while a search is shown gets no row (the search never turns into every run);
    # the listed run's step, recorded after it, shows the page has heard of it.
    opened = client.open_run(run_key="opened-meanwhile", name="sft-meanwhile").state.run.run_id
    client.append_steps(run_id=tagged, attempt=1, steps=[0], metrics={"loss": [1.0]})
    row = f'table.runs tr[data-run-id="{tagged}"]'
    tab.wait_for_function(
        f"() => document.querySelector('{row} [data-field=\"last_step\"]').textContent.trim() === '0'",
        timeout=LIVE_WAIT_MS,
    )
    assert tab.locator(f'table.runs tr[data-run-id="{opened}"]').count() == 0
    tab.fill('form.filters input[name="where"]', "tags.team = ")
    tab.click('form.filters button[type="submit"]')
    tab.wait_for_load_state("load")
    assert "at position 13" in tab.locator("#search-error").inner_text()
    assert tab.locator("table.runs").count() == 0
    assert tab.input_value('form.filters input[name="where"]') == "tags.team = "
    # The refused search answers 400: the one failed request the page may show.
    assert [problem for problem in watch.clear() if "400" not in problem] == []
