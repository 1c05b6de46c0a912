"""The dashboard's pages in a real browser (Chromium through Playwright) against a real
`trainledger serve --http` subprocess, with runs recorded through clients.LedgerClient over gRPC:
every panel of an open run page follows the run without a reload, and the small things a reader
trusts at a glance (progress text, empty tables, the accounts listed, the events page, the nav on a
narrow screen).

The expected values are written out here from the data each test records.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.web.browser import Served, Watch, chromium, missing_browser, serve, wait_ready

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


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    from clients import LedgerClient

    directory = tmp_path_factory.mktemp("dashboard-live")
    served = serve(directory / "ledger.db", directory)
    client = LedgerClient(served.grpc, principal="alice", timeout_s=10.0)
    try:
        client.wait_ready()
        with chromium() as browser:
            yield Ledger(served, client, browser)
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


def _text(tab: Page, selector: str) -> str:
    return tab.locator(selector).first.inner_text().strip()


def _fact(tab: Page, name: str) -> str:
    """The text of the run page's fact `name` (the <dd> after its <dt>)."""
    return str(
        tab.evaluate(
            "(name) => { const dt = [...document.querySelectorAll('dl.facts dt')]"
            ".find((d) => d.textContent.trim() === name);"
            " return dt ? dt.nextElementSibling.textContent.trim() : null; }",
            name,
        )
    )


