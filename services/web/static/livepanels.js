// The server-rendered panels of the run page (runpage.js) and the compare page (comparepage.js),
// kept live.

// The run page's panels rendered by the server (facts, metrics, attempts, checkpoints, datasets,
// spec, summary: each a [data-live] element) follow the same feed as its charts: a change the
// feed reports fetches the page again and swaps each panel whose content changed. A `state` or a
// `checkpoint` asks at once; a burst of steps at most once per PANEL_GAP_MS, and the last batch of a
// burst always gets its turn. The page is asked as of the last event the feed sent (min_position),
// so it never shows less than the feed did; a page that comes back after a newer event is dropped
// and asked again (at most STALE_DROPS_MAX times in a row, so a busy feed still gets its panels).
export const PANEL_GAP_MS = 1000;
const STALE_DROPS_MAX = 2;

export function livePanels(pageUrl = (at) => `${location.pathname}?min_position=${at}`) {
  let timer = null;
  let running = false;
  let again = false;
  let last = 0;
  let seen = 0;
  let drops = 0;
  const swap = async () => {
    timer = null;
    running = true;
    last = Date.now();
    const asked = seen;
    try {
      const url = pageUrl(asked);
      const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!response.ok) return;
      const text = await response.text();
      if (seen > asked && drops < STALE_DROPS_MAX) {
        drops += 1;
        again = true;
        return;
      }
      drops = 0;
      const fresh = new DOMParser().parseFromString(text, "text/html");
      for (const panel of document.querySelectorAll("main [data-live]")) {
        const next = fresh.querySelector(`main [data-live="${CSS.escape(panel.dataset.live)}"]`);
        if (!next || next.innerHTML === panel.innerHTML) continue;
        // A <details> the reader opened stays open.
        const opened = [...panel.querySelectorAll("details")].map((d) => d.open);
        const swapped = document.importNode(next, true);
        swapped.querySelectorAll("details").forEach((d, i) => (d.open = d.open || Boolean(opened[i])));
        panel.replaceWith(swapped);
      }
      document.querySelector("main").dataset.panelsAt = String(last);
    } catch {
      // The next change asks again; the page keeps what it shows.
    } finally {
      running = false;
      if (again) {
        again = false;
        schedule(false);
      }
    }
  };
  const saw = (position) => {
    if (Number.isSafeInteger(position) && position > seen) seen = position;
  };
  const schedule = (now, position = 0) => {
    saw(position);
    if (running) {
      again = true;
      return;
    }
    const wait = now ? 0 : Math.max(0, last + PANEL_GAP_MS - Date.now());
    if (timer !== null) {
      if (!now) return;
      clearTimeout(timer);
    }
    timer = setTimeout(swap, wait);
  };
  schedule.saw = saw; // a change the panels need not be asked for, but must not go back on
  return schedule;
}
