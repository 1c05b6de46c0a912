// The dashboard's browser side: an ES module, no build step; the charts are drawn by the vendored
// uPlot (chart.js, plot.js, spendchart.js; vendor/VENDOR.md).
//
// Pages are rendered by the server (services/web); this module, the entry the pages load, picks
// the page's module, which finds the figures the page holds and draws them (chart.js), then keeps
// them live:
//
// - Run page (main[data-page=run], runpage.js; metricchart.js, livepanels.js): every `figure.chart`
//   fetches its metric from /api/runs/{run}/chart at the figure's pixel width, all figures at once
//   (one request each, beside one /api/runs/{run} for the attempt and checkpoint markers and one
//   /spend for the spend figure). One EventSource on /api/runs/{run}/live: `steps` append points to
//   the live lines (redrawn at most once per animation frame; a line grown past twice the width is
//   refetched downsampled; a metric new to the page gets its figure), `checkpoint` adds a marker,
//   `state` and `spend` update the status, last-step and spend cells (a new attempt refetches the
//   charts: the steps it supersedes change). The run's charts share one step range and cursor;
//   dragging a range zooms all of them (each refetches that range at full width), a double-click
//   resets; a smoothing slider and a log-y toggle above them apply to all. The spend figure spans
//   the run's life and its holds table follows `spend`.
// - Runs page (runspage.js): one EventSource on /api/live; each `run` event updates that row's
//   cells and bar (a run opened meanwhile gets a row on top of an unfiltered first page).
// - Compare page (comparepage.js): each `figure.chart.compare` draws one line per run from
//   /api/compare; one EventSource on /api/live: a `run` event of a compared run fetches the lines
//   again and swaps the diff and verdict sections (the run page's livePanels), each at most once a
//   second.
//
// Nothing polls: every update is pushed by the server (server-sent events fed by the ledger's
// projector). Each chart figure gets data-ready="1" once first drawn and data-last-step as live
// steps arrive (the browser tests and bench/dashboard.py wait on these). What the pages share (the
// JSON API, texts, cells, scheduling, the lazily loaded chart.js) is in common.js.

import { markBar } from "./common.js";
import { comparePage } from "./comparepage.js";
import { runPage } from "./runpage.js";
import { runsPage } from "./runspage.js";

/** The dashboard's icon, unless the page names one (without it the browser asks for /favicon.ico). */
function icon() {
  if (document.querySelector('link[rel~="icon"]')) return;
  const link = document.createElement("link");
  link.rel = "icon";
  link.type = "image/svg+xml";
  link.href = "/static/favicon.svg";
  document.head.appendChild(link);
}

function start() {
  icon();
  const main = document.querySelector("main[data-page]");
  const page = main?.dataset.page;
  // Bars rendered by the server: mark those at or past their cap (the cell carries the figures).
  for (const cell of document.querySelectorAll('[data-field="spend"][data-cap-usd-micro]')) {
    const bar = cell.querySelector(".bar");
    const cap = cell.dataset.capUsdMicro;
    if (bar && cap) markBar(bar, Number(cell.dataset.committedUsdMicro), Number(cap));
  }
  if (page === "run") runPage(main);
  else if (page === "runs") runsPage();
  else if (page === "compare") comparePage();
}

start();
