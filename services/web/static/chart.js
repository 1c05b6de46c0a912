// Hand-written SVG charts of the dashboard: no third-party code, no build step.
//
// A chart is drawn from plain data into an <svg> that replaces the figure's previous one, so a
// redraw (after a zoom, a refetch or live steps appended) is one function call over the current
// data. The server has already reduced every series to about the figure's pixel width
// (min/max-preserving), so drawing is linear in the pixels, never in the run's length.
//
//   drawMetric(figure, view, handlers)  one metric of a run: a path per (attempt, superseded)
//       series (`path.series.live` solid, `path.series.superseded` faded and dashed) or, for a
//       sparse metric, `g.series.points` of circles; `line.marker.attempt` where each attempt
//       started and `g.marker.checkpoint` at each checkpoint; a hover readout of the nearest
//       point; dragging a range calls handlers.zoom(from, to), a double-click handlers.reset().
//   drawCompare(figure, view)  one line per run (`path.series.live[data-run-id]`, the kept steps of
//       all its attempts) and a legend.
//   drawSpend(figure, view)  committed spend over time as a step line (`path.spend.committed`),
//       the cap as `line.cap`, holds as `rect.hold.<state>` (pending ones stacked on the
//       committed total at the right, the others as ticks along the bottom).
//
// Colors: one per attempt (or per run on compare), shared by every figure of a page.

const SVG = "http://www.w3.org/2000/svg";
export const HEIGHT = 220;
const MARGIN = { top: 10, right: 14, bottom: 24, left: 58 };
const PALETTE = ["#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#0891b2", "#dc2626", "#65a30d"];

/** The color of the n-th attempt (1-based) or the n-th run of a comparison (0-based + 1). */
export function colorOf(n) {
  return PALETTE[(Math.max(1, n) - 1) % PALETTE.length];
}

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (parent) parent.appendChild(node);
  return node;
}

/** About `count` round tick values (1, 2 or 5 times a power of ten) covering [lo, hi]. */
export function ticks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** A number short enough for an axis: 1.2k, 3.4M, 0.0012, 1e-7. */
export function shortNumber(v) {
  const a = Math.abs(v);
  if (a === 0) return "0";
  if (a >= 1e9) return trim(v / 1e9) + "G";
  if (a >= 1e6) return trim(v / 1e6) + "M";
  if (a >= 1e4) return trim(v / 1e3) + "k";
  if (a >= 1) return trim(v);
  if (a >= 1e-4) return String(Number(v.toPrecision(3)));
  return v.toExponential(1);
}

function trim(v) {
  return String(Number(v.toFixed(Math.abs(v) >= 100 ? 0 : 2)));
}

/** A value for the readout: up to 6 significant digits. */
export function fullNumber(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  return Math.abs(v) >= 1e6 || (Math.abs(v) < 1e-4 && v !== 0) ? v.toExponential(4) : String(Number(v.toPrecision(6)));
}

function scale(d0, d1, r0, r1) {
  const span = d1 - d0 || 1;
  const f = (v) => r0 + ((v - d0) / span) * (r1 - r0);
  f.invert = (p) => d0 + ((p - r0) / (r1 - r0)) * span;
  return f;
}

function valueRange(seriesList, extra = []) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of seriesList) {
    for (const v of s.values) {
      if (v === null || !Number.isFinite(v)) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  for (const v of extra) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo === Infinity) return [0, 1];
  if (lo === hi) return [lo - (Math.abs(lo) || 1) * 0.5, hi + (Math.abs(hi) || 1) * 0.5];
  const pad = (hi - lo) * 0.05;
  return [lo - pad, hi + pad];
}

function stepRange(seriesList, from, to) {
  let lo = from ?? Infinity;
  let hi = to ?? -Infinity;
  if (from === null || from === undefined || to === null || to === undefined) {
    for (const s of seriesList) {
      if (!s.steps.length) continue;
      if (from === null || from === undefined) lo = Math.min(lo, s.steps[0]);
      if (to === null || to === undefined) hi = Math.max(hi, s.steps[s.steps.length - 1]);
    }
  }
  if (lo === Infinity) return [0, 1];
  return lo === hi ? [lo - 0.5, hi + 0.5] : [lo, hi];
}

