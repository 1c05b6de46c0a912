// What the dashboard's figures share, on uPlot (vendor/uPlot.iife.min.js, MIT, see
// vendor/VENDOR.md; no build step): the vendored file is loaded once by this module, which
// exports it with the colors, the axes, tick labels precise to their increment, the HTML legend,
// the hover readout and plotOf, which keeps one uPlot instance per figure (`figure.plot`) and gives
// it new data with setData, building it again only when what it shows changes shape.
//
// A figure carries what is drawn for tests and tools: data-x-min/data-x-max (the x scale),
// data-y-ticks (the y tick labels, JSON), data-x-label/data-y-label.

const ASSETS = "/static/vendor/";
export const HEIGHT = 240;
const PALETTE = ["#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#0891b2", "#dc2626", "#65a30d"];
const FONT = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
const LABEL_FONT = "600 11px system-ui, -apple-system, 'Segoe UI', sans-serif";
export const AXIS = {
  stroke: "#667085",
  font: FONT,
  labelFont: LABEL_FONT,
  grid: { stroke: "#eef0f3", width: 1 },
  ticks: { stroke: "#d0d5dd", width: 1, size: 4 },
};

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
export const uPlot = globalThis.uPlot;

/** The color of the n-th attempt (1-based) or the n-th run of a comparison (0-based + 1). */
export function colorOf(n) {
  return PALETTE[(Math.max(1, n) - 1) % PALETTE.length];
}

export function alpha(color, opacity) {
  return (
    color +
    Math.round(opacity * 255)
      .toString(16)
      .padStart(2, "0")
  );
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
export function logLabel(v) {
  if (v === null || v === undefined) return "";
  return Math.abs(v) >= 1e5 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(0) : String(Number(v.toPrecision(3)));
}

/** A value for the readout: up to 6 significant digits. */
export function fullNumber(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  return Math.abs(v) >= 1e6 || (Math.abs(v) < 1e-4 && v !== 0) ? v.toExponential(4) : String(Number(v.toPrecision(6)));
}

// A metric named *_bytes (system/process_rss_bytes) reads in B/KB/MB/GB (powers of 1000), as the
// server's tables (services.render.tables.metric_value).
const BYTE_UNITS = ["B", "KB", "MB", "GB", "TB", "PB"];

export function isBytes(name) {
  return typeof name === "string" && name.endsWith("_bytes");
}

/** A byte count to 4 significant digits in the unit that fits it: "49.81 MB". */
export function byteText(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  let scaled = v;
  let unit = 0;
  while (unit < BYTE_UNITS.length - 1 && Math.abs(Number(scaled.toPrecision(4))) >= 1000) {
    scaled /= 1000;
    unit += 1;
  }
  return `${Number(scaled.toPrecision(4))} ${BYTE_UNITS[unit]}`;
}

/** A metric's value for a readout: bytes in their unit, other values as fullNumber. */
export function valueText(name, v) {
  return isBytes(name) ? byteText(v) : fullNumber(v);
}

/** The tick labels of a byte axis, all in the unit of the largest tick, precise to `incr`. */
function byteTicks(splits, incr, logY) {
  if (logY) return splits.map((v) => (v === null || v === undefined ? "" : byteText(v)));
  const top = Math.max(0, ...splits.map((v) => Math.abs(v ?? 0)));
  let unit = 0;
  while (unit < BYTE_UNITS.length - 1 && top >= 1000 ** (unit + 1)) unit += 1;
  const size = 1000 ** unit;
  const digits = Math.min(12, decimalsFor(incr / size));
  return splits.map((v) => (v === null || v === undefined ? "" : `${(v / size).toFixed(digits)} ${BYTE_UNITS[unit]}`));
}

function yAxisSize(u, values, axisIdx, cycle) {
  if (cycle > 1) return u.axes[axisIdx]._size;
  const longest = Math.max(1, ...(values ?? []).map((v) => String(v).length));
  return Math.ceil(longest * 6.4) + 14;
}

export function valueAxis(figure, name, logY, format) {
  return {
    ...AXIS,
    label: name,
    labelSize: 16,
    labelGap: 2,
    size: yAxisSize,
    space: 28,
    values: (u, splits, axisIdx, space, incr) => {
      const labels =
        !format && isBytes(name)
          ? byteTicks(splits, incr, logY)
          : splits.map((v) => (format ? format(v, incr) : logY ? logLabel(v) : tickLabel(v, incr)));
      figure.dataset.yTicks = JSON.stringify(labels);
      return labels;
    },
  };
}

/** The figure's HTML legend: `items` [{text, swatch (CSS), marker, attrs}]. */
export function legendOf(figure, items) {
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

export function readout(figure) {
  let box = figure.querySelector(":scope > .readout");
  if (!box) {
    box = document.createElement("div");
    box.className = "readout";
    figure.appendChild(box);
  }
  return box;
}

/** The plot: built again when `shape` changes, otherwise given the new data and range. */
export function plotOf(figure, shape, width, build, data) {
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

export function recordScale(figure, u) {
  const { min, max } = u.scales.x;
  figure.dataset.xMin = String(min);
  figure.dataset.xMax = String(max);
}
