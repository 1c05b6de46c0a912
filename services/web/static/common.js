// What the dashboard's pages share (dashboard.js): the JSON API, the money and progress texts,
// the figures' width, errors and redraw scheduling, and the cells that runs and the run page fill
// from the live feed.

// chart.js is imported dynamically so that the page's API requests start at once, while it loads.
export let charts = null;
export const chartsLoaded = import("./chart.js").then((module) => (charts = module));

const MIN_WIDTH = 16;
const MAX_WIDTH = 4000;

/** A JSON document of the API, or an Error carrying the contract's {"error": {reason, message}}. */
export async function api(path) {
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
export function usdShort(micro) {
  const dollars = micro / 1e6;
  if (dollars === 0) return "$0";
  if (Math.abs(dollars) >= 1000) return `$${Number((dollars / 1000).toPrecision(3))}k`;
  return `$${Number(dollars.toPrecision(3))}`;
}

export function figureWidth(figure) {
  const style = getComputedStyle(figure);
  const inner = figure.clientWidth - parseFloat(style.paddingLeft || "0") - parseFloat(style.paddingRight || "0");
  return Math.max(MIN_WIDTH, Math.min(MAX_WIDTH, Math.floor(inner || 800)));
}

export function showError(figure, error) {
  let box = figure.querySelector(":scope > .error");
  if (!box) {
    box = document.createElement("p");
    box.className = "error";
    figure.appendChild(box);
  }
  box.textContent = error.reason ? `${error.reason}: ${error.message}` : String(error.message || error);
  figure.dataset.error = error.reason || "error";
}

export function clearError(figure) {
  figure.querySelector(":scope > .error")?.remove();
  delete figure.dataset.error;
}

/** Calls `draw` at most once per animation frame however often it is scheduled. */
export function frameScheduler(draw) {
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
export function onResize(figure, redraw) {
  if (typeof ResizeObserver === "undefined") return;
  let last = figure.clientWidth;
  new ResizeObserver(() => {
    if (Math.abs(figure.clientWidth - last) < 8) return;
    last = figure.clientWidth;
    redraw();
  }).observe(figure);
}

export function setField(name, text, root = document) {
  for (const cell of root.querySelectorAll(`[data-field="${name}"]`)) {
    if (cell.textContent !== text) cell.textContent = text;
  }
}

// A run's status as people read it (services/render/__init__.py status_text): a run opened with no attempt
// yet is not running.
export function statusText(status, attempt) {
  return (status === "running" || status === "") && attempt === 0 ? "opened (no attempt yet)" : status;
}

export function setStatus(status, attempt, root = document) {
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
export function setProgress(root, progress, running = true) {
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
export function advanceProgress(lastStep) {
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

/** The spend cells' text, as the server renders it: "$1.00 + $0.40 presumed + $0.50 held of $5.00". */
function spendText(spend) {
  const presumed = spend.presumed_usd_micro ? ` + ${usd(spend.presumed_usd_micro)} presumed` : "";
  const held = spend.pending_usd_micro ? ` + ${usd(spend.pending_usd_micro)} held` : "";
  const cap = spend.cap_usd_micro === null || spend.cap_usd_micro === undefined ? "no cap" : usd(spend.cap_usd_micro);
  return `${usd(spend.committed_usd_micro)}${presumed}${held} of ${cap}`;
}

/** Spend cells (a run's row, the run page's facts): the amount text and the bar, red past the cap. */
export function updateSpendCells(root, spend) {
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
export function markBar(bar, committed, cap) {
  bar.classList.toggle("over", cap !== null && committed > cap);
  bar.classList.toggle("warn", cap !== null && committed <= cap && committed >= cap * 0.8);
}

/** Runs `work` at most once per `gapMs`, never two at once; a call meanwhile gets one more turn. */
export function throttled(work, gapMs) {
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