/** The "M x y L x y ..." of a polyline; a null value breaks the line. */
function linePath(steps, values, x, y) {
  let d = "";
  let pen = "M";
  for (let i = 0; i < steps.length; i++) {
    const v = values[i];
    if (v === null || !Number.isFinite(v)) {
      pen = "M";
      continue;
    }
    d += `${pen}${x(steps[i]).toFixed(1)} ${y(v).toFixed(1)}`;
    pen = "L";
  }
  return d;
}

function frame(figure, width) {
  for (const old of figure.querySelectorAll(":scope > svg, :scope > .legend")) old.remove();
  const svg = el("svg", { width, height: HEIGHT, viewBox: `0 0 ${width} ${HEIGHT}`, class: "plot", role: "img" });
  const label = figure.querySelector("figcaption")?.textContent || figure.dataset.metric || "chart";
  const spend = figure.classList.contains("spend-chart");
  svg.setAttribute("aria-label", spend ? "spend over time against the cap" : `${label} by step`);
  const caption = figure.querySelector("figcaption");
  figure.insertBefore(svg, caption ? caption.nextSibling : figure.firstChild);
  return svg;
}

function axes(svg, x, y, xTicks, yTicks, width, xLabel = shortNumber, yLabel = shortNumber) {
  const g = el("g", { class: "axes" }, svg);
  const bottom = HEIGHT - MARGIN.bottom;
  for (const t of yTicks) {
    const py = y(t).toFixed(1);
    el("line", { class: "grid", x1: MARGIN.left, x2: width - MARGIN.right, y1: py, y2: py }, g);
    el("text", { class: "tick y", x: MARGIN.left - 6, y: py, dy: "0.32em", "text-anchor": "end" }, g).textContent =
      yLabel(t);
  }
  for (const t of xTicks) {
    const px = x(t).toFixed(1);
    el("line", { class: "tickmark", x1: px, x2: px, y1: bottom, y2: bottom + 4 }, g);
    el("text", { class: "tick x", x: px, y: bottom + 16, "text-anchor": "middle" }, g).textContent = xLabel(t);
  }
  el("line", { class: "axis", x1: MARGIN.left, x2: width - MARGIN.right, y1: bottom, y2: bottom }, g);
  el("line", { class: "axis", x1: MARGIN.left, x2: MARGIN.left, y1: MARGIN.top, y2: bottom }, g);
}

function lowerBound(sorted, target) {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The point of `seriesList` nearest to pixel (px, py), candidates found by binary search. */
function nearest(seriesList, x, y, px, py) {
  const step = x.invert(px);
  let best = null;
  for (const s of seriesList) {
    const i = lowerBound(s.steps, step);
    for (let j = Math.max(0, i - 2); j < Math.min(s.steps.length, i + 2); j++) {
      const v = s.values[j];
      if (v === null || !Number.isFinite(v)) continue;
      const dx = x(s.steps[j]) - px;
      const dy = (y(v) - py) * 0.25; // mostly by step: the readout follows the pointer along x
      const d = dx * dx + dy * dy;
      if (!best || d < best.d) best = { d, series: s, step: s.steps[j], value: v };
    }
  }
  return best;
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

/** Hover readout and, with handlers, drag-to-zoom and double-click reset over the plot area. */
function interact(figure, svg, seriesList, x, y, width, describe, handlers) {
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const dot = el("circle", { class: "hover-dot", r: 3.5, cx: 0, cy: 0, visibility: "hidden" }, svg);
  const guide = el("line", {
    class: "hover-guide",
    y1: MARGIN.top,
    y2: HEIGHT - MARGIN.bottom,
    x1: 0,
    x2: 0,
    visibility: "hidden",
  }, svg);
  const band = el("rect", { class: "zoom-band", y: MARGIN.top, height: plotH, x: 0, width: 0, visibility: "hidden" }, svg);
  const overlay = el("rect", { class: "overlay", x: MARGIN.left, y: MARGIN.top, width: plotW, height: plotH }, svg);
  const box = readout(figure);
  box.textContent = "";
  let dragFrom = null;
  const local = (event) => {
    const r = svg.getBoundingClientRect();
    const px = Math.min(width - MARGIN.right, Math.max(MARGIN.left, ((event.clientX - r.left) * width) / r.width));
    return [px, ((event.clientY - r.top) * HEIGHT) / r.height];
  };
  overlay.addEventListener("pointermove", (event) => {
    const [px, py] = local(event);
    if (dragFrom !== null) {
      band.setAttribute("x", Math.min(dragFrom, px).toFixed(1));
      band.setAttribute("width", Math.abs(px - dragFrom).toFixed(1));
    }
    const hit = nearest(seriesList, x, y, px, py);
    if (!hit) return;
    dot.setAttribute("cx", x(hit.step).toFixed(1));
    dot.setAttribute("cy", y(hit.value).toFixed(1));
    dot.setAttribute("fill", hit.series.color);
    guide.setAttribute("x1", x(hit.step).toFixed(1));
    guide.setAttribute("x2", x(hit.step).toFixed(1));
    dot.setAttribute("visibility", "visible");
    guide.setAttribute("visibility", "visible");
    box.textContent = describe(hit);
  });
  overlay.addEventListener("pointerleave", () => {
    dot.setAttribute("visibility", "hidden");
    guide.setAttribute("visibility", "hidden");
    box.textContent = "";
  });
  if (!handlers) return;
  overlay.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    dragFrom = local(event)[0];
    overlay.setPointerCapture(event.pointerId);
    band.setAttribute("visibility", "visible");
    band.setAttribute("x", dragFrom.toFixed(1));
    band.setAttribute("width", 0);
  });
  overlay.addEventListener("pointerup", (event) => {
    if (dragFrom === null) return;
    const to = local(event)[0];
    const from = dragFrom;
    dragFrom = null;
    band.setAttribute("visibility", "hidden");
    if (Math.abs(to - from) < 4) return;
    const a = Math.floor(x.invert(Math.min(from, to)));
    const b = Math.ceil(x.invert(Math.max(from, to)));
    if (b > a) handlers.zoom(a, b);
  });
  overlay.addEventListener("dblclick", () => handlers.reset());
}

