// The dashboard's browser side: an ES module, no build step; the charts are drawn by the vendored
// uPlot (chart.js, plot.js, spendchart.js; vendor/VENDOR.md).
//
// Pages are rendered by the server (services/web); this module finds the figures the page holds
// and draws them (chart.js), then keeps them live:
//
// - Run page (main[data-page=run]): every `figure.chart` fetches its metric from
//   /api/runs/{run}/chart at the figure's pixel width, all figures at once (one request each,
//   beside one /api/runs/{run} for the attempt and checkpoint markers and one /spend for the spend
//   figure). One EventSource on /api/runs/{run}/live: `steps` append points to the live lines
//   (redrawn at most once per animation frame; a line grown past twice the width is refetched
//   downsampled; a metric new to the page gets its figure), `checkpoint` adds a marker, `state` and `spend` update the status, last-step and
//   spend cells (a new attempt refetches the charts: the steps it supersedes change). The run's
//   charts share one step range and cursor; dragging a range zooms all of them (each refetches that
//   range at full width), a double-click resets; a smoothing slider and a log-y toggle above them
//   apply to all. The spend figure spans the run's life and its holds table follows `spend`.
// - Runs page: one EventSource on /api/live; each `run` event updates that row's cells and bar (a
//   run opened meanwhile gets a row on top of an unfiltered first page).
// - Compare page: each `figure.chart.compare` draws one line per run from /api/compare; one
//   EventSource on /api/live: a `run` event of a compared run fetches the lines again and swaps
//   the diff and verdict sections (the run page's livePanels), each at most once a second.
//
// Nothing polls: every update is pushed by the server (server-sent events fed by the ledger's
// projector). Each chart figure gets data-ready="1" once first drawn and data-last-step as live
// steps arrive (the browser tests and bench/dashboard.py wait on these).

import { runColumns } from "./runcolumns.js";
import { ChartGroup } from "./chartgroup.js";

// chart.js is imported dynamically so that the page's API requests start at once, while it loads.
let charts = null;
const chartsLoaded = import("./chart.js").then((module) => (charts = module));

const MIN_WIDTH = 16;
const MAX_WIDTH = 4000;

/** A JSON document of the API, or an Error carrying the contract's {"error": {reason, message}}. */
async function api(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  const body = await response.json().catch(() => null);
  if (response.status === 401 && document.querySelector("main[data-page]")?.dataset.page !== "login") {
    // The token expired or was revoked while the page was open: ask for one again.
    location.assign(`/login?next=${encodeURIComponent(location.pathname + location.search)}`);
  }
  if (!response.ok) {
    const error = new Error(body?.error?.message || `${response.status} ${response.statusText}`);
    error.reason = body?.error?.reason || String(response.status);
    error.status = response.status;
    throw error;
  }
  return body;
}

/** Micro-dollars as trainledger.text.usd_text writes them: cents always, further digits only
 * where the amount has them: 12_500_000 -> "$12.50", 73_400 -> "$0.0734", 123 -> "$0.000123". */
export function usd(micro) {
  if (micro === null || micro === undefined) return "–";
  const sign = micro < 0 ? "-" : "";
  const abs = Math.abs(micro);
  const whole = Math.floor(abs / 1e6);
  const digits = String(abs - whole * 1e6).padStart(6, "0");
  return `${sign}$${whole.toLocaleString("en-US")}.${digits.slice(0, 2)}${digits.slice(2).replace(/0+$/, "")}`;
}

/** Micro-dollars, short, for an axis: "$12.5", "$0.04". */
function usdShort(micro) {
  const dollars = micro / 1e6;
  if (dollars === 0) return "$0";
  if (Math.abs(dollars) >= 1000) return `$${Number((dollars / 1000).toPrecision(3))}k`;
  return `$${Number(dollars.toPrecision(3))}`;
}

function figureWidth(figure) {
  const style = getComputedStyle(figure);
  const inner = figure.clientWidth - parseFloat(style.paddingLeft || "0") - parseFloat(style.paddingRight || "0");
  return Math.max(MIN_WIDTH, Math.min(MAX_WIDTH, Math.floor(inner || 800)));
}

