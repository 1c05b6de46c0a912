// The dashboard's charts, drawn by uPlot (vendor/uPlot.iife.min.js, MIT, see vendor/VENDOR.md):
// no build step, the vendored file is loaded once by this module.
//
// A figure keeps one uPlot instance (`figure.plot`) and gets new data with setData; it is built
// again only when what it shows changes shape (its series, log scale, smoothing on or off). The
// server has already reduced every series to about the figure's pixel width (min/max-preserving),
// so drawing is linear in the pixels, never in the run's length.
//
//   drawMetric(figure, view, handlers)  one metric of a run on a shared step range: a line per
//       (attempt, superseded) series (superseded ones faded and dashed) or, for a sparse metric,
//       evaluation points; attempt starts and checkpoints as markers over the plot
//       (`.marker.attempt[data-step]`, `.marker.checkpoint[data-step]`); an HTML legend
//       (`.legend-item.series[data-attempt][data-kind][data-points]`, then the marker kinds); axes
//       labelled "step" and the metric; EMA smoothing (raw line faint behind) and a log y scale;
//       a cursor synchronized across the figures of one `view.sync` key; dragging a range calls
//       handlers.zoom(from, to), a double-click handlers.reset().
//   drawCompare(figure, view)  one line per run and a legend of the runs.
//   drawSpend(figure, view)  spend over the run's life: committed, committed + held, and the cap
//       as a labelled line when it is in range (otherwise as a number in the legend).
//
// The figure carries what is drawn for tests and tools: data-x-min/data-x-max (the x scale),
// data-y-ticks (the y tick labels, JSON), data-x-label/data-y-label, data-log-y, data-smoothing.

const ASSETS = "/static/vendor/";
export const HEIGHT = 240;
const PALETTE = ["#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#0891b2", "#dc2626", "#65a30d"];
const FONT = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
const LABEL_FONT = "600 11px system-ui, -apple-system, 'Segoe UI', sans-serif";
const AXIS = { stroke: "#667085", font: FONT, labelFont: LABEL_FONT, grid: { stroke: "#eef0f3", width: 1 }, ticks: { stroke: "#d0d5dd", width: 1, size: 4 } };
const STEP_INCRS = [];
for (let p = 1; p <= 1e12; p *= 10) STEP_INCRS.push(p, 2 * p, 5 * p);
// Seconds between time ticks: milliseconds (a run of a few seconds), seconds, minutes, hours, days.
const TIME_INCRS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];

function load(tag, attrs) {
  return new Promise((resolve, reject) => {
    const node = Object.assign(document.createElement(tag), attrs);
    node.onload = resolve;
    node.onerror = () => reject(new Error(`could not load ${attrs.src || attrs.href}`));
    document.head.appendChild(node);
  });
}

await Promise.all([
  globalThis.uPlot ? null : load("script", { src: ASSETS + "uPlot.iife.min.js" }),
  load("link", { rel: "stylesheet", href: ASSETS + "uPlot.min.css" }),
]);
const uPlot = globalThis.uPlot;

/** The color of the n-th attempt (1-based) or the n-th run of a comparison (0-based + 1). */
export function colorOf(n) {
  return PALETTE[(Math.max(1, n) - 1) % PALETTE.length];
}

function alpha(color, opacity) {
  return color + Math.round(opacity * 255).toString(16).padStart(2, "0");
}

/** How many decimals tell apart ticks `incr` apart: 0.0002 -> 4, 0.25 -> 2, 5 -> 0. */
export function decimalsFor(incr) {
  if (!(incr > 0) || !Number.isFinite(incr)) return 0;
  let d = Math.max(0, -Math.floor(Math.log10(incr) + 1e-9));
  while (d < 15) {
    const scaled = incr * Math.pow(10, d);
    if (Math.abs(scaled - Math.round(scaled)) <= 1e-6 * scaled) break;
    d++;
  }
  return d;
}