/**
 * One metric of a run. `view`: {metric, sparse, series: [{attempt, superseded, steps, values}],
 * from, to (the zoomed range, null for the whole run), attempts: [{number, step}],
 * checkpoints: [{step, attempt, superseded}], width}.
 */
export function drawMetric(figure, view, handlers) {
  const width = view.width;
  const svg = frame(figure, width);
  const series = view.series.map((s) => ({ ...s, color: colorOf(s.attempt) }));
  const [s0, s1] = stepRange(series, view.from, view.to);
  const [v0, v1] = valueRange(series);
  const x = scale(s0, s1, MARGIN.left, width - MARGIN.right);
  const y = scale(v0, v1, HEIGHT - MARGIN.bottom, MARGIN.top);
  const xTicks = ticks(s0, s1, Math.max(2, Math.floor(width / 90))).filter((t) => Number.isInteger(t));
  axes(svg, x, y, xTicks, ticks(v0, v1, 6), width);
  el("clipPath", { id: clipId(figure) }, el("defs", {}, svg)).appendChild(
    el("rect", {
      x: MARGIN.left,
      y: MARGIN.top - 4,
      width: width - MARGIN.left - MARGIN.right,
      height: HEIGHT - MARGIN.top - MARGIN.bottom + 8,
    }),
  );
  const plot = el("g", { "clip-path": `url(#${clipId(figure)})` }, svg);
  const inRange = (step) => step >= s0 && step <= s1;
  const markers = el("g", { class: "markers" }, plot);
  for (const a of view.attempts) {
    if (a.step === null || a.step === undefined || !inRange(a.step)) continue;
    const px = x(a.step).toFixed(1);
    const line = el("line", {
      class: "marker attempt",
      "data-step": a.step,
      "data-attempt": a.number,
      x1: px,
      x2: px,
      y1: MARGIN.top,
      y2: HEIGHT - MARGIN.bottom,
      stroke: colorOf(a.number),
    }, markers);
    el("title", {}, line).textContent = `attempt ${a.number} starts at step ${a.step}`;
  }
  for (const c of view.checkpoints) {
    if (!inRange(c.step)) continue;
    const px = x(c.step);
    const g = el("g", {
      class: `marker checkpoint${c.superseded ? " superseded" : ""}`,
      "data-step": c.step,
      "data-attempt": c.attempt,
      transform: `translate(${px.toFixed(1)} ${HEIGHT - MARGIN.bottom})`,
    }, markers);
    el("path", { d: "M0 0 L-4 -7 L4 -7 Z", fill: colorOf(c.attempt) }, g);
    el("title", {}, g).textContent = `checkpoint at step ${c.step} (attempt ${c.attempt}${c.superseded ? ", superseded" : ""})`;
  }
  // Superseded first, so the live lines are drawn on top.
  const ordered = [...series].sort((p, q) => Number(q.superseded) - Number(p.superseded) || p.attempt - q.attempt);
  for (const s of ordered) {
    const kind = s.superseded ? "superseded" : "live";
    if (view.sparse) {
      // Points, joined by a faint line; smaller where they crowd (an eval every few pixels).
      const dense = s.steps.length > width / 6;
      el("path", { class: `points-link ${kind}`, stroke: s.color, d: linePath(s.steps, s.values, x, y) }, plot);
      const g = el("g", {
        class: `series points ${kind}${dense ? " dense" : ""}`,
        "data-attempt": s.attempt,
        "data-metric": view.metric,
        "data-points": s.steps.length,
        fill: s.color,
      }, plot);
      for (let i = 0; i < s.steps.length; i++) {
        const v = s.values[i];
        if (v === null || !Number.isFinite(v)) continue;
        el("circle", { cx: x(s.steps[i]).toFixed(1), cy: y(v).toFixed(1), r: dense ? 1.3 : 2.6 }, g);
      }
    } else {
      el("path", {
        class: `series ${kind}`,
        "data-attempt": s.attempt,
        "data-metric": view.metric,
        "data-points": s.steps.length,
        stroke: s.color,
        d: linePath(s.steps, s.values, x, y),
      }, plot);
    }
  }
  const describe = (hit) =>
    `step ${hit.step} · ${view.metric} ${fullNumber(hit.value)} · attempt ${hit.series.attempt}` +
    (hit.series.superseded ? " (superseded)" : "");
  interact(figure, svg, series, x, y, width, describe, handlers);
}