def test_every_panel_of_an_open_run_page_follows_the_run_to_its_end(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    client = ledger.client
    run_id = client.open_run(
        run_key="panels", name="sft-panels", max_steps=300, objective=("loss", "min")
    ).state.run.run_id
    client.start_attempt(run_id=run_id)
    steps = list(range(120))
    client.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": [1 / (1 + s) for s in steps]})
    client.save_checkpoint(
        run_id=run_id, attempt=1, step=99, uri="s3://ckpt/panels/99", backend="s3", scores={"loss": 0.5}
    )
    tab.goto(f"{ledger.served.base}/runs/{run_id}", wait_until="load")
    wait_ready(tab)
    assert _fact(tab, "finished") == "-"
    assert _text(tab, '[data-field="best"]').startswith("step 99,")
    assert tab.locator("table.checkpoints tbody tr").count() == 1

    # Over the wire, while the page stays open: more steps, two checkpoints, the end of the run.
    steps = list(range(120, 300))
    client.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": [1 / (1 + s) for s in steps]})
    client.save_checkpoint(
        run_id=run_id, attempt=1, step=199, uri="s3://ckpt/panels/199", backend="s3", scores={"loss": 0.2}
    )
    client.save_checkpoint(
        run_id=run_id, attempt=1, step=299, uri="s3://ckpt/panels/299", backend="s3", scores={"loss": 0.1}
    )
    client.finish_run(run_id=run_id, attempt=1, status="done")

    tab.wait_for_function(
        "() => document.querySelector('[data-field=\"status\"]').dataset.status === 'done'", timeout=LIVE_WAIT_MS
    )
    tab.wait_for_function(
        "() => [...document.querySelectorAll('dl.facts dt')].find((d) => d.textContent.trim() === 'finished')"
        ".nextElementSibling.querySelector('time') !== null",
        timeout=LIVE_WAIT_MS,
    )
    tab.wait_for_function(
        "() => document.querySelectorAll('table.checkpoints tbody tr').length === 3", timeout=LIVE_WAIT_MS
    )
    assert _fact(tab, "finished").endswith("UTC")
    assert _text(tab, '[data-field="best"]').startswith("step 299,")
    loss = tab.locator('table.metrics tr[data-metric="loss"] td')
    assert loss.nth(1).inner_text() == "300"  # values
    assert loss.nth(3).inner_text() == "299"  # last step
    saved = tab.eval_on_selector_all("table.checkpoints tbody tr", "(rows) => rows.map((r) => r.dataset.step)")
    assert sorted(int(step) for step in saved) == [99, 199, 299]
    assert tab.locator('table.attempts tr[data-attempt="1"] td').nth(4).inner_text() == "yes"
    assert _text(tab, '[data-field="last_step"]') == "299"
    assert watch.clear() == []


def shot(tmp_path: Path, name: str) -> str:
    """Where a test's screenshot goes: TRAINLEDGER_SHOTS (a folder) when set, else the test's own."""
    return str(Path(os.environ.get("TRAINLEDGER_SHOTS") or tmp_path) / name)


def test_the_children_panel_shows_a_run_started_from_the_open_run(
    ledger: Ledger, page: tuple[Page, Watch], tmp_path: Path
) -> None:
    """A run opened from the open run's checkpoint appears in its Children panel without a
    reload; retracted since, it is marked on the next page load."""
    tab, watch = page
    client = ledger.client
    run_id = client.open_run(run_key="parent-live", name="sft-parent").state.run.run_id
    client.start_attempt(run_id=run_id)
    client.save_checkpoint(run_id=run_id, attempt=1, step=0, uri="s3://ckpt/parent/0", backend="s3")
    tab.goto(f"{ledger.served.base}/runs/{run_id}", wait_until="load")
    wait_ready(tab)
    assert tab.locator('section[data-live="children"]').is_hidden()
    child = client.open_run(
        run_key="child-live", name="sft-child", source_checkpoint={"run_id": run_id, "step": 0}
    ).state.run.run_id
    tab.wait_for_function(
        "() => document.querySelectorAll('section[data-live=\"children\"] tbody tr').length === 1",
        timeout=LIVE_WAIT_MS,
    )
    assert tab.locator('section[data-live="children"]').is_visible()
    assert tab.locator(f'section[data-live="children"] tr[data-run-id="{child}"] a').inner_text() == "sft-child"
    client.retract_run(run_id=child, reason="bad data")
    tab.reload(wait_until="load")
    assert tab.locator(f'tr[data-run-id="{child}"] .tag.retracted').inner_text() == "retracted"
    tab.locator('section[data-live="children"]').screenshot(path=shot(tmp_path, "run-children.png"))
    assert watch.clear() == []


def test_a_long_runs_holds_fold_the_older_and_a_new_hold_comes_first_live(
    ledger: Ledger, page: tuple[Page, Watch], tmp_path: Path
) -> None:
    """30 settled holds: the table shows the newest 20 under a count line, the 10 older folded;
    a hold reserved while the page is open appears first, without a reload."""
    tab, watch = page
    client = ledger.client
    run_id = client.open_run(run_key="many-holds", name="sft-many-holds").state.run.run_id
    client.start_attempt(run_id=run_id)
    for step in range(30):
        client.reserve(account=run_id, reservation_id=f"h{step}", amount_usd_micro=10_000, attempt=1)
        client.commit(account=run_id, reservation_id=f"h{step}", actual_usd_micro=10_000)
    tab.goto(f"{ledger.served.base}/runs/{run_id}", wait_until="load")
    wait_ready(tab)
    assert tab.locator("table.holds tbody tr").count() == 20
    assert _text(tab, "p.holds-count") == "30 holds, 0 pending: the pending and the newest 20 shown"
    folded = tab.locator("details.holds-more")
    assert folded.locator("summary").inner_text() == "10 older holds"
    assert not folded.locator("table.holds-older").is_visible()
    folded.locator("summary").click()
    assert folded.locator("table.holds-older tbody tr").count() == 10
    client.reserve(account=run_id, reservation_id="live", amount_usd_micro=50_000, attempt=1)
    tab.wait_for_function(
        "() => document.querySelector('table.holds tbody tr')?.dataset.state === 'pending'", timeout=LIVE_WAIT_MS
    )
    assert _text(tab, "p.holds-count") == "31 holds, 1 pending: the pending and the newest 20 shown"
    assert tab.locator("table.holds tbody tr").count() == 21
    assert folded.locator("table.holds-older").is_visible()  # Still open, as the reader left it.
    box = tab.locator("table.holds").bounding_box()
    assert box is not None and box["height"] < 1_200  # 21 rows, not 31
    tab.locator("h3:text('Holds')").scroll_into_view_if_needed()
    tab.screenshot(path=shot(tmp_path, "run-holds.png"), full_page=False)
    assert watch.clear() == []


def test_the_runs_page_tells_runs_of_one_name_apart_and_has_room_for_a_query(
    ledger: Ledger, page: tuple[Page, Watch], tmp_path: Path
) -> None:
    """Runs of one name: a tags column and the spec keys that differ; the search box takes a
    real query's width; a run opened while the page is open gets a row of as many cells."""
    tab, watch = page
    client = ledger.client
    for lr, tags in ((0.001, {"team": "vision", "seed": "1"}), (0.003, {"team": "vision", "seed": "2"})):
        run_id = client.open_run(run_key=f"cols-{lr}", name="sft-cols", spec={"lr": lr, "batch": 8}).state.run.run_id
        client.set_tags(run_id=run_id, tags=tags)
    tab.goto(f"{ledger.served.base}/?name=sft-cols", wait_until="load")
    wait_ready(tab)
    headers = tab.locator("table.runs thead th").all_inner_texts()
    assert headers[-2:] == ["tags", "spec.lr"]
    assert tab.locator('table.runs td[data-key="spec.lr"]').all_inner_texts() == ["0.003", "0.001"]
    search = tab.locator('input[name="where"]').bounding_box()
    assert search is not None and search["width"] >= 400
    tab.screenshot(path=shot(tmp_path, "runs-columns.png"), full_page=False)
    tab.goto(f"{ledger.served.base}/", wait_until="load")  # New runs are added to the unfiltered list.
    wait_ready(tab)
    headers = tab.locator("table.runs thead th").all_inner_texts()
    client.open_run(run_key="cols-new", name="sft-cols", spec={"lr": 0.01})
    tab.wait_for_selector("table.runs tr.new", timeout=LIVE_WAIT_MS)
    assert tab.locator("table.runs tr.new td").count() == len(headers)
    assert tab.locator('table.runs tr.new td[data-field="tags"]').inner_text() == "-"
    assert watch.clear() == []


def test_a_run_with_more_holds_than_a_page_shows_a_new_pending_hold_live(
    ledger: Ledger, page: tuple[Page, Watch]
) -> None:
    """205 settled holds, more than the spend document's page: a hold reserved while the page is
    open still appears first, rendered again by the server."""
    tab, watch = page
    client = ledger.client
    run_id = client.open_run(run_key="long-holds", name="sft-long-holds").state.run.run_id
    client.start_attempt(run_id=run_id)
    for step in range(205):
        client.reserve(account=run_id, reservation_id=f"l{step}", amount_usd_micro=10_000, attempt=1)
        client.commit(account=run_id, reservation_id=f"l{step}", actual_usd_micro=10_000)
    tab.goto(f"{ledger.served.base}/runs/{run_id}", wait_until="load")
    wait_ready(tab)
    assert _text(tab, "p.holds-count").startswith("205 holds, 0 pending")
    client.reserve(account=run_id, reservation_id="live-late", amount_usd_micro=70_000, attempt=1)
    tab.wait_for_function(
        "() => document.querySelector('table.holds tbody tr')?.dataset.state === 'pending'", timeout=LIVE_WAIT_MS
    )
    assert _text(tab, "p.holds-count").startswith("206 holds, 1 pending")
    assert tab.locator("table.holds tbody tr").count() == 21
    assert watch.clear() == []


def test_progress_without_a_plan_reads_step_n_and_a_finished_run_reads_100_percent(
    ledger: Ledger, page: tuple[Page, Watch]
) -> None:
    tab, watch = page
    client = ledger.client
    unplanned = client.open_run(run_key="unplanned", name="sft-unplanned").state.run.run_id
    client.start_attempt(run_id=unplanned)
    steps = list(range(263))
    client.append_steps(run_id=unplanned, attempt=1, steps=steps, metrics={"loss": [0.5] * len(steps)})
    tab.goto(f"{ledger.served.base}/runs/{unplanned}", wait_until="load")
    wait_ready(tab)
    assert _fact(tab, "progress").startswith("step 262")

    planned = client.open_run(run_key="zero-based", name="sft-zero-based", max_steps=300).state.run.run_id
    client.start_attempt(run_id=planned)
    steps = list(range(300))  # 0..299: the last step of a 0-based loop of 300 steps
    client.append_steps(run_id=planned, attempt=1, steps=steps, metrics={"loss": [0.5] * len(steps)})
    client.finish_run(run_id=planned, attempt=1, status="done")
    tab.goto(f"{ledger.served.base}/runs/{planned}", wait_until="load")
    wait_ready(tab)
    assert _fact(tab, "progress") == "step 299 of 300 (100.0%)"
    assert tab.locator('dd[data-field="progress"] .bar').get_attribute("aria-valuenow") == "100"
    tab.goto(f"{ledger.served.base}/?name=sft-zero-based", wait_until="load")
    assert _text(tab, 'table.runs tr td[data-field="progress"] .amount') == "100%"
    assert watch.clear() == []


def test_an_empty_table_says_none_yet(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    run_id = ledger.client.open_run(run_key="bare", name="sft-bare").state.run.run_id
    tab.goto(f"{ledger.served.base}/runs/{run_id}", wait_until="load")
    for name in ("metrics", "attempts", "checkpoints", "datasets"):
        assert tab.locator(f"table.{name} tbody tr").all_inner_texts() == ["none yet"], name
    assert watch.clear() == []


def test_the_accounts_page_lists_the_runs_capped_accounts_with_their_names(
    ledger: Ledger, page: tuple[Page, Watch]
) -> None:
    tab, watch = page
    client = ledger.client
    client.open_account(account="lab", cap_usd_micro=100_000_000)
    capped = client.open_run(
        run_key="capped", name="sft-capped", cap_usd_micro=12_500_000, parent_account="lab"
    ).state.run.run_id
    client.start_attempt(run_id=capped)
    hold = client.reserve(account=capped, amount_usd_micro=3_000_000, attempt=1)
    client.commit(account=capped, reservation_id=hold.reservation_id, actual_usd_micro=2_000_000)
    tab.goto(f"{ledger.served.base}/accounts", wait_until="load")
    assert tab.locator('table.accounts tr[data-account="lab"]').count() == 1
    row = tab.locator(f'table.run-accounts tr[data-run-id="{capped}"]')
    assert row.count() == 1
    cells = row.locator("td").all_inner_texts()
    assert cells[0] == "sft-capped"
    assert capped in cells[1]
    assert cells[2:5] == ["$12.50", "$2.00", "$0.00"]
    assert cells[5] == "$10.50"  # remaining
    assert "lab" in cells
    assert row.locator("a").first.get_attribute("href") == f"/runs/{capped}"
    assert watch.clear() == []


def test_the_events_page_is_one_line_per_event_each_expandable(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    client = ledger.client
    run_id = client.open_run(run_key="events", name="sft-events", spec={"notes": "x" * 2_000}).state.run.run_id
    client.start_attempt(run_id=run_id)
    steps = list(range(500))
    client.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": [0.125] * len(steps)})
    tab.goto(f"{ledger.served.base}/events?run={run_id}", wait_until="load")
    rows = tab.locator("table.events tbody tr")
    assert rows.count() >= 3  # opened, attempt, steps (and the run's account)
    line_height_px = tab.evaluate("() => parseFloat(getComputedStyle(document.body).lineHeight) || 20")
    for index in range(rows.count()):
        box = rows.nth(index).bounding_box()
        assert box is not None and box["height"] <= 3 * line_height_px, index
        assert rows.nth(index).locator("details").count() == 1
    steps_row = tab.locator("table.events tbody tr", has_text="StepsRecorded")
    details = steps_row.locator("details")
    assert details.locator("pre").is_visible() is False
    details.locator("summary").click()
    assert details.locator("pre").is_visible()
    assert '"steps"' in details.locator("pre").inner_text()
    assert watch.clear() == []


def test_every_nav_link_shows_on_a_narrow_screen(ledger: Ledger) -> None:
    context = ledger.browser.new_context(viewport={"width": 420, "height": 800})
    try:
        tab = context.new_page()
        tab.goto(f"{ledger.served.base}/accounts", wait_until="load")
        for link in tab.locator("nav a").all():
            box = link.bounding_box()
            assert box is not None
            assert box["x"] >= 0 and box["x"] + box["width"] <= 420, link.inner_text()
        events = tab.locator("nav a", has_text="events")
        box = events.bounding_box()
        assert box is not None
        at = tab.evaluate(
            "([x, y]) => document.elementFromPoint(x, y)?.closest('a')?.textContent",
            [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
        )
        assert at == "events"
    finally:
        context.close()


def test_the_run_compare_accounts_and_registry_pages_read_on_a_narrow_screen(ledger: Ledger, tmp_path: Path) -> None:
    """At 420 px nothing makes the page scroll sideways (a wide table scrolls inside its own
    box), and an empty table says "none yet" under its headers."""
    client = ledger.client
    run_id = client.open_run(
        run_key="narrow", name="sft-narrow", max_steps=50, objective=("loss", "min"), cap_usd_micro=5_000_000
    ).state.run.run_id
    client.start_attempt(run_id=run_id)
    steps = list(range(20))
    client.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": [1 / (1 + s) for s in steps]})
    client.reserve(account=run_id, reservation_id="narrow-1", amount_usd_micro=1_000_000, attempt=1)
    client.save_checkpoint(run_id=run_id, attempt=1, step=19, uri="s3://ckpt/narrow/19", backend="s3")
    context = ledger.browser.new_context(viewport={"width": 420, "height": 800})
    try:
        tab = context.new_page()
        watch = Watch().attach(tab)
        for name, path in (
            ("run", f"/runs/{run_id}"),
            ("compare", f"/compare?run={run_id}&metric=loss"),
            ("accounts", "/accounts"),
            ("registry", "/registry"),
        ):
            tab.goto(f"{ledger.served.base}{path}", wait_until="load")
            wait_ready(tab)
            tab.screenshot(path=shot(tmp_path, f"narrow-{name}.png"), full_page=True)
            width = tab.evaluate("() => document.documentElement.scrollWidth")
            assert width <= 420, (name, width)
            for body in tab.locator("main table tbody").all():
                if body.is_visible() and body.locator("tr").count() == 0:
                    raise AssertionError(f"{name}: an empty table with headers only")
        tab.goto(f"{ledger.served.base}/registry", wait_until="load")
        assert watch.clear() == []
    finally:
        context.close()