function showError(figure, error) {
  let box = figure.querySelector(":scope > .error");
  if (!box) {
    box = document.createElement("p");
    box.className = "error";
    figure.appendChild(box);
  }
  box.textContent = error.reason ? `${error.reason}: ${error.message}` : String(error.message || error);
  figure.dataset.error = error.reason || "error";
}

function clearError(figure) {
  figure.querySelector(":scope > .error")?.remove();
  delete figure.dataset.error;
}

/** Calls `draw` at most once per animation frame however often it is scheduled. */
function frameScheduler(draw) {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      draw();
    });
  };
}

/** Redraws a figure when its width changes by more than a few pixels (no timers). */
function onResize(figure, redraw) {
  if (typeof ResizeObserver === "undefined") return;
  let last = figure.clientWidth;
  new ResizeObserver(() => {
    if (Math.abs(figure.clientWidth - last) < 8) return;
    last = figure.clientWidth;
    redraw();
  }).observe(figure);
}

function setField(name, text, root = document) {
  for (const cell of root.querySelectorAll(`[data-field="${name}"]`)) {
    if (cell.textContent !== text) cell.textContent = text;
  }
}

// A run's status as people read it (services/render/__init__.py status_text): a run opened with no attempt
// yet is not running.
function statusText(status, attempt) {
  return (status === "running" || status === "") && attempt === 0 ? "opened (no attempt yet)" : status;
}

function setStatus(status, attempt, root = document) {
  setField("status", statusText(status, attempt), root);
  for (const cell of root.querySelectorAll('[data-field="status"]')) cell.dataset.status = status;
}

// A run's progress against its plan as people read it (services/render/__init__.py progress_text):
// "step 400 of 1,000 (40.0%), 12.50 steps/s, ETA 2026-12-01 07:10:00 UTC".
function progressText(progress, running = true) {
  if (!progress || (progress.step == null && progress.max_steps == null)) return null;
  const count = (value) => value.toLocaleString("en-US");
  let text;
  if (progress.step == null) text = `no step yet (${count(progress.max_steps)} planned)`;
  else text = `step ${count(progress.step)}` + (progress.max_steps != null ? ` of ${count(progress.max_steps)}` : "");
  if (progress.fraction != null) text += ` (${(progress.fraction * 100).toFixed(1)}%)`;
  if (running && progress.steps_per_second != null) {
    const rate = progress.steps_per_second.toLocaleString("en-US", {
      minimumFractionDigits: 2,
      maximumFractionDigits: 2,
    });
    text += `, ${rate} steps/s`;
  }
  if (progress.eta) text += `, ETA ${progress.eta.slice(0, 19).replace("T", " ")} UTC`;
  return text;
}

/** Progress cells (a run's row, the run page's facts): the bar, the percentage and the text. */
function setProgress(root, progress, running = true) {
  if (!progress || progress.fraction == null) return;
  const width = Math.floor(progress.fraction * 100);
  for (const cell of root.querySelectorAll('[data-field="progress"]')) {
    let bar = cell.querySelector(".bar");
    if (!bar) {
      cell.textContent = "";
      bar = progressBar();
      const amount = document.createElement("span");
      amount.className = "amount";
      cell.append(bar, amount);
    }
    bar.querySelector(".fill").style.width = `${width}%`;
    bar.setAttribute("aria-valuenow", String(width));
    const amount = cell.querySelector(".amount");
    if (amount) amount.textContent = `${width}%`;
    const text = cell.querySelector(".progress-text");
    if (text) text.textContent = progressText(progress, running) ?? "";
    if (cell.dataset.maxSteps !== undefined) {
      cell.dataset.maxSteps = String(progress.max_steps);
      if (progress.steps_per_second != null) cell.dataset.rate = String(progress.steps_per_second);
      else delete cell.dataset.rate;
      if (progress.eta) cell.dataset.eta = progress.eta;
      else delete cell.dataset.eta;
    }
  }
}

/** Steps arrived on the run page: the progress fact moves to the last one, against the plan, at
 * the rate (and ETA) of the last state read; the next state brings a fresh rate. */
function advanceProgress(lastStep) {
  const cell = document.querySelector('dd[data-field="progress"][data-max-steps]');
  if (!cell) return;
  const max = Number(cell.dataset.maxSteps);
  if (!(max > 0)) return;
  setProgress(document, {
    max_steps: max,
    step: lastStep,
    fraction: Math.min(1, lastStep / max),
    steps_per_second: cell.dataset.rate ? Number(cell.dataset.rate) : null,
    eta: cell.dataset.eta || null,
  });
}