let clipCounter = 0;
function clipId(figure) {
  if (!figure.dataset.clip) figure.dataset.clip = `clip${++clipCounter}`;
  return figure.dataset.clip;
}

/** One metric of several runs: `view` {metric, width, runs: [{run_id, name, series}]}. */
export function drawCompare(figure, view) {
  const width = view.width;
  const svg = frame(figure, width);
  // One line per run: its live line is the kept steps of each attempt, joined in step order.
  const all = view.runs.map((run, i) => {
    const parts = [...run.series].sort((p, q) => (p.steps[0] ?? 0) - (q.steps[0] ?? 0));
    return {
      run_id: run.run_id,
      name: run.name,
      attempts: parts.map((s) => s.attempt).join(","),
      steps: parts.flatMap((s) => s.steps),
      values: parts.flatMap((s) => s.values),
      color: colorOf(i + 1),
    };
  });
  const [s0, s1] = stepRange(all, null, null);
  const [v0, v1] = valueRange(all);
  const x = scale(s0, s1, MARGIN.left, width - MARGIN.right);
  const y = scale(v0, v1, HEIGHT - MARGIN.bottom, MARGIN.top);
  axes(svg, x, y, ticks(s0, s1, Math.max(2, Math.floor(width / 90))).filter((t) => Number.isInteger(t)), ticks(v0, v1, 6), width);
  for (const s of all) {
    el("path", {
      class: "series live",
      "data-run-id": s.run_id,
      "data-attempts": s.attempts,
      "data-metric": view.metric,
      "data-points": s.steps.length,
      stroke: s.color,
      d: linePath(s.steps, s.values, x, y),
    }, svg);
  }
  const legend = document.createElement("div");
  legend.className = "legend";
  view.runs.forEach((run, i) => {
    const item = document.createElement("a");
    item.className = "legend-item";
    item.href = `/runs/${encodeURIComponent(run.run_id)}`;
    item.dataset.runId = run.run_id;
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = colorOf(i + 1);
    item.append(swatch, document.createTextNode(run.name || run.run_id.slice(0, 8)));
    legend.appendChild(item);
  });
  figure.appendChild(legend);
  const describe = (hit) =>
    `${hit.series.name || hit.series.run_id.slice(0, 8)} · step ${hit.step} · ${view.metric} ${fullNumber(hit.value)}`;
  interact(figure, svg, all, x, y, width, describe, null);
}