/** A tick label precise enough to differ from its neighbours `incr` away. */
export function tickLabel(v, incr) {
  if (v === null || v === undefined) return "";
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || (a < 1e-4 && incr < 1e-4))) {
    const digits = Math.max(0, Math.min(12, Math.floor(Math.log10(a)) - Math.floor(Math.log10(incr || a))));
    return v.toExponential(digits);
  }
  return v.toFixed(Math.min(12, decimalsFor(incr)));
}

/** Labels of a log axis, each precise enough on its own (ticks there are not evenly spaced). */
function logLabel(v) {
  if (v === null || v === undefined) return "";
  return Math.abs(v) >= 1e5 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(0) : String(Number(v.toPrecision(3)));
}

/** A value for the readout: up to 6 significant digits. */
export function fullNumber(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  return Math.abs(v) >= 1e6 || (Math.abs(v) < 1e-4 && v !== 0) ? v.toExponential(4) : String(Number(v.toPrecision(6)));
}

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

function yAxisSize(u, values, axisIdx, cycle) {
  if (cycle > 1) return u.axes[axisIdx]._size;
  const longest = Math.max(1, ...(values ?? []).map((v) => String(v).length));
  return Math.ceil(longest * 6.4) + 14;
}

function stepAxis() {
  return { ...AXIS, label: "step", labelSize: 16, labelGap: 0, size: 36, incrs: STEP_INCRS, space: 70 };
}

function valueAxis(figure, name, logY, format) {
  return {
    ...AXIS,
    label: name,
    labelSize: 16,
    labelGap: 2,
    size: yAxisSize,
    space: 28,
    values: (u, splits, axisIdx, space, incr) => {
      const labels = splits.map((v) => (format ? format(v, incr) : logY ? logLabel(v) : tickLabel(v, incr)));
      figure.dataset.yTicks = JSON.stringify(labels);
      return labels;
    },
  };
}

/** The figure's HTML legend: `items` [{text, swatch (CSS), marker, attrs}]. */
function legendOf(figure, items) {
  let legend = figure.querySelector(":scope > .legend");
  if (!legend) {
    legend = document.createElement("div");
    legend.className = "legend";
    figure.appendChild(legend);
  }
  legend.replaceChildren(
    ...items.map((item) => {
      const node = document.createElement(item.href ? "a" : "span");
      node.className = `legend-item ${item.kind ?? ""}`.trim();
      if (item.href) node.href = item.href;
      for (const [key, value] of Object.entries(item.data ?? {})) node.dataset[key] = String(value);
      const swatch = document.createElement("span");
      swatch.className = `swatch ${item.swatch ?? ""}`.trim();
      if (item.color) swatch.style.setProperty("--color", item.color);
      node.append(swatch, document.createTextNode(item.text));
      return node;
    }),
  );
}

function readout(figure) {
  let box = figure.querySelector(":scope > .readout");
  if (!box) {
    box = document.createElement("div");
    box.className = "readout";
    figure.appendChild(box);
  }
  return box;
}

/** The plot: built again when `shape` changes, otherwise given the new data and range. */
function plotOf(figure, shape, width, build, data) {
  let u = figure.plot;
  if (u && figure.dataset.shape === shape) {
    if (u.width !== width) u.setSize({ width, height: HEIGHT });
    u.setData(data);
    return u;
  }
  u?.destroy();
  figure.dataset.shape = shape;
  const options = build();
  u = new uPlot({ width, height: HEIGHT, ...options }, data, (self, init) => {
    const caption = figure.querySelector("figcaption");
    figure.insertBefore(self.root, caption ? caption.nextSibling : figure.firstChild);
    init();
  });
  u.root.querySelector(".u-over")?.setAttribute("aria-label", figure.dataset.label || "chart");
  figure.plot = u;
  return u;
}

