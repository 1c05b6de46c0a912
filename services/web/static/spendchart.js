// The run's spend figure, drawn by uPlot (plot.js): committed and committed + held spend over the
// run's life (from its opening to its finish, or now), the y axis fitted to the spend, and the cap
// as a labelled line when it is near the spend, otherwise a number in the legend
// (data-cap-shown: line, number or none). Also the running totals drawn, rebuilt from the holds,
// and a row of the run page's holds table as the server renders it (services/web/holds.py).

import { AXIS, legendOf, plotOf, readout, recordScale, uPlot, valueAxis } from "./plot.js";

// Seconds between time ticks: milliseconds (a run of a few seconds), seconds, minutes, hours, days.
const TIME_INCRS = [
  0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200,
  10800, 21600, 43200, 86400, 172800, 604800,
];

/** A UTC time as precise as ticks `incrS` seconds apart need: 07:49:06.500, 07:49:06, 07:49, 12/2 06h, 12/2. */
function timeLabel(seconds, incrS) {
  const d = new Date(Math.round(seconds * 1000));
  const two = (n) => String(n).padStart(2, "0");
  const day = `${d.getUTCMonth() + 1}/${d.getUTCDate()}`;
  if (incrS >= 86400) return day;
  if (incrS >= 3 * 3600) return `${day} ${two(d.getUTCHours())}h`;
  const minutes = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}`;
  if (incrS >= 60) return minutes;
  const clock = `${minutes}:${two(d.getUTCSeconds())}`;
  if (incrS >= 1) return clock;
  const digits = Math.min(3, Math.max(1, Math.ceil(-Math.log10(incrS) - 1e-9)));
  return `${clock}.${String(d.getUTCMilliseconds()).padStart(3, "0").slice(0, digits)}`;
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
  const rows = [
    { t: start, committed: before.committed, held: before.held },
    ...inside,
    { t: end, committed: last.committed, held: last.held },
  ];
  const data = [rows.map((r) => r.t), rows.map((r) => r.committed), rows.map((r) => r.committed + r.held)];
  const top = Math.max(0, ...data[2]);
  const capped = view.cap !== null && view.cap !== undefined;
  // The cap is drawn when it is near the spend (at most twice it); otherwise it is a number.
  const capShown = capped && top > 0 && view.cap <= top * 2;
  const yMax = Math.max(capShown ? view.cap : 0, top) * 1.1 || 1_000_000;
  figure.view = { x: [start, end], y: [0, yMax], capShown };
  figure.dataset.label = "spend over the run's life against the cap";
  const build = () => ({
    series: [
      {},
      {
        label: "committed",
        stroke: "#2563eb",
        width: 2,
        fill: "#2563eb14",
        paths: uPlot.paths.stepped({ align: 1 }),
        points: { show: false },
      },
      {
        label: "committed + held",
        stroke: "#dc6803",
        width: 1.5,
        dash: [5, 3],
        paths: uPlot.paths.stepped({ align: 1 }),
        points: { show: false },
      },
    ],
    legend: { show: false },
    scales: { x: { time: false, range: () => figure.view.x }, y: { range: () => figure.view.y } },
    axes: [
      {
        ...AXIS,
        label: "time (UTC)",
        labelSize: 16,
        labelGap: 0,
        size: 36,
        space: 80,
        incrs: TIME_INCRS,
        values: (u, splits, axisIdx, space, incr) => {
          const labels = splits.map((s) => timeLabel(s, incr));
          figure.dataset.xTicks = JSON.stringify(labels);
          return labels;
        },
      },
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
              : `${timeLabel(u.data[0][i], 0.001)} · committed ${view.usd(u.data[1][i])} · with holds ${view.usd(u.data[2][i])}`;
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
  else if (capped)
    items.push({
      kind: "cap off-chart",
      text: `cap ${view.usd(view.cap)} (above the chart)`,
      swatch: "none",
      color: "#d92d20",
    });
  else items.push({ kind: "no-cap", text: "no cap", swatch: "none", color: "#667085" });
  legendOf(figure, items);
  figure.dataset.capShown = capShown ? "line" : capped ? "number" : "none";
  figure.dataset.xStart = String(start);
  figure.dataset.xEnd = String(end);
}

/** A row of the holds table, as the server renders it (services/web/holds.py). */
export function holdRow(r, usd) {
  const row = document.createElement("tr");
  row.dataset.state = r.state;
  const time = (text) => (text ? `${text.slice(0, 19).replace("T", " ")} UTC` : "-");
  const settled = ["committed", "charged", "settled"].includes(r.state);
  for (const text of [
    r.state,
    r.kind,
    usd(r.amount_usd_micro),
    settled ? usd(r.actual_usd_micro) : "-",
    String(r.attempt),
    time(r.reserved_at),
    time(r.settled_at),
    r.reason || "-",
  ]) {
    const cell = document.createElement("td");
    cell.textContent = text;
    row.appendChild(cell);
  }
  return row;
}

// How many holds other than the pending the table shows unfolded (services/web/holds.py).
const HOLDS_NEWEST = 20;

/** The holds table from the spend document, as the server renders it: the pending first, then
 * the newest HOLDS_NEWEST others, newest first; the older folded under a count (kept open when
 * the reader opened it). */
export function holdsInto(doc, usd) {
  const table = document.querySelector("table.holds");
  // More holds than the document's page: the server renders the newest (a live panel).
  if (!table || table.dataset.partial || doc.next_page) return;
  const newest = [...doc.reservations].reverse();
  const pending = newest.filter((r) => r.state === "pending");
  const others = newest.filter((r) => r.state !== "pending");
  const older = others.slice(HOLDS_NEWEST);
  table.tBodies[0].replaceChildren(...[...pending, ...others.slice(0, HOLDS_NEWEST)].map((r) => holdRow(r, usd)));
  table.hidden = !newest.length;
  const none = document.querySelector("p.holds-empty");
  if (none) none.hidden = newest.length > 0;
  let count = document.querySelector("p.holds-count");
  if (older.length) {
    if (!count) {
      count = document.createElement("p");
      count.className = "holds-count";
      table.before(count);
    }
    count.textContent = `${newest.length} holds, ${pending.length} pending: the pending and the newest ${HOLDS_NEWEST} shown`;
  } else count?.remove();
  let folded = document.querySelector("details.holds-more");
  if (!older.length) {
    folded?.remove();
    return;
  }
  if (!folded) {
    folded = document.createElement("details");
    folded.className = "holds-more";
    const rest = document.createElement("table");
    rest.className = "holds-older";
    rest.append(table.tHead.cloneNode(true), document.createElement("tbody"));
    folded.append(document.createElement("summary"), rest);
    table.after(folded);
  }
  folded.querySelector("summary").textContent = `${older.length} older holds`;
  folded.querySelector("tbody").replaceChildren(...older.map((r) => holdRow(r, usd)));
}

/** Running totals of committed and held spend at each change, from the holds in log order;
 * what the holds do not explain (adjustments to a bill) is committed at the last change. */
export function spendPoints(doc) {
  const changes = [];
  const time = (text) => (text ? Date.parse(text) / 1000 : null);
  for (const r of doc.reservations) {
    const reserved = time(r.reserved_at);
    const settled = time(r.settled_at);
    if (r.kind === "charge") {
      changes.push({ t: reserved, committed: r.actual_usd_micro || r.amount_usd_micro, held: 0 });
      continue;
    }
    if (r.state === "refused" || reserved === null) continue;
    changes.push({ t: reserved, committed: 0, held: r.amount_usd_micro });
    if (settled !== null) {
      const committed = r.state === "committed" ? r.actual_usd_micro : 0;
      changes.push({ t: settled, committed, held: -r.amount_usd_micro });
    }
  }
  changes.sort((p, q) => p.t - q.t);
  let committed = 0;
  let held = 0;
  const points = changes.map((c) => {
    committed += c.committed;
    held += c.held;
    return { t: c.t, committed, held: Math.max(0, held) };
  });
  const missing = doc.committed_usd_micro - committed;
  if (missing !== 0 && points.length) points[points.length - 1].committed += missing;
  else if (missing !== 0) points.push({ t: Date.now() / 1000, committed: doc.committed_usd_micro, held: 0 });
  return points;
}
