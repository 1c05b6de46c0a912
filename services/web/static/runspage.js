// The runs page (main[data-page=runs]): its rows kept live from /api/live, and the compare boxes.

import { setField, setProgress, setStatus, statusText, updateSpendCells } from "./common.js";
import { runColumns } from "./runcolumns.js";

/** The runs page's compare boxes: ticking one past the form's data-max is undone and said. */
function compareLimit() {
  const form = document.getElementById("compare");
  const max = Number(form?.dataset.max || 0);
  const note = document.getElementById("compare-limit");
  if (!max || !note) return;
  document.addEventListener("change", (event) => {
    const box = event.target;
    if (!(box instanceof HTMLInputElement) || box.name !== "run" || box.getAttribute("form") !== "compare") return;
    const ticked = document.querySelectorAll('input[name="run"][form="compare"]:checked').length;
    if (box.checked && ticked > max) {
      box.checked = false;
      note.textContent = `Compare takes at most ${max} runs at once: untick one first.`;
      note.hidden = false;
    } else if (ticked <= max) note.hidden = true;
  });
}

export function runsPage() {
  compareLimit();
  const table = document.querySelector("table.runs");
  if (!table) return;
  // A run opened while the page is open is added on top, on the first page of an unfiltered list
  // (the newest runs come first); a filtered or searched list or a later page only updates its rows.
  const params = new URLSearchParams(location.search);
  const showsNewRuns = ["status", "name", "account", "page", "where", "order_by"].every((name) => !params.get(name));
  const showsRetracted = ["1", "true", "on"].includes(params.get("include_retracted") ?? "");
  const source = new EventSource("/api/live");
  source.addEventListener("run", (message) => {
    const run = JSON.parse(message.data);
    let row = table.querySelector(`tr[data-run-id="${CSS.escape(run.run_id)}"]`);
    if (run.retracted && !showsRetracted) {
      // Retracted while the page is open: hidden, as the list the server answers hides it.
      row?.remove();
      return;
    }
    if (!row) {
      if (!showsNewRuns) return;
      row = newRunRow(run);
      table.tBodies[0].prepend(row);
      table.tBodies[0].querySelector("tr.empty")?.remove();
    }
    setStatus(run.status, run.current_attempt, row);
    setField("attempt", String(run.current_attempt), row);
    setField("last_step", run.last_step === null || run.last_step === undefined ? "-" : String(run.last_step), row);
    setProgress(row, run.progress);
    updateSpendCells(row, run);
  });
}

/** A row of the runs table for a run the page has not listed, laid out as the server's rows. */
function newRunRow(run) {
  const row = document.createElement("tr");
  row.dataset.runId = run.run_id;
  const cell = (field, ...children) => {
    const td = document.createElement("td");
    if (field) td.dataset.field = field;
    td.append(...children);
    row.appendChild(td);
    return td;
  };
  const pick = document.createElement("input");
  Object.assign(pick, { type: "checkbox", name: "run", value: run.run_id });
  pick.setAttribute("form", "compare");
  pick.setAttribute("aria-label", `compare ${run.name || run.run_id.slice(0, 8)}`);
  cell("", pick);
  const link = document.createElement("a");
  link.href = `/runs/${encodeURIComponent(run.run_id)}`;
  link.textContent = run.name || run.run_id;
  cell("name", link);
  cell("status", statusText(run.status, run.current_attempt)).dataset.status = run.status;
  cell("attempt", String(run.current_attempt));
  cell("last_step", run.last_step === null || run.last_step === undefined ? "-" : String(run.last_step));
  cell("progress", "-");
  const bar = document.createElement("div");
  bar.className = "bar";
  const fill = document.createElement("div");
  fill.className = "fill";
  fill.style.width = "0%";
  bar.appendChild(fill);
  const amount = document.createElement("span");
  amount.className = "amount";
  const spend = cell("spend", bar, amount);
  if (run.cap_usd_micro !== null && run.cap_usd_micro !== undefined) {
    spend.dataset.capUsdMicro = String(run.cap_usd_micro);
  }
  cell("account", run.parent_account || "-");
  const opened = document.createElement("time");
  opened.dateTime = run.opened_at;
  opened.textContent = run.opened_at ? `${run.opened_at.slice(0, 19).replace("T", " ")} UTC` : "-";
  cell("opened_at", opened);
  runColumns(row, run, cell);
  row.classList.add("new");
  return row;
}
