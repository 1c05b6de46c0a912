// The run page's and the compare page's charts, drawn by uPlot (plot.js). The server has already
// reduced every series to about the figure's pixel width (min/max-preserving), so drawing is
// linear in the pixels, never in the run's length.
//
//   drawMetric(figure, view, handlers)  one metric of a run on a shared step range: a line per
//       (attempt, superseded) series (superseded ones faded and dashed) or, for a sparse metric,
//       evaluation points; attempt starts and checkpoints as markers over the plot
//       (`.marker.attempt[data-step]`, `.marker.checkpoint[data-step]`); an HTML legend
//       (`.legend-item.series[data-attempt][data-kind][data-points]`, then the marker kinds); axes
//       labelled "step" and the metric; EMA smoothing (raw line faint behind) and a log y scale
//       (data-smoothing, data-log-y); a cursor synchronized across the figures of one `view.sync`
//       key; dragging a range calls handlers.zoom(from, to), a double-click handlers.reset().
//   drawCompare(figure, view)  one line per run and a legend of the runs.
//   drawSpend, spendPoints, holdRow  the spend figure and the holds table (spendchart.js).

import {
  AXIS,
  alpha,
  colorOf,
  legendOf,
  logLabel,
  plotOf,
  readout,
  recordScale,
  tickLabel,
  valueAxis,
  valueText,
} from "./plot.js";

export { drawSpend, holdRow, holdsInto, spendPoints } from "./spendchart.js";

const STEP_INCRS = [];
for (let p = 1; p <= 1e12; p *= 10) STEP_INCRS.push(p, 2 * p, 5 * p);

/** W&B's smoothing: an exponential moving average, debiased at the start; nulls stay gaps. */
export function ema(values, weight) {
  if (!(weight > 0)) return values.slice();
  let last = 0;
  let n = 0;
  return values.map((v) => {
    if (v === null || v === undefined || !Number.isFinite(v)) return v;
    last = last * weight + (1 - weight) * v;
    n += 1;
    return last / (1 - Math.pow(weight, n));
  });
}

/** Series on their own steps -> uPlot's aligned columns: undefined where a series has no point. */
function align(seriesList) {
  const all = new Set();
  for (const s of seriesList) for (const step of s.steps) all.add(step);
  const xs = [...all].sort((p, q) => p - q);
  const at = new Map(xs.map((x, i) => [x, i]));
  const columns = seriesList.map((s) => {
    const column = new Array(xs.length).fill(undefined);
    s.steps.forEach((step, i) => {
      const v = s.values[i];
      column[at.get(step)] = v === null || v === undefined || !Number.isFinite(v) ? null : v;
    });
    return column;
  });
  return [xs, ...columns];
}

function positiveOnly(column) {
  return column.map((v) => (v === undefined ? undefined : v === null || v <= 0 ? null : v));
}

function stepAxis() {
  return { ...AXIS, label: "step", labelSize: 16, labelGap: 0, size: 36, incrs: STEP_INCRS, space: 70 };
}

/** Drag to zoom (a selection of at least 4 px) and double-click to reset, through `handlers`. */
function zoomHooks(handlers) {
  if (!handlers) return {};
  return {
    setSelect: [
      (u) => {
        const { left, width } = u.select;
        u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
        if (width < 4) return;
        const from = Math.floor(u.posToVal(left, "x"));
        const to = Math.ceil(u.posToVal(left + width, "x"));
        if (to > from) handlers.zoom(from, to);
      },
    ],
    ready: [(u) => u.over.addEventListener("dblclick", () => handlers.reset())],
  };
}

/** Markers over the plot area as elements, placed again after each redraw. */
function placeMarkers(u, markers) {
  let layer = u.over.querySelector(":scope > .markers");
  if (!layer) {
    layer = document.createElement("div");
    layer.className = "markers";
    u.over.appendChild(layer);
  }
  const { min, max } = u.scales.x;
  const nodes = [];
  for (const m of markers) {
    if (!(m.step >= min && m.step <= max)) continue;
    const node = document.createElement("div");
    node.className = m.className;
    node.style.left = `${u.valToPos(m.step, "x")}px`;
    node.style.setProperty("--color", m.color);
    node.title = m.title;
    for (const [key, value] of Object.entries(m.data)) node.dataset[key] = String(value);
    nodes.push(node);
  }
  layer.replaceChildren(...nodes);
}

/** The drawn point nearest the cursor: by step first, then by height. */
function nearestAt(u, described) {
  const idx = u.cursor.idx;
  if (idx === null || idx === undefined) return null;
  const top = u.cursor.top;
  for (let offset = 0; offset < 12; offset++) {
    let best = null;
    for (const i of offset ? [idx - offset, idx + offset] : [idx]) {
      if (i < 0 || i >= u.data[0].length) continue;
      for (const d of described) {
        const v = u.data[d.index][i];
        if (v === null || v === undefined) continue;
        const dy = Math.abs(u.valToPos(v, "y") - top);
        if (!best || dy < best.dy) best = { dy, step: u.data[0][i], value: v, series: d };
      }
    }
    if (best) return best;
  }
  return null;
}

