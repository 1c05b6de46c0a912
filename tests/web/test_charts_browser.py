"""The run page's charts and spend section in a real browser (Debian's Chromium through
Playwright) against a real `trainledger serve`: axis labels, tick labels that differ on a narrow
range, the legend, one step range and cursor across a run's charts, smoothing and a log y scale,
the spend figure over the run's life, and the holds table.

The ledger is test_browser's (its fixtures are used here, with a server of this module's own);
the runs added here record what each test reads. Expected values are written out from the data
recorded, never read from the dashboard's code.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest

from tests.web import test_browser as base
from tests.web.browser import Watch, attributes, missing_browser, wait_ready
from tests.web.test_browser import Ledger, loss_at

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.browser, pytest.mark.subprocess]

# test_browser's fixtures: its ledger (served again for this module) and a fresh page per test.
ledger = base.ledger
page = base.page

if (reason := missing_browser()) is not None:
    pytest.skip(f"browser tests skipped: {reason}", allow_module_level=True)

LOSS = 'figure.chart[data-metric="loss"]'
EVALS = 'figure.chart[data-metric="eval_loss"]'
SPEND = "figure.spend-chart"


def open_page(ledger: Ledger, tab: Page, run_id: str) -> None:
    tab.goto(f"{ledger.served.base}/runs/{run_id}", wait_until="load")
    wait_ready(tab)


def seconds(moment: datetime | None) -> float:
    """A time as seconds since the epoch."""
    assert moment is not None
    return moment.timestamp()


def plot(tab: Page, selector: str, expression: str) -> Any:
    """`expression` over the uPlot instance `p` of the figure `selector`."""
    return tab.eval_on_selector(selector, f"(f) => {{ const p = f.plot; return {expression}; }}")


def test_the_axes_are_labelled_with_the_step_and_the_metric(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    open_page(ledger, tab, ledger.alpha)
    for metric in ("loss", "eval_loss"):
        figure = f'figure.chart[data-metric="{metric}"]'
        assert plot(tab, figure, "p.axes.map((a) => a.label)") == ["step", metric]
        assert tab.locator(figure).get_attribute("data-y-label") == metric
    assert plot(tab, SPEND, "p.axes.map((a) => a.label)") == ["time (UTC)", "spend"]
    assert watch.clear() == []


def test_y_tick_labels_differ_on_a_narrow_range(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    client = ledger.client
    run_id = client.open_run(run_key="narrow", name="sft-narrow").state.run.run_id
    client.start_attempt(run_id=run_id)
    steps = list(range(13))
    values = [round(4.1400 + 0.0001 * s, 4) for s in steps]  # 4.1400 .. 4.1412
    client.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": values})
    open_page(ledger, tab, run_id)
    labels = json.loads(tab.locator(LOSS).get_attribute("data-y-ticks") or "[]")
    assert len(labels) >= 3
    assert len(set(labels)) == len(labels), labels
    numbers = [float(label) for label in labels]
    assert numbers == sorted(numbers)
    assert all(4.1395 <= n <= 4.1417 for n in numbers), labels
    assert all(len(label.split(".")[1]) >= 4 for label in labels), labels
    assert watch.clear() == []


def test_the_legend_names_attempts_superseded_lines_checkpoints_and_evaluation_points(
    ledger: Ledger, page: tuple[Page, Watch]
) -> None:
    tab, watch = page
    open_page(ledger, tab, ledger.alpha)
    lines = ["attempt 1 (superseded)", "attempt 1", "attempt 2"]
    assert tab.locator(f"{LOSS} .legend-item").all_inner_texts() == [*lines, "attempt start", "checkpoint"]
    assert tab.locator(f"{EVALS} .legend-item").all_inner_texts() == [
        *lines,
        "evaluation point",
        "attempt start",
        "checkpoint",
    ]
    assert watch.clear() == []


def test_a_runs_charts_share_one_step_range_and_cursor(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    open_page(ledger, tab, ledger.alpha)
    # eval_loss was logged up to step 100 only, loss up to 119: both show steps 0..119.
    for figure in (LOSS, EVALS):
        assert (tab.locator(figure).get_attribute("data-x-min"), tab.locator(figure).get_attribute("data-x-max")) == (
            "0",
            "119",
        )
    box = tab.locator(f"{LOSS} .u-over").bounding_box()
    assert box is not None
    tab.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
    # The cursor of the other chart follows, at the same step.
    assert tab.locator(f"{LOSS} .readout").inner_text().startswith("step ")
    assert plot(tab, EVALS, "p.cursor.left") == pytest.approx(plot(tab, LOSS, "p.cursor.left"), abs=1)
    assert watch.clear() == []


def ema(values: list[float], weight: float) -> list[float]:
    """Debiased exponential moving average, as Weights & Biases smooths."""
    out, last = [], 0.0
    for n, value in enumerate(values, start=1):
        last = last * weight + (1 - weight) * value
        out.append(last / (1 - weight**n))
    return out


def set_smoothing(tab: Page, value: str) -> None:
    tab.eval_on_selector(
        'input[name="smoothing"]',
        f"(i) => {{ i.value = '{value}'; i.dispatchEvent(new Event('input', {{ bubbles: true }})); }}",
    )
    tab.wait_for_function(f"() => document.querySelector('{LOSS}').dataset.smoothing === '{value}'")


def test_smoothing_draws_an_ema_over_the_raw_line(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    open_page(ledger, tab, ledger.alpha)
    assert plot(tab, LOSS, "p.series.length") == 4
    set_smoothing(tab, "0.9")
    labels = plot(tab, LOSS, "p.series.map((s) => s.label)")
    assert labels[1:] == [
        "attempt 1 (superseded)",
        "attempt 1",
        "attempt 2",
        "attempt 1 (superseded) smoothed",
        "attempt 1 smoothed",
        "attempt 2 smoothed",
    ]
    column = plot(tab, LOSS, "p.data[6].filter((v) => v !== undefined && v !== null)")
    expected = ema([loss_at(s, 2) for s in range(50, 120)], 0.9)
    assert column == pytest.approx(expected, rel=1e-9)
    # The raw line stays behind it, unsmoothed.
    raw = plot(tab, LOSS, "p.data[3].filter((v) => v !== undefined && v !== null)")
    assert raw == pytest.approx([loss_at(s, 2) for s in range(50, 120)], rel=1e-9)
    assert "smoothed (EMA 0.9)" in tab.locator(f"{LOSS} .legend-item").all_inner_texts()
    # Evaluation points are not smoothed.
    assert plot(tab, EVALS, "p.series.length") == 4
    set_smoothing(tab, "0")
    assert plot(tab, LOSS, "p.series.length") == 4
    assert watch.clear() == []


def test_the_log_y_toggle_puts_every_chart_on_a_log_scale(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    open_page(ledger, tab, ledger.alpha)
    assert plot(tab, LOSS, "p.scales.y.distr") == 1
    tab.check('input[name="log-y"]')
    tab.wait_for_function(
        "() => [...document.querySelectorAll('figure.chart')].every((f) => f.dataset.logY === 'true')"
    )
    for figure in (LOSS, EVALS):
        assert plot(tab, figure, "p.scales.y.distr") == 3
    # Minor ticks of a log axis go unlabelled; the labelled ones differ.
    labels = [t for t in json.loads(tab.locator(LOSS).get_attribute("data-y-ticks") or "[]") if t]
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
    tab.uncheck('input[name="log-y"]')
    tab.wait_for_function(f"() => document.querySelector('{LOSS}').dataset.logY === 'false'")
    assert plot(tab, LOSS, "p.scales.y.distr") == 1
    assert watch.clear() == []


def test_the_spend_chart_spans_the_runs_life(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    client = ledger.client
    opened = seconds(client.get_run_state(run_id=ledger.alpha).run.opened_at)
    before = time.time()
    open_page(ledger, tab, ledger.alpha)
    # From the run's opening to now (it is still running), not from the top of the hour.
    assert float(tab.locator(SPEND).get_attribute("data-x-min") or 0) == pytest.approx(opened, abs=0.002)
    assert float(tab.locator(SPEND).get_attribute("data-x-max") or 0) >= before - 1
    times = json.loads(tab.locator(SPEND).get_attribute("data-x-ticks") or "[]")
    assert len(times) >= 2 and len(set(times)) == len(times), times
    # A finished run: up to its finish; with a large cap the y axis fits the spend, the cap a number.
    run_id = client.open_run(run_key="spent", name="sft-spent", cap_usd_micro=1_000_000_000).state.run.run_id
    client.start_attempt(run_id=run_id)
    hold = client.reserve(account=run_id, amount_usd_micro=15_000_000, attempt=1)
    client.commit(account=run_id, reservation_id=hold.reservation_id, actual_usd_micro=15_000_000)
    client.finish_run(run_id=run_id, attempt=1)
    run = client.get_run_state(run_id=run_id).run
    open_page(ledger, tab, run_id)
    x_min, x_max = (float(tab.locator(SPEND).get_attribute(name) or 0) for name in ("data-x-min", "data-x-max"))
    assert x_min == pytest.approx(seconds(run.opened_at), abs=0.002)
    assert x_max == pytest.approx(seconds(run.finished_at), abs=0.002)
    times = json.loads(tab.locator(SPEND).get_attribute("data-x-ticks") or "[]")
    assert len(times) >= 2 and len(set(times)) == len(times), times
    assert tab.locator(SPEND).get_attribute("data-cap-shown") == "number"
    assert 15_000_000 <= plot(tab, SPEND, "p.scales.y.max") < 100_000_000
    assert tab.locator(f"{SPEND} .legend-item.cap").inner_text() == "cap $1,000.00 (above the chart)"
    assert watch.clear() == []


def test_the_holds_are_a_table_on_the_run_page(ledger: Ledger, page: tuple[Page, Watch]) -> None:
    tab, watch = page
    open_page(ledger, tab, ledger.alpha)
    rows = tab.locator("table.holds tbody tr")
    cells = [row.locator("td").all_inner_texts()[:5] for row in rows.all()]
    # The pending first, then the others newest first.
    assert cells == [
        ["pending", "reservation", "$10.00", "-", "2"],
        ["released", "reservation", "$5.00", "-", "2"],
        ["committed", "reservation", "$20.00", "$18.50", "2"],
    ]
    assert attributes(tab, "table.holds tbody tr", "data-state") == ["pending", "released", "committed"]
    assert tab.locator("p.holds-empty").is_hidden()
    # A run without holds says so.
    open_page(ledger, tab, ledger.beta)
    assert tab.locator("table.holds").is_hidden()
    assert tab.locator("p.holds-empty").inner_text() == "none yet"
    assert watch.clear() == []


def test_a_metric_first_recorded_after_the_page_opened_gets_its_chart_live(
    ledger: Ledger, page: tuple[Page, Watch]
) -> None:
    """A run page opened before any step (and an eval metric that first comes later, a system
    metric too) grows each metric's chart without a reload, as a reload would show it."""
    tab, watch = page
    client = ledger.client
    run_id = client.open_run(run_key="late-metrics", name="sft-late-metrics").state.run.run_id
    client.start_attempt(run_id=run_id)
    open_page(ledger, tab, run_id)
    assert tab.locator("figure.chart").count() == 0
    assert tab.locator("section.charts p.empty").inner_text() == "No metrics recorded."

    steps = list(range(10))
    client.append_steps(run_id=run_id, attempt=1, steps=steps, metrics={"loss": [1 / (1 + s) for s in steps]})
    tab.wait_for_function(f"() => document.querySelector('{LOSS}')?.plot !== undefined", timeout=5_000)
    assert tab.locator("section.charts p.empty").count() == 0
    assert plot(tab, LOSS, "p.data[0].length") == 10
    assert tab.locator(".chart-controls").count() == 1

    client.append_steps(
        run_id=run_id,
        attempt=1,
        steps=[10, 11],
        metrics={
            "loss": [0.09, 0.08],
            "eval_loss": {"values": [0.5], "index": [1]},
            "system/gpu_mem_bytes": [1e9, 2e9],
        },
    )
    system = 'section.charts[data-section="system"] figure.chart[data-metric="system/gpu_mem_bytes"]'
    tab.wait_for_function(f"() => document.querySelector('{EVALS}')?.plot !== undefined", timeout=5_000)
    tab.wait_for_function(f"() => document.querySelector('{system}')?.plot !== undefined", timeout=5_000)
    live = tab.eval_on_selector_all("figure.chart", "(fs) => fs.map((f) => f.dataset.metric)")
    assert live == ["eval_loss", "loss", "system/gpu_mem_bytes"]
    assert tab.locator(EVALS).get_attribute("data-sparse") == "true"
    assert tab.locator(".system-charts h2").inner_text() == "System"
    tab.reload(wait_until="load")
    wait_ready(tab)
    assert tab.eval_on_selector_all("figure.chart", "(fs) => fs.map((f) => f.dataset.metric)") == live
    assert watch.clear() == []
