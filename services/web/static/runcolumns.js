// The runs page's tags and chosen columns for a row the live feed adds, laid out as the server's
// (services/web/run_columns.py): the tags as chips (the first TAGS_SHOWN, "+N" for the rest, all
// of them in the title), then a cell per column header after "tags"; a new run's column values
// show on the next load ("-" until then).
const TAGS_SHOWN = 3;

export function runColumns(row, run, cell) {
  const pairs = Object.entries(run.tags ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`);
  const chips = pairs.slice(0, TAGS_SHOWN).map((pair) => {
    const chip = document.createElement("span");
    chip.className = "tag";
    chip.textContent = pair;
    return chip;
  });
  if (pairs.length > TAGS_SHOWN) {
    const more = document.createElement("span");
    more.className = "tag more";
    more.textContent = `+${pairs.length - TAGS_SHOWN}`;
    chips.push(more);
  }
  const tags = cell("tags", ...(chips.length ? chips : ["-"]));
  tags.className = "tags";
  if (pairs.length) tags.title = pairs.join(" ");
  const headers = [...(row.closest("table")?.tHead?.rows[0]?.cells ?? document.querySelectorAll("table.runs thead th"))];
  const after = headers.findIndex((th) => th.textContent === "tags");
  for (const th of after < 0 ? [] : headers.slice(after + 1)) {
    const column = cell("column", "-");
    column.dataset.key = th.textContent;
    column.className = "column";
  }
}