function progressBar() {
  const bar = document.createElement("div");
  bar.className = "bar";
  bar.setAttribute("role", "progressbar");
  bar.setAttribute("aria-valuemin", "0");
  bar.setAttribute("aria-valuemax", "100");
  const fill = document.createElement("div");
  fill.className = "fill";
  bar.appendChild(fill);
  return bar;
}

/** The attempt-start markers: a resumed attempt starts after its checkpoint's step. */
function attemptMarkers(state, series) {
  const firstStep = new Map();
  for (const s of series) {
    if (!s.steps.length) continue;
    const known = firstStep.get(s.attempt);
    if (known === undefined || s.steps[0] < known) firstStep.set(s.attempt, s.steps[0]);
  }
  return (state?.attempts ?? []).map((a) => {
    const resumed = a.resumed_from_step;
    const step = resumed !== null && resumed !== undefined ? resumed + 1 : firstStep.get(a.number) ?? null;
    return { number: a.number, step };
  });
}

/** One metric of a run: its data, zoom range and live tail. */
class MetricChart {
  constructor(figure, runId, runDoc, group) {
    this.figure = figure;
    this.group = group; // the run's charts: shared step range, zoom, smoothing and log scale
    this.runId = runId;
    this.metric = figure.dataset.metric;
    this.sparse = figure.dataset.sparse === "true";
    this.runDoc = runDoc; // a promise of /api/runs/{run}, shared by every figure of the page
    this.state = null;
    this.checkpoints = [];
    this.attempts = [];
    this.series = [];
    this.range = null; // {from, to} while zoomed
    this.width = figureWidth(figure);
    this.lastStep = null;
    this.fetches = 0; // the newest request wins
    this.during = null;
    this.refetching = false;
    this.schedule = frameScheduler(() => this.draw());
    onResize(figure, () => {
      this.width = figureWidth(figure);
      this.schedule();
    });
  }

  url() {
    const params = new URLSearchParams({ metric: this.metric, width: String(this.width) });
    if (this.range) {
      params.set("from", String(this.range.from));
      params.set("to", String(this.range.to));
    }
    return `/api/runs/${encodeURIComponent(this.runId)}/chart?${params}`;
  }

  async load() {
    const ticket = ++this.fetches;
    this.during = []; // steps that arrive while the line is fetched, applied again on top of it
    this.figure.setAttribute("aria-busy", "true");
    try {
      const [chart, doc] = await Promise.all([api(this.url()), this.runDoc, chartsLoaded]);
      if (ticket !== this.fetches) return;
      const metric = chart.metrics.find((m) => m.name === this.metric) ?? { sparse: this.sparse, series: [] };
      this.sparse = Boolean(metric.sparse);
      this.figure.dataset.sparse = String(this.sparse);
      this.figure.dataset.resolution = String(chart.resolution);
      this.series = metric.series.map((s) => ({ ...s, steps: [...s.steps], values: [...s.values] }));
      for (const event of this.during) this.extend(event);
      this.during = null;
      if (this.applied !== doc) this.useRunDoc(doc);
      this.attempts = attemptMarkers(this.state, this.range ? [] : this.series).map((a) => this.keepStart(a));
      if (this.lastStep === null) {
        for (const s of this.series) if (!s.superseded && s.steps.length) this.seen(s.steps[s.steps.length - 1]);
      }
      clearError(this.figure);
      this.draw();
      this.group.redraw(); // this chart's steps may move the range every chart shares
    } catch (error) {
      if (ticket === this.fetches) {
        this.during = null;
        showError(this.figure, error);
      }
    } finally {
      if (ticket === this.fetches) this.figure.removeAttribute("aria-busy");
    }
  }

  /** Fetches the line again with a new run document (a new attempt moved the markers). */
  refresh(runDoc) {
    this.runDoc = runDoc;
    this.starts = new Map();
    return this.load();
  }

  /** An attempt's first step as seen on the whole range, kept while zoomed in. */
  keepStart(marker) {
    this.starts ??= new Map();
    if (marker.step !== null) this.starts.set(marker.number, marker.step);
    return { number: marker.number, step: this.starts.get(marker.number) ?? null };
  }