function readoutHook(figure, described, describe) {
  const box = readout(figure);
  box.textContent = "";
  return [
    (u) => {
      const hit = u.cursor.left >= 0 ? nearestAt(u, described) : null;
      box.textContent = hit ? describe(hit) : "";
    },
  ];
}

/** uPlot series of a run's metric: raw (faint when smoothed) and smoothed lines, or points. */
function metricSeries(view, series) {
  const out = [{}];
  const columns = [];
  const described = [];
  const smooth = view.smoothing > 0 && !view.sparse;
  for (const s of series) {
    const color = colorOf(s.attempt);
    const opacity = s.superseded ? 0.4 : 1;
    const dash = s.superseded ? [4, 3] : undefined;
    const label = `attempt ${s.attempt}${s.superseded ? " (superseded)" : ""}`;
    described.push({ index: out.length, attempt: s.attempt, superseded: s.superseded });
    if (view.sparse) {
      const dense = s.steps.length > view.width / 6;
      out.push({
        label,
        stroke: alpha(color, 0.35 * opacity),
        width: 1,
        dash,
        points: {
          show: true,
          size: dense ? 3 : 6,
          fill: alpha(color, opacity),
          stroke: alpha(color, opacity),
          width: 0,
        },
      });
    } else {
      out.push({
        label,
        stroke: alpha(color, smooth ? 0.22 * opacity : opacity),
        width: 1.5,
        dash,
        points: { show: false },
      });
    }
    columns.push(s);
  }
  if (smooth) {
    for (const s of series) {
      const color = colorOf(s.attempt);
      out.push({
        label: `attempt ${s.attempt}${s.superseded ? " (superseded)" : ""} smoothed`,
        stroke: alpha(color, s.superseded ? 0.45 : 1),
        width: 1.8,
        dash: s.superseded ? [4, 3] : undefined,
        points: { show: false },
      });
      columns.push({ ...s, values: ema(s.values, view.smoothing) });
    }
  }
  return { uSeries: out, columns, described };
}

function metricLegend(view, series) {
  const items = series.map((s) => ({
    kind: `series ${s.superseded ? "superseded" : "live"}`,
    text: `attempt ${s.attempt}${s.superseded ? " (superseded)" : ""}`,
    swatch: `${view.sparse ? "point" : "line"}${s.superseded ? " dashed" : ""}`,
    color: colorOf(s.attempt),
    data: {
      attempt: s.attempt,
      kind: s.superseded ? "superseded" : "live",
      points: s.steps.length,
      metric: view.metric,
    },
  }));
  // Sparse points are evaluations, or for the system/ metrics a trainer samples, samples.
  const pointText = view.metric.startsWith("system/") ? "sample" : "evaluation point";
  if (view.sparse) items.push({ kind: "eval", text: pointText, swatch: "point", color: "#667085" });
  if (view.attempts.some((a) => a.step !== null && a.step !== undefined)) {
    items.push({ kind: "attempt-start", text: "attempt start", swatch: "vline", color: "#667085" });
  }
  if (view.checkpoints.length)
    items.push({ kind: "checkpoint", text: "checkpoint", swatch: "triangle", color: "#667085" });
  if (view.smoothing > 0 && !view.sparse)
    items.push({ kind: "smoothing", text: `smoothed (EMA ${view.smoothing})`, swatch: "line", color: "#344054" });
  return items;
}

function metricMarkers(view) {
  const markers = [];
  for (const a of view.attempts) {
    if (a.step === null || a.step === undefined) continue;
    markers.push({
      step: a.step,
      className: "marker attempt",
      color: colorOf(a.number),
      title: `attempt ${a.number} starts at step ${a.step}`,
      data: { step: a.step, attempt: a.number },
    });
  }
  for (const c of view.checkpoints) {
    markers.push({
      step: c.step,
      className: `marker checkpoint${c.superseded ? " superseded" : ""}`,
      color: colorOf(c.attempt),
      title: `checkpoint at step ${c.step} (attempt ${c.attempt}${c.superseded ? ", superseded" : ""})`,
      data: { step: c.step, attempt: c.attempt },
    });
  }
  return markers;
}

/**
 * One metric of a run. `view`: {metric, sparse, series: [{attempt, superseded, steps, values}],
 * x: [from, to] (the step range shared by the run's figures), attempts: [{number, step}],
 * checkpoints: [{step, attempt, superseded}], width, smoothing (0..0.99), logY, sync (a key)}.
 */
