// The charts of a run page as one group: one step range (the run's, or the zoomed one: zooming
// one chart zooms them all), one smoothing weight and one y scale (linear or log), set by the
// controls it places above the charts and kept in localStorage like a workspace's settings.
// Each chart (metricchart.js MetricChart) has firstDrawn(), lastDrawn(), schedule() and load().

export class ChartGroup {
  constructor() {
    this.charts = [];
    this.range = null;
    this.smoothing = Number(localStorage.getItem("trainledger.smoothing") || 0);
    this.logY = localStorage.getItem("trainledger.logY") === "1";
  }

  xRange() {
    if (this.range) return [this.range.from, this.range.to];
    let lo = Infinity;
    let hi = -Infinity;
    for (const chart of this.charts) {
      const first = chart.firstDrawn();
      const last = chart.lastDrawn();
      if (first !== null) lo = Math.min(lo, first);
      if (last !== null) hi = Math.max(hi, last);
    }
    if (lo === Infinity || hi === -Infinity) return [0, 1];
    return hi > lo ? [lo, hi] : [lo - 0.5, hi + 0.5];
  }

  redraw() {
    for (const chart of this.charts) chart.schedule();
  }

  zoom(from, to) {
    this.range = from === null ? null : { from, to };
    for (const chart of this.charts) {
      chart.range = this.range;
      chart.load();
    }
  }

  /** The smoothing slider and log-y toggle, placed above the charts. */
  controls(section) {
    const bar = document.createElement("div");
    bar.className = "chart-controls";
    const smoothing = Object.assign(document.createElement("input"), {
      type: "range",
      name: "smoothing",
      min: "0",
      max: "0.99",
      step: "0.01",
      value: String(this.smoothing),
    });
    const shown = document.createElement("output");
    shown.textContent = this.smoothing.toFixed(2);
    smoothing.addEventListener("input", () => {
      this.smoothing = Number(smoothing.value);
      shown.textContent = this.smoothing.toFixed(2);
      localStorage.setItem("trainledger.smoothing", smoothing.value);
      this.redraw();
    });
    const logY = Object.assign(document.createElement("input"), {
      type: "checkbox",
      name: "log-y",
      checked: this.logY,
    });
    logY.addEventListener("change", () => {
      this.logY = logY.checked;
      localStorage.setItem("trainledger.logY", logY.checked ? "1" : "0");
      this.redraw();
    });
    const label = (text, ...nodes) => {
      const node = document.createElement("label");
      node.append(text, ...nodes);
      return node;
    };
    const hint = document.createElement("span");
    hint.className = "hint";
    hint.textContent = "drag to zoom · double-click to reset";
    bar.append(label("smoothing ", smoothing, " ", shown), label(logY, " log y"), hint);
    section.before(bar);
  }
}