  useRunDoc(doc) {
    this.applied = doc;
    this.state = doc.state;
    this.checkpoints = doc.checkpoints ?? [];
    // The run's last step as of the page's load; from then on the live steps events move it.
    if (this.lastStep === null && doc.state?.last_step !== null && doc.state?.last_step !== undefined) {
      this.lastStep = doc.state.last_step;
    }
  }

  seen(step) {
    if (this.lastStep === null || step > this.lastStep) this.lastStep = step;
  }

  /** The last step drawn: the run's (every chart of a run on the same steps) or the data's. */
  lastDrawn() {
    let last = this.lastStep ?? -Infinity;
    for (const s of this.series) if (s.steps.length) last = Math.max(last, s.steps[s.steps.length - 1]);
    return last === -Infinity ? null : last;
  }

  /** The first step drawn (null without data). */
  firstDrawn() {
    let first = Infinity;
    for (const s of this.series) if (s.steps.length) first = Math.min(first, s.steps[0]);
    return first === Infinity ? null : first;
  }

  draw() {
    if (!charts) return;
    charts.drawMetric(
      this.figure,
      {
        metric: this.metric,
        sparse: this.sparse,
        series: this.series,
        x: this.group.xRange(),
        width: this.width,
        attempts: this.attempts,
        checkpoints: this.checkpoints,
        smoothing: this.group.smoothing,
        logY: this.group.logY,
        sync: `run:${this.runId}`,
      },
      { zoom: (from, to) => this.group.zoom(from, to), reset: () => this.group.zoom(null, null) },
    );
    this.figure.classList.toggle("zoomed", this.range !== null);
    if (this.lastStep !== null) this.figure.dataset.lastStep = String(this.lastStep);
    this.figure.dataset.ready = "1";
  }

  /** A `steps` event: {attempt, steps, metrics: {name: [value or null per step]}}. */
  append(event) {
    if (!event.steps.length) return;
    this.lastStep = event.steps[event.steps.length - 1]; // after a resume it may be below the last
    this.during?.push(event);
    this.extend(event);
    this.schedule();
  }

  /** Appends an event's points to the live line of its attempt (those past its last step). */
  extend(event) {
    const values = event.metrics?.[this.metric];
    if (values && !this.range) {
      let line = this.series.find((s) => s.attempt === event.attempt && !s.superseded);
      if (!line) {
        line = { attempt: event.attempt, superseded: false, steps: [], values: [] };
        this.series.push(line);
      }
      const after = line.steps.length ? line.steps[line.steps.length - 1] : -Infinity;
      event.steps.forEach((step, i) => {
        const v = values[i];
        if (step > after && v !== null && v !== undefined) {
          line.steps.push(step);
          line.values.push(v);
        }
      });
      if (line.steps.length > 2 * this.width && !this.refetching) {
        this.refetching = true;
        this.load().finally(() => (this.refetching = false));
      }
    }
  }

  addCheckpoint(checkpoint) {
    const same = (c) => c.step === checkpoint.step && c.attempt === checkpoint.attempt;
    this.checkpoints = [...this.checkpoints.filter((c) => !same(c)), checkpoint];
    this.schedule();
  }
}

/** The spend figure of a run: committed and held spend over the run's life against the cap. */
class SpendChart {
  constructor(figure, runId) {
    this.figure = figure;
    this.runId = runId;
    this.doc = null;
    this.loading = null;
    this.again = false;
    this.schedule = frameScheduler(() => this.draw());
    onResize(figure, () => this.schedule());
  }

  /** Fetches the spend page; a reload asked for while one is in flight runs once after it. */
  reload() {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = Promise.all([api(`/api/runs/${encodeURIComponent(this.runId)}/spend?limit=200`), chartsLoaded])
      .then(([doc]) => {
        this.doc = doc;
        clearError(this.figure);
        this.draw();
      })
      .catch((error) => showError(this.figure, error))
      .finally(() => {
        this.loading = null;
        if (this.again) {
          this.again = false;
          this.reload();
        }
      });
    return this.loading;
  }