function recordScale(figure, u) {
  const { min, max } = u.scales.x;
  figure.dataset.xMin = String(min);
  figure.dataset.xMax = String(max);
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
        points: { show: true, size: dense ? 3 : 6, fill: alpha(color, opacity), stroke: alpha(color, opacity), width: 0 },
      });
    } else {
      out.push({ label, stroke: alpha(color, smooth ? 0.22 * opacity : opacity), width: 1.5, dash, points: { show: false } });
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
    data: { attempt: s.attempt, kind: s.superseded ? "superseded" : "live", points: s.steps.length, metric: view.metric },
  }));
  if (view.sparse) items.push({ kind: "eval", text: "evaluation point", swatch: "point", color: "#667085" });
  if (view.attempts.some((a) => a.step !== null && a.step !== undefined)) {
    items.push({ kind: "attempt-start", text: "attempt start", swatch: "vline", color: "#667085" });
  }
  if (view.checkpoints.length) items.push({ kind: "checkpoint", text: "checkpoint", swatch: "triangle", color: "#667085" });
  if (view.smoothing > 0 && !view.sparse) items.push({ kind: "smoothing", text: `smoothed (EMA ${view.smoothing})`, swatch: "line", color: "#344054" });
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
    `step ${hit.step} · ${view.metric} ${fullNumber(hit.value)} · attempt ${hit.series.attempt}` +
    (hit.series.superseded ? " (superseded)" : "");
  const build = () => ({
    series: uSeries,
    legend: { show: false },
    scales: {
      x: { time: false, range: () => figure.view.x },
      // A log scale fitted to the data (not widened to whole decades).
      y: view.logY ? { distr: 3, log: 10, range: (u, min, max) => [min / 1.1, max * 1.1] } : { auto: true },
    },
    axes: [stepAxis(), valueAxis(figure, view.metric, view.logY)],
    cursor: {
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

/** One metric of several runs: `view` {metric, width, runs: [{run_id, name, series}]}. */
export function drawCompare(figure, view) {
  const lines = view.runs.map((run, i) => {
    const parts = [...run.series].sort((p, q) => (p.steps[0] ?? 0) - (q.steps[0] ?? 0));
    return {
      run,
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
  const describe = (hit) => `${hit.series.line.run.name || hit.series.line.run.run_id.slice(0, 8)} · step ${hit.step} · ${view.metric} ${fullNumber(hit.value)}`;
  const shape = JSON.stringify(lines.map((l) => l.run.run_id));
  const build = () => ({
    series: [{}, ...lines.map((l) => ({ label: l.run.name || l.run.run_id, stroke: l.color, width: 1.5, points: { show: false } }))],
    legend: { show: false },
    scales: { x: { time: false, range: () => figure.view.x } },
    axes: [stepAxis(), valueAxis(figure, view.metric, false)],
    cursor: { drag: { x: false, y: false } },
    hooks: { setCursor: readoutHook(figure, described, describe), draw: [(u) => recordScale(figure, u)] },
  });
  plotOf(figure, shape, view.width, build, data);
  legendOf(
    figure,
    lines.map((l) => ({
      kind: "series live",
      href: `/runs/${encodeURIComponent(l.run.run_id)}`,
      text: l.run.name || l.run.run_id.slice(0, 8),
      swatch: "line",
      color: l.color,
      data: { runId: l.run.run_id, attempts: l.attempts, points: l.steps.length, metric: view.metric },
    })),
  );
  figure.dataset.xLabel = "step";
  figure.dataset.yLabel = view.metric;
}

function timeLabel(seconds, spanS) {
  const d = new Date(seconds * 1000);
  const two = (n) => String(n).padStart(2, "0");
  if (spanS > 2 * 86400) return `${d.getUTCMonth() + 1}/${d.getUTCDate()} ${two(d.getUTCHours())}h`;
  const clock = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  if (spanS < 5) return `${clock}.${String(d.getUTCMilliseconds()).padStart(3, "0")}`;
  if (spanS < 600) return clock;
  return `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}`;
}

/** The cap as a dashed line with its amount, drawn over the plot. */
function capHook(figure, view) {
  return (u) => {
    if (!figure.view.capShown) return;
    const ctx = u.ctx;
    const y = Math.round(u.valToPos(view.cap, "y", true)) + 0.5;
    const { left, width } = u.bbox;
    ctx.save();
    ctx.strokeStyle = "#d92d20";
    ctx.lineWidth = 1.5 * uPlot.pxRatio;
    ctx.setLineDash([6 * uPlot.pxRatio, 4 * uPlot.pxRatio]);
    ctx.beginPath();
    ctx.moveTo(left, y);
    ctx.lineTo(left + width, y);
    ctx.stroke();
    ctx.fillStyle = "#d92d20";
    ctx.font = `${11 * uPlot.pxRatio}px system-ui, sans-serif`;
    ctx.textAlign = "right";
    ctx.fillText(`cap ${view.usd(view.cap)}`, left + width - 4 * uPlot.pxRatio, y - 4 * uPlot.pxRatio);
    ctx.restore();
  };
}

/**
 * Spend over the run's life: `view` {width, start, end (s), cap (micro or null), points: [{t (s),
 * committed, held}] (running totals, step-wise), usd, usdShort (micro -> text)}.
 */
export function drawSpend(figure, view) {
  const start = view.start;
  const end = Math.max(view.end, start + 0.001);
  const inside = view.points.filter((p) => p.t > start && p.t < end);
  const before = view.points.filter((p) => p.t <= start).at(-1) ?? { committed: 0, held: 0 };
  const last = view.points.filter((p) => p.t < end).at(-1) ?? before;
  const rows = [{ t: start, committed: before.committed, held: before.held }, ...inside, { t: end, committed: last.committed, held: last.held }];
  const data = [rows.map((r) => r.t), rows.map((r) => r.committed), rows.map((r) => r.committed + r.held)];
  const top = Math.max(0, ...data[2]);
  const capped = view.cap !== null && view.cap !== undefined;
  // The cap is drawn when it is near the spend (at most twice it); otherwise it is a number.
  const capShown = capped && top > 0 && view.cap <= top * 2;
  const yMax = Math.max(capShown ? view.cap : 0, top) * 1.1 || 1_000_000;
  figure.view = { x: [start, end], y: [0, yMax], capShown };
  figure.dataset.label = "spend over the run's life against the cap";
  const span = end - start;
  const build = () => ({
    series: [
      {},
      { label: "committed", stroke: "#2563eb", width: 2, fill: "#2563eb14", paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } },
      { label: "committed + held", stroke: "#dc6803", width: 1.5, dash: [5, 3], paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } },
    ],
    legend: { show: false },
    scales: { x: { time: false, range: () => figure.view.x }, y: { range: () => figure.view.y } },
    axes: [
      { ...AXIS, label: "time (UTC)", labelSize: 16, labelGap: 0, size: 36, space: 80, incrs: TIME_INCRS, values: (u, splits) => splits.map((s) => timeLabel(s, span)) },
      valueAxis(figure, "spend", false, (v) => view.usdShort(v)),
    ],
    cursor: { drag: { x: false, y: false }, points: { size: 6 } },
    hooks: {
      draw: [capHook(figure, view), (u) => recordScale(figure, u)],
      setCursor: [
        (u) => {
          const i = u.cursor.idx;
          readout(figure).textContent =
            i === null || i === undefined || u.cursor.left < 0
              ? ""
              : `${timeLabel(u.data[0][i], span)} · committed ${view.usd(u.data[1][i])} · with holds ${view.usd(u.data[2][i])}`;
        },
      ],
    },
  });
  const u = plotOf(figure, "spend", view.width, build, data);
  u.setScale("x", { min: start, max: end });
  const items = [
    { kind: "committed", text: "committed", swatch: "line", color: "#2563eb" },
    { kind: "held", text: "committed + held", swatch: "line dashed", color: "#dc6803" },
  ];
  if (capShown) items.push({ kind: "cap", text: `cap ${view.usd(view.cap)}`, swatch: "line dashed", color: "#d92d20" });
  else if (capped) items.push({ kind: "cap off-chart", text: `cap ${view.usd(view.cap)} (above the chart)`, swatch: "none", color: "#d92d20" });
  else items.push({ kind: "cap none", text: "no cap", swatch: "none", color: "#667085" });
  legendOf(figure, items);
  figure.dataset.capShown = capShown ? "line" : capped ? "number" : "none";
  figure.dataset.xStart = String(start);
  figure.dataset.xEnd = String(end);
}