const TIME_STEPS_MIN = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080, 20160, 43200];

/** About `count` ticks on round UTC minutes, hours or days between t0 and t1 (ms). */
function timeTicksOf(t0, t1, count) {
  const wanted = (t1 - t0) / 60e3 / Math.max(1, count);
  const step = (TIME_STEPS_MIN.find((m) => m >= wanted) ?? TIME_STEPS_MIN[TIME_STEPS_MIN.length - 1]) * 60e3;
  const out = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) out.push(t);
  return out;
}

/**
 * Spend over time: `view` {width, now (ms), cap (micro or null), hours: [{t (ms), committed}],
 * holds: [{state, amount, start (ms), end (ms or null)}], usd (micro -> text)}.
 */
export function drawSpend(figure, view) {
  const width = view.width;
  const svg = frame(figure, width);
  const points = [];
  let total = 0;
  for (const h of view.hours) {
    total += h.committed;
    points.push({ t: h.t, v: total });
  }
  const pending = view.holds.filter((h) => h.state === "pending");
  const pendingTotal = pending.reduce((sum, h) => sum + h.amount, 0);
  // From the first hour or hold to now, at least the last quarter hour.
  const t1 = view.now;
  const t0 = Math.min(t1 - 15 * 60e3, ...points.map((p) => p.t), ...view.holds.map((h) => h.start));
  const top = Math.max(total + pendingTotal, view.cap ?? 0) || 1_000_000; // $1 while nothing is spent
  const x = scale(t0, t1, MARGIN.left, width - MARGIN.right);
  const y = scale(0, top * 1.08, HEIGHT - MARGIN.bottom, MARGIN.top);
  const span = t1 - t0;
  const timeLabel = (t) => {
    const d = new Date(t);
    const two = (n) => String(n).padStart(2, "0");
    return span > 2 * 86400e3 ? `${d.getUTCMonth() + 1}/${d.getUTCDate()}` : `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}`;
  };
  const timeTicks = timeTicksOf(t0, t1, Math.max(2, Math.floor(width / 110)));
  axes(svg, x, y, timeTicks, ticks(0, top * 1.08, 4), width, timeLabel, (v) => view.usdShort(v));
  if (points.length) {
    // A step line: each hour's spend lands at the hour's end (or now, for the current hour).
    let d = `M${x(points[0].t).toFixed(1)} ${y(0).toFixed(1)}`;
    let last = 0;
    for (const p of points) {
      const at = x(Math.min(p.t + 3600e3, view.now)).toFixed(1);
      d += `L${at} ${y(last).toFixed(1)}L${at} ${y(p.v).toFixed(1)}`;
      last = p.v;
    }
    d += `L${x(view.now).toFixed(1)} ${y(last).toFixed(1)}`;
    el("path", { class: "spend committed", d }, svg);
  }
  if (view.cap !== null && view.cap !== undefined) {
    const py = y(view.cap).toFixed(1);
    el("line", { class: "cap", x1: MARGIN.left, x2: width - MARGIN.right, y1: py, y2: py }, svg);
    const label = el("text", { class: "cap-label", x: width - MARGIN.right - 4, y: Number(py) - 4, "text-anchor": "end" }, svg);
    label.textContent = `cap ${view.usd(view.cap)}`;
  }
  let base = total;
  for (const h of pending) {
    const x0 = x(h.start);
    const w = Math.max(6, x(view.now) - x0);
    const rect = el("rect", {
      class: "hold pending",
      x: (x(view.now) - w).toFixed(1),
      width: w.toFixed(1),
      y: y(base + h.amount).toFixed(1),
      height: Math.max(1, y(base) - y(base + h.amount)).toFixed(1),
    }, svg);
    el("title", {}, rect).textContent = `pending hold ${view.usd(h.amount)}`;
    base += h.amount;
  }
  for (const h of view.holds) {
    if (h.state === "pending") continue;
    const at = x(h.end ?? h.start);
    const rect = el("rect", {
      class: `hold ${h.state}`,
      x: (at - 1).toFixed(1),
      width: 2,
      y: HEIGHT - MARGIN.bottom - 8,
      height: 8,
    }, svg);
    el("title", {}, rect).textContent = `${h.state} hold ${view.usd(h.amount)}`;
  }
}