  draw() {
    const doc = this.doc;
    if (!doc || !charts) return;
    // The run's life: from its opening to its finish, or now while it runs.
    const opened = Date.parse(this.figure.dataset.openedAt || "") / 1000;
    const finished = Date.parse(this.figure.dataset.finishedAt || "") / 1000;
    const points = charts.spendPoints(doc);
    const start = Number.isFinite(opened) ? opened : (points[0]?.t ?? Date.now() / 1000 - 60);
    const end = Number.isFinite(finished) ? finished : Date.now() / 1000;
    charts.drawSpend(this.figure, {
      width: figureWidth(this.figure),
      start,
      end: Math.max(end, ...points.map((p) => p.t)),
      cap: doc.cap_usd_micro,
      points,
      usd,
      usdShort,
    });
    charts.holdsInto(doc, usd);
    let caption = this.figure.querySelector(":scope > .totals");
    if (!caption) {
      caption = document.createElement("div");
      caption.className = "totals";
      this.figure.appendChild(caption);
    }
    const parts = [`committed ${usd(doc.committed_usd_micro)}`, `pending ${usd(doc.pending_usd_micro)}`];
    parts.push(doc.cap_usd_micro === null ? "uncapped" : `cap ${usd(doc.cap_usd_micro)}`);
    if (doc.overrun_usd_micro > 0) parts.push(`overrun ${usd(doc.overrun_usd_micro)}`);
    caption.textContent = parts.join(" · ");
    this.figure.dataset.ready = "1";
  }
}

/** The spend cells' text, as the server renders it: "$1.00 + $0.40 presumed + $0.50 held of $5.00". */
function spendText(spend) {
  const presumed = spend.presumed_usd_micro ? ` + ${usd(spend.presumed_usd_micro)} presumed` : "";
  const held = spend.pending_usd_micro ? ` + ${usd(spend.pending_usd_micro)} held` : "";
  const cap = spend.cap_usd_micro === null || spend.cap_usd_micro === undefined ? "no cap" : usd(spend.cap_usd_micro);
  return `${usd(spend.committed_usd_micro)}${presumed}${held} of ${cap}`;
}

// The run page's panels rendered by the server (facts, metrics, attempts, checkpoints, datasets,
// spec, summary: each a [data-live] element) follow the same feed as its charts: a change the
// feed reports fetches the page again and swaps each panel whose content changed. A `state` or a
// `checkpoint` asks at once; a burst of steps at most once per PANEL_GAP_MS, and the last batch of a
// burst always gets its turn. The page is asked as of the last event the feed sent (min_position),
// so it never shows less than the feed did; a page that comes back after a newer event is dropped
// and asked again (at most STALE_DROPS_MAX times in a row, so a busy feed still gets its panels).
const PANEL_GAP_MS = 1000;
const STALE_DROPS_MAX = 2;

function livePanels(pageUrl = (at) => `${location.pathname}?min_position=${at}`) {
  let timer = null;
  let running = false;
  let again = false;
  let last = 0;
  let seen = 0;
  let drops = 0;
  const swap = async () => {
    timer = null;
    running = true;
    last = Date.now();
    const asked = seen;
    try {
      const url = pageUrl(asked);
      const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!response.ok) return;
      const text = await response.text();
      if (seen > asked && drops < STALE_DROPS_MAX) {
        drops += 1;
        again = true;
        return;
      }
      drops = 0;
      const fresh = new DOMParser().parseFromString(text, "text/html");
      for (const panel of document.querySelectorAll("main [data-live]")) {
        const next = fresh.querySelector(`main [data-live="${CSS.escape(panel.dataset.live)}"]`);
        if (!next || next.innerHTML === panel.innerHTML) continue;
        // A <details> the reader opened stays open.
        const opened = [...panel.querySelectorAll("details")].map((d) => d.open);
        const swapped = document.importNode(next, true);
        swapped.querySelectorAll("details").forEach((d, i) => (d.open = d.open || Boolean(opened[i])));
        panel.replaceWith(swapped);
      }
      document.querySelector("main").dataset.panelsAt = String(last);
    } catch {
      // The next change asks again; the page keeps what it shows.
    } finally {
      running = false;
      if (again) {
        again = false;
        schedule(false);
      }
    }
  };
  const saw = (position) => {
    if (Number.isSafeInteger(position) && position > seen) seen = position;
  };
  const schedule = (now, position = 0) => {
    saw(position);
    if (running) {
      again = true;
      return;
    }
    const wait = now ? 0 : Math.max(0, last + PANEL_GAP_MS - Date.now());
    if (timer !== null) {
      if (!now) return;
      clearTimeout(timer);
    }
    timer = setTimeout(swap, wait);
  };
  schedule.saw = saw; // a change the panels need not be asked for, but must not go back on
  return schedule;
}

