"""The run page's opening section, "Did it work?": the held-out score before → after with its
direction, the delta report's table (target, must-not-regress markers, proxy: n, interval,
verdict), its per-group table, the over-optimization flag, and the run's notes
(services.render.verdict reads the reports)."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from services.render.verdict import delta_rows, group_rows, holdout_text

__all__ = ["did_it_work"]

DELTA_HEADERS = ("key", "role", "n before / after", "before", "after", "change", "95% interval", "verdict")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(css: str, headers: Sequence[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        f'<tr data-verdict="{_e(row[-1])}">' + "".join(f"<td>{_e(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def did_it_work(reports: Mapping[str, Any]) -> str:
    """The section's content; says so when the run recorded no report."""
    parts = []
    holdout, delta, notes = reports.get("holdout"), reports.get("delta"), reports.get("notes")
    if isinstance(holdout, Mapping):
        text, direction = holdout_text(holdout)
        parts.append(
            f'<p class="holdout" data-field="holdout" data-direction="{_e(direction)}">'
            f'<strong>{_e(text)}</strong> <span class="direction">{_e(direction)}</span></p>'
        )
    if isinstance(delta, Mapping):
        if delta.get("over_optimized"):
            parts.append(
                '<p class="over-optimized" data-field="over_optimized">Over-optimized: the proxy moved'
                " and the target did not.</p>"
            )
        parts.append(_table("delta", DELTA_HEADERS, delta_rows(delta)))
        groups = group_rows(delta)
        if groups:
            by = str(delta.get("by", "group"))
            headers = (by, "n before / after", "before", "after", "change")
            parts.append(f"<h3>By {_e(by)}</h3>" + _table("delta-groups", headers, groups))
        if delta.get("method"):
            parts.append(f'<p class="method">Intervals: {_e(delta["method"])}.</p>')
    if isinstance(notes, Mapping) and notes:
        items = "".join(
            f"<dt>{_e(key)}</dt><dd>{_e(value if isinstance(value, str) else json.dumps(value))}</dd>"
            for key, value in sorted(notes.items())
        )
        parts.append(f'<dl class="notes">{items}</dl>')
    return "".join(parts) or '<p class="empty">No holdout or delta report recorded yet.</p>'


COMPARE_HEADERS = ("run", "holdout", "direction", "target change", "95% interval", "verdict", "regressed", "flags")


def compare_table(runs: Sequence[tuple[str, str, Mapping[str, Any]]]) -> str:
    """The compare page's "Did it work?" table: one row per (run id, name, reports), after a line
    that says so when no run recorded a holdout or delta report."""
    rows, reported = [], False
    for run_id, name, reports in runs:
        holdout, delta = reports.get("holdout"), reports.get("delta")
        reported = reported or isinstance(holdout, Mapping) or isinstance(delta, Mapping)
        text, direction = holdout_text(holdout) if isinstance(holdout, Mapping) else ("-", "-")
        cells = [text, direction]
        changes = delta_rows(delta) if isinstance(delta, Mapping) else []
        target = next((row for row in changes if row[1] == "target"), None)
        cells += [target[5], target[6], target[7]] if target else ["-", "-", "-"]
        regressed = [row[0] for row in changes if row[-1] == "regressed"]
        # Without a delta report nothing was checked: "-", never "none" (which says none regressed).
        cells.append(", ".join(regressed) or ("none" if isinstance(delta, Mapping) else "-"))
        over = isinstance(delta, Mapping) and delta.get("over_optimized")
        cells.append("over-optimized" if over else "")
        link = f'<td><a href="/runs/{_e(run_id)}">{_e(name or run_id)}</a></td>'
        rows.append(f'<tr data-run-id="{_e(run_id)}">{link}' + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{_e(h)}</th>" for h in COMPARE_HEADERS)
    table = f'<table class="did-it-work"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    said = "" if reported else '<p class="empty">No compared run recorded a holdout or delta report yet.</p>'
    return said + table
