"""The run page's "Did it work?" in a real browser (Chromium through Playwright) against a real
`trainledger serve --http`: a finished run's page, left open, shows the holdout and the delta
table once they are recorded over gRPC, without a reload, and the run stays done. The screenshot
is written under the test's tmp_path (also to $TRAINLEDGER_VERDICT_SCREENSHOT when set)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.web.browser import Served, Watch, chromium, missing_browser, serve, wait_ready

if TYPE_CHECKING:
    from playwright.sync_api import Browser

    from clients import LedgerClient

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.browser, pytest.mark.subprocess]

if (reason := missing_browser()) is not None:
    pytest.skip(f"browser tests skipped: {reason}", allow_module_level=True)

LIVE_WAIT_MS = 5_000
ROWS_BEFORE = [{"task": t, "pass": p, "safe": 1, "reward": r} for t, p, r in [("math", 1, 0.1), ("math", 0, 0.2)] * 4]
ROWS_AFTER = [{"task": t, "pass": 1, "safe": 1, "reward": r} for t, r in [("math", 0.9), ("code", 1.0)] * 4]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, LedgerClient, Browser]]:
    from clients import LedgerClient

    directory = tmp_path_factory.mktemp("dashboard-verdict")
    server = serve(directory / "ledger.db", directory)
    client = LedgerClient(server.grpc, principal="alice", timeout_s=10.0)
    try:
        client.wait_ready()
        with chromium() as browser:
            yield server, client, browser
    finally:
        client.close()
        server.stop()


def test_an_open_run_page_shows_the_reports_recorded_after_the_finish(
    served: tuple[Served, LedgerClient, Browser], tmp_path: Path
) -> None:
    from clients import RunRecorder

    server, client, browser = served
    recorder = RunRecorder.open(client, run_key="verdict", name="sft-verdict")
    recorder.log(0, loss=1.0)
    recorder.finish("done")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    watch = Watch().attach(tab)
    try:
        tab.goto(f"{server.base}/runs/{recorder.run_id}", wait_until="load")
        wait_ready(tab)
        opening = tab.locator('section.panel[data-live="did it work?"]')
        assert opening.locator("p.empty").inner_text() == "No holdout or delta report recorded yet."

        recorder.holdout(0.31, 0.47, "pass_rate")
        recorder.delta(ROWS_BEFORE, ROWS_AFTER, target="pass", must_not_regress=["safe"], by="task", proxy="reward")
        tab.wait_for_selector('[data-field="holdout"]', timeout=LIVE_WAIT_MS)
        tab.wait_for_selector("table.delta-groups", timeout=LIVE_WAIT_MS)

        holdout = tab.locator('[data-field="holdout"]')
        assert holdout.get_attribute("data-direction") == "better"
        assert holdout.locator("strong").inner_text() == "pass rate 0.31 → 0.47 (+0.16)"
        # pass 0.5 -> 1 over 8 and 8: Wald, 0.5 ± 1.96 sqrt(.25/8) = [0.1535, 0.8465]: better.
        target = tab.locator("table.delta tbody tr").first.locator("td")
        assert target.all_inner_texts() == [
            "pass", "target", "8 / 8", "0.5", "1", "+0.5", "[0.1535, 0.8465]", "better"
        ]  # fmt: skip
        assert tab.locator('table.delta tr[data-verdict="held"]').count() == 1  # safe held at 1
        assert tab.locator('[data-field="status"]').first.inner_text().strip() == "done"
        # The opening section comes before the run's facts.
        assert tab.evaluate(
            "() => document.querySelector('section.panel[data-live=\"did it work?\"]')"
            ".compareDocumentPosition(document.querySelector('dl.facts')) === Node.DOCUMENT_POSITION_FOLLOWING"
        )
        tab.screenshot(path=str(tmp_path / "did-it-work.png"), full_page=False)
        if target_path := os.environ.get("TRAINLEDGER_VERDICT_SCREENSHOT"):
            tab.screenshot(path=target_path, full_page=False)
        assert watch.clear() == []
    finally:
        context.close()