/** A new metric's figure in its section (`training`, the first section.charts, or the System one,
 * made when it is the first system/ metric), in name order, as the server draws the page. */
function placeChart(training, runId, name) {
  let section = training;
  if (name.startsWith("system/")) {
    section = document.querySelector('section.charts[data-section="system"]');
    if (!section) {
      const wrap = Object.assign(document.createElement("div"), { className: "system-charts" });
      section = Object.assign(document.createElement("section"), { className: "charts" });
      section.dataset.section = "system";
      wrap.append(Object.assign(document.createElement("h2"), { textContent: "System" }), section);
      training.after(wrap);
    }
    const empty = training.querySelector("p.empty");
    if (empty) empty.textContent = "No training metrics recorded.";
  } else {
    training.querySelector("p.empty")?.remove();
  }
  section.querySelector("p.empty")?.remove();
  const figure = Object.assign(document.createElement("figure"), { className: "chart" });
  Object.assign(figure.dataset, { runId, metric: name, sparse: "false" });
  figure.append(Object.assign(document.createElement("figcaption"), { textContent: name }));
  const next = [...section.querySelectorAll("figure.chart")].find((f) => f.dataset.metric > name);
  section.insertBefore(figure, next ?? null);
  return figure;
}

function runPage(main) {
  const runId = main.dataset.runId;
  const path = `/api/runs/${encodeURIComponent(runId)}`;
  const runDoc = api(path);
  runDoc.catch(() => {}); // each figure reports the failure it sees
  const group = new ChartGroup();
  const metricCharts = [...document.querySelectorAll("figure.chart[data-metric]")].map(
    (figure) => new MetricChart(figure, runId, runDoc, group),
  );
  group.charts = metricCharts;
  const section = document.querySelector("section.charts");
  let controlled = Boolean(section && metricCharts.length);
  if (controlled) group.controls(section);
  // A metric first recorded after the page was drawn gets its chart, where a reload would put it.
  const addCharts = (event) => {
    const names = Object.keys(event.metrics ?? {}).filter((name) => !metricCharts.some((c) => c.metric === name));
    if (!section || !names.length) return;
    const doc = api(path);
    doc.catch(() => {}); // each figure reports the failure it sees
    for (const name of names.sort()) {
      const chart = new MetricChart(placeChart(section, runId, name), runId, doc, group);
      metricCharts.push(chart);
      chart.load();
    }
    if (!controlled) group.controls(section);
    controlled = true;
  };
  const spendFigure = document.querySelector("figure.spend-chart");
  const spend = spendFigure ? new SpendChart(spendFigure, spendFigure.dataset.runId || runId) : null;
  for (const chart of metricCharts) chart.load();
  spend?.reload();
  let attempts = null;
  const panels = livePanels();

  const source = new EventSource(`${path}/live`);
  source.addEventListener("steps", (message) => {
    const event = JSON.parse(message.data);
    for (const chart of metricCharts) chart.append(event);
    addCharts(event);
    if (event.steps.length) {
      const last = event.steps[event.steps.length - 1];
      setField("last_step", String(last));
      advanceProgress(last);
    }
    panels(false, Number(message.lastEventId));
  });
  source.addEventListener("checkpoint", (message) => {
    const checkpoint = JSON.parse(message.data);
    for (const chart of metricCharts) chart.addCheckpoint(checkpoint);
    panels(true, Number(message.lastEventId));
  });
  source.addEventListener("state", (message) => {
    const state = JSON.parse(message.data);
    setStatus(state.run.status, state.current_attempt ?? -1);
    if (state.last_step !== null && state.last_step !== undefined) setField("last_step", String(state.last_step));
    if (state.spend) updateSpendCells(document, state.spend);
    setProgress(document, state.progress, state.run.status === "running");
    setField("attempt", String(state.current_attempt));
    if (spendFigure && state.run.finished_at) spendFigure.dataset.finishedAt = state.run.finished_at;
    spend?.schedule(); // the spend figure runs to now while the run runs, to its finish after
    const count = state.attempts.length;
    if (attempts !== null && count !== attempts) {
      // A new attempt supersedes steps: every line is fetched again, with the new markers.
      const fresh = api(path);
      fresh.catch(() => {});
      for (const chart of metricCharts) chart.refresh(fresh);
    }
    attempts = count;
    panels(true, Number(message.lastEventId));
  });
  source.addEventListener("spend", (message) => {
    updateSpendCells(document, JSON.parse(message.data));
    if (document.querySelector("table.holds[data-partial]")) panels(false, Number(message.lastEventId));
    else panels.saw(Number(message.lastEventId));
    spend?.reload();
  });
}

