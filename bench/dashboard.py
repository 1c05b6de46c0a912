"""Benchmark of the web dashboard on a 1,000,000-step run, end to end in a real browser.

Run:  .venv/bin/python bench/dashboard.py [--steps 1000000] [--live 20] [--samples 200]
Needs Playwright and Chromium (/usr/bin/chromium, or $TRAINLEDGER_CHROMIUM).

It builds the run in-process first (ledger.Ledger.append_steps in 1,000-step batches into a
temporary SQLite file: loss and lr on every step, eval_loss every 1,000 steps), closes it, starts a
real `trainledger serve --http` on that file, and measures:
- run_page_ms_1m_steps: navigation start to every chart figure drawn (data-ready="1"), in Chromium
  via Playwright (median of --page-loads loads; the first load is a warm-up and not counted);
- series_endpoint_p99_ms_1m_steps: GET /api/runs/{run}/chart?metric=loss&width=1000 over the whole
  range and over zoomed ranges (a random window of 1,000 to 500,000 steps), with httpx;
- live_update_ms: a step appended through clients.LedgerClient (time of its ack) until the open
  run page's data-last-step shows it (median of --live appends);
- cli_start_ms: median wall time of `trainledger --help` and of `trainledger runs list --address`
  as subprocesses (the larger of the two medians; each also as cli_help_ms and cli_runs_list_ms).
Prints each figure as it goes; the LAST line is one JSON object with the four figures and the
command to rerun it. Goals (never test assertions): run page <= 1000 ms, series endpoint p99
<= 50 ms, live update <= 1000 ms, CLI start <= 300 ms.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from clients import LedgerClient  # noqa: E402
from ledger import Ledger  # noqa: E402
from tests.web.browser import chromium, environment, missing_browser, serve, trainledger  # noqa: E402

BATCH = 1_000
EVAL_EVERY = 1_000
WIDTH = 1_000


def batch(start: int) -> dict[str, object]:
    steps = list(range(start, start + BATCH))
    rng = random.Random(start)
    loss = [2.5 * math.exp(-s / 200_000) + 0.3 + 0.05 * rng.random() for s in steps]
    evals = [i for i, s in enumerate(steps) if s % EVAL_EVERY == 0]
    return {
        "steps": steps,
        "tokens": [4096] * BATCH,
        "metrics": {
            "loss": loss,
            "lr": [1e-4 * min(1.0, s / 10_000) for s in steps],
            "eval_loss": {"values": [loss[i] + 0.1 for i in evals], "index": evals},
        },
    }


def build(database: Path, steps: int) -> str:
    """A run of `steps` steps (attempt 1) with a checkpoint every 100,000 steps; its id."""
    started = time.perf_counter()
    ledger = Ledger.open(str(database))
    try:
        run = ledger.open_run(run_key="bench-dashboard", name="bench-1m", cap_usd_micro=None)
        ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
        for first in range(0, steps, BATCH):
            ledger.append_steps(run_id=run.run_id, attempt=1, **batch(first))  # type: ignore[arg-type]
            if (first + BATCH) % 100_000 == 0:
                ledger.save_checkpoint(run_id=run.run_id, attempt=1, step=first + BATCH - 1, backend="hf", uri="/ck")
        ledger.wait(ledger.head(), 600)
    finally:
        ledger.close()
    print(f"built a {steps:,}-step run in {time.perf_counter() - started:.1f} s", flush=True)
    return run.run_id


def p99_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[max(0, math.ceil(len(ordered) * 0.99) - 1)] * 1000, 2)


def series_endpoint(base: str, run_id: str, last: int, samples: int) -> float:
    rng = random.Random(7)
    timings: list[float] = []
    with httpx.Client(base_url=base, timeout=30.0) as http:
        http.get(f"/api/runs/{run_id}/chart", params={"metric": "loss", "width": WIDTH}).raise_for_status()
        for i in range(samples):
            params: dict[str, str | int] = {"metric": "loss", "width": WIDTH}
            if i % 2:
                span = rng.randint(1_000, min(500_000, last))
                start = rng.randint(0, last - span)
                params.update({"from": start, "to": start + span})
            started = time.perf_counter()
            answer = http.get(f"/api/runs/{run_id}/chart", params=params)
            timings.append(time.perf_counter() - started)
            answer.raise_for_status()
    figure = p99_ms(timings)
    print(f"chart endpoint: p99 {figure} ms, median {statistics.median(timings) * 1000:.1f} ms over {samples}")
    return figure


PAGE_READY = (
    "() => { const f = [...document.querySelectorAll('figure.chart')];"
    " return f.length > 0 && f.every((x) => x.dataset.ready === '1'); }"
)
# In the page, before its scripts: the time (ms since navigation start) when the last chart figure
# got data-ready="1", noted by a MutationObserver the moment it happens.
NOTE_READY = """
new MutationObserver((_, observer) => {
  const figures = [...document.querySelectorAll('figure.chart')];
  if (figures.length && figures.every((f) => f.dataset.ready === '1')) {
    window.__chartsReadyMs = performance.now();
    observer.disconnect();
  }
}).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-ready'] });
"""


def run_page(browser: object, base: str, run_id: str, loads: int) -> float:
    from playwright.sync_api import Browser

    assert isinstance(browser, Browser)
    timings: list[float] = []
    for i in range(loads + 1):
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.add_init_script(NOTE_READY)
        page = context.new_page()
        page.goto(f"{base}/runs/{run_id}", wait_until="commit")
        page.wait_for_function("() => window.__chartsReadyMs !== undefined", timeout=30_000)
        elapsed = page.evaluate("() => window.__chartsReadyMs")
        charts = page.locator("figure.chart").count()
        if i:
            timings.append(float(elapsed))
        context.close()
    figure = round(statistics.median(timings), 1)
    print(f"run page: navigation start to all {charts} charts drawn, median {figure} ms over {loads} loads")
    return figure


def live_update(browser: object, base: str, grpc: str, run_id: str, start: int, count: int) -> float:
    from playwright.sync_api import Browser

    assert isinstance(browser, Browser)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{base}/runs/{run_id}", wait_until="load")
    page.wait_for_function(PAGE_READY, timeout=30_000)
    timings: list[float] = []
    with LedgerClient(grpc, principal="bench") as client:
        for i in range(count):
            step = start + i
            client.append_steps(run_id=run_id, attempt=1, steps=[step], metrics={"loss": [0.3]})
            acked = time.perf_counter()
            page.wait_for_function(
                "(s) => document.querySelector('figure.chart[data-metric=\"loss\"]').dataset.lastStep === String(s)",
                arg=step,
                timeout=10_000,
                polling="raf",
            )
            timings.append(time.perf_counter() - acked)
    context.close()
    figure = round(statistics.median(timings) * 1000, 1)
    print(f"live update: ack to data-last-step, median {figure} ms, max {max(timings) * 1000:.1f} ms over {count}")
    return figure


def cli_start(grpc: str, runs: int) -> list[float]:
    """The median wall time (ms) of `trainledger --help` and of `trainledger runs list --address`."""
    medians = []
    for args in (["--help"], ["runs", "list", "--address", grpc]):
        timings = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([*trainledger(), *args], check=True, capture_output=True, env=environment())
            timings.append(time.perf_counter() - started)
        medians.append(statistics.median(timings) * 1000)
        print(f"trainledger {' '.join(args[:2])}: median {medians[-1]:.0f} ms over {runs}")
    return [round(m, 1) for m in medians]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1_000_000, help="steps of the run")
    parser.add_argument("--samples", type=int, default=200, help="chart requests for the p99")
    parser.add_argument("--page-loads", type=int, default=5, help="run page loads (median)")
    parser.add_argument("--live", type=int, default=20, help="live appends (median)")
    parser.add_argument("--cli-runs", type=int, default=7, help="runs of each CLI command (median)")
    args = parser.parse_args()
    if (reason := missing_browser()) is not None:
        sys.exit(f"bench/dashboard.py: {reason}")
    command = "python bench/dashboard.py " + " ".join(sys.argv[1:])
    figures: dict[str, float | str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        run_id = build(directory / "bench.db", args.steps)
        served = serve(directory / "bench.db", directory)
        try:
            figures["series_endpoint_p99_ms_1m_steps"] = series_endpoint(
                served.base, run_id, args.steps - 1, args.samples
            )
            with chromium() as browser:
                figures["run_page_ms_1m_steps"] = run_page(browser, served.base, run_id, args.page_loads)
                figures["live_update_ms"] = live_update(
                    browser, served.base, served.grpc, run_id, args.steps, args.live
                )
            help_ms, list_ms = cli_start(served.grpc, args.cli_runs)
            figures["cli_start_ms"] = max(help_ms, list_ms)
            figures["cli_help_ms"], figures["cli_runs_list_ms"] = help_ms, list_ms
        finally:
            served.stop()
    figures["command"] = command
    print(f"rerun with: {command}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
