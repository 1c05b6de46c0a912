// The compare page (main[data-page=compare]): one line per run of each compared metric, redrawn
// with the diff and verdict panels (livepanels.js) as a compared run changes.

import {
  api,
  charts,
  chartsLoaded,
  clearError,
  figureWidth,
  frameScheduler,
  onResize,
  showError,
  throttled,
} from "./common.js";
import { livePanels, PANEL_GAP_MS } from "./livepanels.js";

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
export function comparePage() {
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