/** The runs page's compare boxes: ticking one past the form's data-max is undone and said. */
function compareLimit() {
  const form = document.getElementById("compare");
  const max = Number(form?.dataset.max || 0);
  const note = document.getElementById("compare-limit");
  if (!max || !note) return;
  document.addEventListener("change", (event) => {
    const box = event.target;
    if (!(box instanceof HTMLInputElement) || box.name !== "run" || box.getAttribute("form") !== "compare") return;
    const ticked = document.querySelectorAll('input[name="run"][form="compare"]:checked').length;
    if (box.checked && ticked > max) {
      box.checked = false;
      note.textContent = `Compare takes at most ${max} runs at once: untick one first.`;
      note.hidden = false;
    } else if (ticked <= max) note.hidden = true;
  });
}

function runsPage() {
  compareLimit();
  const table = document.querySelector("table.runs");
  if (!table) return;
  // A run opened while the page is open is added on top, on the first page of an unfiltered list
  // (the newest runs come first); a filtered or searched list or a later page only updates its rows.
  const params = new URLSearchParams(location.search);
  const showsNewRuns = ["status", "name", "account", "page", "where", "order_by"].every((name) => !params.get(name));
  const showsRetracted = ["1", "true", "on"].includes(params.get("include_retracted") ?? "");
  const source = new EventSource("/api/live");
  source.addEventListener("run", (message) => {
    const run = JSON.parse(message.data);
    let row = table.querySelector(`tr[data-run-id="${CSS.escape(run.run_id)}"]`);
    if (run.retracted && !showsRetracted) {
      // Retracted while the page is open: hidden, as the list the server answers hides it.
      row?.remove();
      return;
    }
    if (!row) {
      if (!showsNewRuns) return;
      row = newRunRow(run);
      table.tBodies[0].prepend(row);
      table.tBodies[0].querySelector("tr.empty")?.remove();
    }
    setStatus(run.status, run.current_attempt, row);
    setField("attempt", String(run.current_attempt), row);
    setField("last_step", run.last_step === null || run.last_step === undefined ? "-" : String(run.last_step), row);
    setProgress(row, run.progress);
    updateSpendCells(row, run);
  });
}

/** A row of the runs table for a run the page has not listed, laid out as the server's rows. */
function newRunRow(run) {
  const row = document.createElement("tr");
  row.dataset.runId = run.run_id;
  const cell = (field, ...children) => {
    const td = document.createElement("td");
    if (field) td.dataset.field = field;
    td.append(...children);
    row.appendChild(td);
    return td;
  };
  const pick = document.createElement("input");
  Object.assign(pick, { type: "checkbox", name: "run", value: run.run_id });
  pick.setAttribute("form", "compare");
  pick.setAttribute("aria-label", `compare ${run.name || run.run_id.slice(0, 8)}`);
  cell("", pick);
  const link = document.createElement("a");
  link.href = `/runs/${encodeURIComponent(run.run_id)}`;
  link.textContent = run.name || run.run_id;
  cell("name", link);
  cell("status", statusText(run.status, run.current_attempt)).dataset.status = run.status;
  cell("attempt", String(run.current_attempt));
  cell("last_step", run.last_step === null || run.last_step === undefined ? "-" : String(run.last_step));
  cell("progress", "-");
  const bar = document.createElement("div");
  bar.className = "bar";
  const fill = document.createElement("div");
  fill.className = "fill";
  fill.style.width = "0%";
  bar.appendChild(fill);
  const amount = document.createElement("span");
  amount.className = "amount";
  const spend = cell("spend", bar, amount);
  if (run.cap_usd_micro !== null && run.cap_usd_micro !== undefined) {
    spend.dataset.capUsdMicro = String(run.cap_usd_micro);
  }
  cell("account", run.parent_account || "-");
  const opened = document.createElement("time");
  opened.dateTime = run.opened_at;
  opened.textContent = run.opened_at ? `${run.opened_at.slice(0, 19).replace("T", " ")} UTC` : "-";
  cell("opened_at", opened);
  runColumns(row, run, cell);
  row.classList.add("new");
  return row;
}

