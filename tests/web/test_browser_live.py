"""The dashboard's pages in a real browser (Chromium through Playwright) against a real
`trainledger serve --http` subprocess, with runs recorded through clients.LedgerClient over gRPC:
every panel of an open run page follows the run without a reload, and the small things a reader
trusts at a glance (progress text, empty tables, the accounts listed, the events page, the nav on a
narrow screen).

The expected values are written out here from the data each test records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from tests.web.browser import Served, Watch, chromium, missing_browser, serve, wait_ready

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from clients import LedgerClient

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

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
