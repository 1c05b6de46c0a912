"""The run page's System section and lineage in a real browser (Chromium through Playwright)
against a real `trainledger serve --http`: a run that recorded system/ metrics (clients.system)
draws them as charts of their own under "System", below its training charts; a run opened from its
checkpoint says where it came from, and the link leads to the source, whose Children panel lists
it. The screenshot is written under the test's tmp_path (also to $TRAINLEDGER_SYSTEM_SCREENSHOT
when set)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.web.browser import Served, Watch, attributes, chromium, missing_browser, serve, wait_ready

if TYPE_CHECKING:
    from playwright.sync_api import Browser

    from clients import LedgerClient

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.browser, pytest.mark.subprocess]

if (reason := missing_browser()) is not None:
    pytest.skip(f"browser tests skipped: {reason}", allow_module_level=True)

STEPS = list(range(40))
SYSTEM_STEPS = list(range(0, 40, 5))  # recorded every few steps, as a sampler does


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, LedgerClient, Browser]]:
    from clients import LedgerClient

    directory = tmp_path_factory.mktemp("dashboard-sections")
    server = serve(directory / "ledger.db", directory)
    client = LedgerClient(server.grpc, principal="alice", timeout_s=10.0)
    try:
        client.wait_ready()
        with chromium() as browser:
            yield server, client, browser
    finally:
        client.close()
        server.stop()


def _record(client: LedgerClient) -> tuple[str, str]:
    """A run with loss and three system/ metrics and a checkpoint at step 39, and a run opened
    from that checkpoint: their ids."""
    from clients import RunSourceCheckpoint

    base = client.open_run(run_key="sections-base", name="sft-base").state.run.run_id
    attempt = client.start_attempt(run_id=base).attempt
    index = [STEPS.index(s) for s in SYSTEM_STEPS]
    system = {
        "system/gpu.0.util": {"values": [60.0 + (s % 10) for s in SYSTEM_STEPS], "index": index},
        "system/gpu.0.memory_used_bytes": {"values": [8e9 + s * 1e7 for s in SYSTEM_STEPS], "index": index},
        "system/cpu.util": {"values": [20.0 + s / 4 for s in SYSTEM_STEPS], "index": index},
    }
    metrics = {"loss": [2.0 / (1 + s / 10) for s in STEPS], **system}
    client.append_steps(run_id=base, attempt=attempt, steps=STEPS, metrics=metrics)
    client.save_checkpoint(run_id=base, attempt=attempt, step=39, uri="s3://ckpt/base/39", backend="s3")
    source = RunSourceCheckpoint(run_id=base, step=39, uri="s3://ckpt/base/39")
    child = client.open_run(run_key="sections-child", name="sft-child", source_checkpoint=source)
    client.get_run_state(run_id=base, min_position=child.position)
    return base, child.state.run.run_id


def test_system_metrics_are_charted_below_the_training_charts_and_lineage_links_both_ways(
    served: tuple[Served, LedgerClient, Browser], tmp_path: Path
) -> None:
    server, client, browser = served
    base, child = _record(client)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    watch = Watch().attach(tab)
    try:
        tab.goto(f"{server.base}/runs/{base}", wait_until="load")
        wait_ready(tab)
        training = 'section.charts[data-section="training"] figure.chart'
        system = 'section.charts[data-section="system"] figure.chart'
        assert attributes(tab, training, "data-metric") == ["loss"]
        assert sorted(attributes(tab, system, "data-metric")) == [
            "system/cpu.util",
            "system/gpu.0.memory_used_bytes",
            "system/gpu.0.util",
        ]
        # Each system chart drew its 8 samples; the System heading and charts sit below the loss chart.
        for metric in ("system/cpu.util", "system/gpu.0.util"):
            figure = f'figure.chart[data-metric="{metric}"]'
            assert tab.locator(f"{figure} .legend-item.series").get_attribute("data-points") == "8"
            # Their points are samples, not evaluations.
            assert "sample" in tab.locator(f"{figure} .legend-item").all_inner_texts()
            assert "evaluation point" not in tab.locator(f"{figure} .legend-item").all_inner_texts()
        loss_box = tab.locator('figure.chart[data-metric="loss"]').bounding_box()
        heading_box = tab.locator("div.system-charts h2").bounding_box()
        assert loss_box is not None and heading_box is not None
        assert heading_box["y"] >= loss_box["y"] + loss_box["height"]
        assert tab.locator("div.system-charts h2").inner_text() == "System"
        children = tab.locator('section.panel[data-live="children"] table.children tbody tr')
        assert children.count() == 1 and children.get_attribute("data-run-id") == child
        tab.screenshot(path=str(tmp_path / "system.png"), full_page=True)
        if target := os.environ.get("TRAINLEDGER_SYSTEM_SCREENSHOT"):
            tab.screenshot(path=target, full_page=True)

        # The child says where it came from; its link leads back to the source.
        children.locator("a").click()
        tab.wait_for_url(f"**/runs/{child}")
        lineage = tab.locator('[data-field="source"]')
        assert " ".join(lineage.inner_text().split()) == "from sft-base at step 39"
        assert tab.locator("div.system-charts").count() == 0
        tab.screenshot(path=str(tmp_path / "lineage.png"), full_page=False)
        lineage.locator("a").click()
        tab.wait_for_url(f"**/runs/{base}")
        assert watch.clear() == []
    finally:
        context.close()


def test_a_bytes_metric_reads_in_bytes_units_on_its_axis_readout_and_table(
    served: tuple[Served, LedgerClient, Browser], tmp_path: Path
) -> None:
    """system/gpu.0.memory_used_bytes (8.0e9 to 8.35e9) reads in GB: its axis ticks, the readout
    under the cursor and the metrics table; the loss chart's ticks stay plain numbers."""
    server, client, browser = served
    run_id = client.open_run(run_key="sections-bytes", name="sft-bytes").state.run.run_id
    attempt = client.start_attempt(run_id=run_id).attempt
    index = [STEPS.index(s) for s in SYSTEM_STEPS]
    metrics = {
        "loss": [2.0 / (1 + s / 10) for s in STEPS],
        "system/gpu.0.memory_used_bytes": {"values": [8e9 + s * 1e7 for s in SYSTEM_STEPS], "index": index},
    }
    appended = client.append_steps(run_id=run_id, attempt=attempt, steps=STEPS, metrics=metrics)
    client.get_run_state(run_id=run_id, min_position=appended.position)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    watch = Watch().attach(tab)
    try:
        tab.goto(f"{server.base}/runs/{run_id}", wait_until="load")
        wait_ready(tab)
        figure = tab.locator('figure.chart[data-metric="system/gpu.0.memory_used_bytes"]')
        ticks = json.loads(figure.get_attribute("data-y-ticks") or "[]")
        assert ticks and all(tick.endswith(" GB") for tick in ticks), ticks
        assert not any("e+" in tick for tick in ticks)
        loss_ticks = json.loads(tab.locator('figure.chart[data-metric="loss"]').get_attribute("data-y-ticks") or "[]")
        assert loss_ticks and not any(tick.endswith("B") for tick in loss_ticks)
        row = tab.locator('table.metrics tr[data-metric="system/gpu.0.memory_used_bytes"] td')
        assert row.all_inner_texts()[4:] == ["8.35 GB", "8 GB", "8.35 GB"]
        figure.scroll_into_view_if_needed()
        box = figure.locator(".u-over").bounding_box()
        assert box is not None
        tab.mouse.move(box["x"] + box["width"] - 0.5, box["y"] + box["height"] / 2)
        readout = figure.locator(".readout")
        tab.wait_for_function(
            "(el) => el.textContent.includes('memory_used_bytes')", arg=readout.element_handle(), timeout=5_000
        )
        assert readout.inner_text().split(" · ")[1] == "system/gpu.0.memory_used_bytes 8.35 GB"
        figure.screenshot(path=str(Path(os.environ.get("TRAINLEDGER_SHOTS") or tmp_path) / "bytes-chart.png"))
        assert watch.clear() == []
    finally:
        context.close()