/** Spend cells (a run's row, the run page's facts): the amount text and the bar, red past the cap. */
function updateSpendCells(root, spend) {
  for (const cell of root.querySelectorAll('[data-field="spend"]')) {
    const text = spendText(spend);
    const label = cell.querySelector(".amount");
    if (label) {
      if (label.textContent !== text) label.textContent = text;
    } else if (!cell.querySelector(".bar") && cell.textContent !== text) cell.textContent = text;
    const cap = spend.cap_usd_micro;
    const capped = cap !== null && cap !== undefined;
    cell.dataset.committedUsdMicro = String(spend.committed_usd_micro);
    const bar = cell.querySelector(".bar");
    if (!bar) continue;
    const fill = bar.querySelector(".fill");
    // The bar is what the cap counts as spent: committed and what the ledger presumed.
    const committed = spend.committed_usd_micro + (spend.presumed_usd_micro || 0);
    const share = !capped ? 0 : cap > 0 ? (committed / cap) * 100 : committed > 0 ? 100 : 0;
    if (fill) fill.style.width = `${Math.min(100, Math.max(0, share)).toFixed(1)}%`;
    markBar(bar, committed, capped ? cap : null);
  }
}

/** A bar's class: "warn" from 80% of the cap, "over" past it. */
function markBar(bar, committed, cap) {
  bar.classList.toggle("over", cap !== null && committed > cap);
  bar.classList.toggle("warn", cap !== null && committed <= cap && committed >= cap * 0.8);
}

/** Runs `work` at most once per `gapMs`, never two at once; a call meanwhile gets one more turn. */
function throttled(work, gapMs) {
  let timer = null;
  let running = false;
  let again = false;
  let last = 0;
  const go = async () => {
    timer = null;
    running = true;
    last = Date.now();
    try {
      await work();
    } finally {
      running = false;
      if (again) {
        again = false;
        schedule();
      }
    }
  };
  const schedule = () => {
    if (running) again = true;
    else if (timer === null) timer = setTimeout(go, Math.max(0, last + gapMs - Date.now()));
  };
  return schedule;
}

/** A compare figure: one line per run of its metric (/api/compare at the figure's width); the
 * function it answers fetches and draws it again. */
function compareChart(figure) {
  const runs = (figure.dataset.runs || "").split(",").filter(Boolean);
  let doc = null;
  let ticket = 0;
  const draw = () => {
    if (!doc || !charts) return;
    charts.drawCompare(figure, { metric: doc.metric, width: figureWidth(figure), runs: doc.runs });
    figure.dataset.ready = "1";
  };
  onResize(figure, frameScheduler(draw));
  return async () => {
    const mine = ++ticket;
    const params = new URLSearchParams({ metric: figure.dataset.metric, width: String(figureWidth(figure)) });
    for (const run of runs) params.append("run", run);
    try {
      const [fresh] = await Promise.all([api(`/api/compare?${params}`), chartsLoaded]);
      if (mine !== ticket) return;
      doc = fresh;
      clearError(figure);
      draw();
    } catch (error) {
      if (mine === ticket) showError(figure, error);
    }
  };
}

/** The compare page: its charts, and, from the runs feed, a compared run's change redraws them and
 * swaps the diff and verdict sections (livePanels), each at most once per PANEL_GAP_MS. */
function comparePage() {
  const loads = [...document.querySelectorAll("figure.chart.compare")].map(compareChart);
  for (const load of loads) load();
  const runs = new Set((document.querySelector("form.compare")?.dataset.runs || "").split(",").filter(Boolean));
  if (!runs.size) return;
  const panels = livePanels(() => location.pathname + location.search);
  const redraw = throttled(() => Promise.all(loads.map((load) => load())), PANEL_GAP_MS);
  const source = new EventSource("/api/live");
  source.addEventListener("run", (message) => {
    if (!runs.has(JSON.parse(message.data).run_id)) return;
    redraw();
    panels(false);
  });
}

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
