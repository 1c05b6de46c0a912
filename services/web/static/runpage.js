// The run page (main[data-page=run]): its metric charts (metricchart.js), its spend figure, and
// the facts and panels (livepanels.js) kept live from /api/runs/{run}/live.

import { ChartGroup } from "./chartgroup.js";
import {
  advanceProgress,
  api,
  charts,
  chartsLoaded,
  clearError,
  figureWidth,
  frameScheduler,
  onResize,
  setField,
  setProgress,
  setStatus,
  showError,
  updateSpendCells,
  usd,
  usdShort,
} from "./common.js";
import { livePanels } from "./livepanels.js";
import { MetricChart } from "./metricchart.js";

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

export function runPage(main) {
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