export function drawMetric(figure, view, handlers) {
  // Superseded first, so the live lines are drawn on top.
  const series = [...view.series].sort((p, q) => Number(q.superseded) - Number(p.superseded) || p.attempt - q.attempt);
  const { uSeries, columns, described } = metricSeries(view, series);
  let data = align(columns);
  if (view.logY) data = [data[0], ...data.slice(1).map(positiveOnly)];
  const shape = JSON.stringify([uSeries.map((s) => s.label), view.sparse, view.logY, view.smoothing > 0, view.sync]);
  const markers = metricMarkers(view);
  const current = { x: view.x, markers };
  figure.view = current;
  figure.dataset.label = `${view.metric} by step`;
  const describe = (hit) =>
    `step ${hit.step} · ${view.metric} ${valueText(view.metric, hit.value)} · attempt ${hit.series.attempt}` +
    (hit.series.superseded ? " (superseded)" : "");
  const build = () => ({
    series: uSeries,
    legend: { show: false },
    scales: {
      x: { time: false, range: () => figure.view.x },
      // A log scale fitted to the data (not widened to whole decades).
      y: view.logY
        ? { distr: 3, log: 10, range: (u, min, max) => (min > 0 && max > 0 ? [min / 1.1, max * 1.1] : [0.1, 10]) }
        : { auto: true },
    },
    axes: [stepAxis(), valueAxis(figure, view.metric, view.logY)],
    cursor: {
      y: false, // a step line only: a height means nothing on the other charts the cursor follows
      sync: view.sync ? { key: view.sync, setSeries: false } : undefined,
      drag: { x: true, y: false, setScale: false },
      points: { size: 6 },
    },
    hooks: {
      ...zoomHooks(handlers),
      setCursor: readoutHook(figure, described, describe),
      draw: [(u) => (placeMarkers(u, figure.view.markers), recordScale(figure, u))],
    },
  });
  const u = plotOf(figure, shape, view.width, build, data);
  u.setScale("x", { min: view.x[0], max: view.x[1] });
  legendOf(figure, metricLegend(view, series));
  figure.dataset.xLabel = "step";
  figure.dataset.yLabel = view.metric;
  figure.dataset.logY = String(Boolean(view.logY));
  figure.dataset.smoothing = String(view.smoothing || 0);
}

/** Each run's name for a legend; a name several runs share gets the run id's first 8 characters. */
function runNames(runs) {
  const count = new Map();
  for (const run of runs) count.set(run.name, (count.get(run.name) || 0) + 1);
  return runs.map((run) =>
    !run.name ? run.run_id.slice(0, 8) : count.get(run.name) > 1 ? `${run.name} ${run.run_id.slice(0, 8)}` : run.name,
  );
}

/** One metric of several runs: `view` {metric, width, runs: [{run_id, name, series}]}. */
export function drawCompare(figure, view) {
  const names = runNames(view.runs);
  const lines = view.runs.map((run, i) => {
    const parts = [...run.series].sort((p, q) => (p.steps[0] ?? 0) - (q.steps[0] ?? 0));
    return {
      run,
      name: names[i],
      color: colorOf(i + 1),
      attempts: parts.map((s) => s.attempt).join(","),
      steps: parts.flatMap((s) => s.steps),
      values: parts.flatMap((s) => s.values),
    };
  });
  const data = align(lines);
  const xs = data[0];
  const x = xs.length ? [xs[0], xs[xs.length - 1] > xs[0] ? xs[xs.length - 1] : xs[0] + 1] : [0, 1];
  figure.view = { x };
  figure.dataset.label = `${view.metric} by step, per run`;
  const described = lines.map((line, i) => ({ index: i + 1, line }));
  const describe = (hit) =>
    `${hit.series.line.name} · step ${hit.step} · ${view.metric} ${valueText(view.metric, hit.value)}`;
  const shape = JSON.stringify(lines.map((l) => l.run.run_id));
  const build = () => ({
    series: [
      {},
      ...lines.map((l) => ({
        label: l.name,
        stroke: l.color,
        width: 1.5,
        points: { show: false },
      })),
    ],
    legend: { show: false },
    scales: { x: { time: false, range: () => figure.view.x } },
    axes: [stepAxis(), valueAxis(figure, view.metric, false)],
    cursor: { y: false, drag: { x: false, y: false } },
    hooks: { setCursor: readoutHook(figure, described, describe), draw: [(u) => recordScale(figure, u)] },
  });
  plotOf(figure, shape, view.width, build, data);
  legendOf(
    figure,
    lines.map((l) => ({
      kind: "series live",
      href: `/runs/${encodeURIComponent(l.run.run_id)}`,
      text: l.name,
      swatch: "line",
      color: l.color,
      data: { runId: l.run.run_id, attempts: l.attempts, points: l.steps.length, metric: view.metric },
    })),
  );
  figure.dataset.xLabel = "step";
  figure.dataset.yLabel = view.metric;
}
