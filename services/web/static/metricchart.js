// One metric chart of the run page (runpage.js): its line fetched at the figure's pixel width,
// the live steps appended, drawn by chart.js in its ChartGroup (chartgroup.js).

import { api, charts, chartsLoaded, clearError, figureWidth, frameScheduler, onResize, showError } from "./common.js";

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
export class MetricChart {
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
