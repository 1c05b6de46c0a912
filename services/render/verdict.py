"""A run's reports on whether training worked (RunState.reports: holdout, delta, notes), read for
a person: the lines `runs show` prints and the rows the run page's "Did it work?" section shows.

The holdout reads as before → after with its direction (a pass rate is better higher, a held-out
loss lower); each change of the delta report as before → after, its n, its interval and a verdict:
"better" or "worse" when the whole interval is on one side of zero, "no clear change" when it holds
zero (for a must-not-regress marker, "regressed" when it is wholly below zero).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["change_verdict", "delta_rows", "group_rows", "holdout_text", "number", "report_lines"]

METRIC_NAMES = {"pass_rate": "pass rate", "loss": "held-out loss"}


def number(value: Any) -> str:
    """A value with four significant digits; "-" when absent."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:.4g}"


def holdout_text(holdout: Mapping[str, Any]) -> tuple[str, str]:
    """The holdout as ("pass rate 0.31 → 0.47 (+0.16)", "better" | "worse" | "unchanged")."""
    metric = str(holdout.get("metric", ""))
    before, after = float(holdout.get("before", 0.0)), float(holdout.get("after", 0.0))
    change = after - before
    gain = change if metric != "loss" else -change
    direction = "better" if gain > 0 else "worse" if gain < 0 else "unchanged"
    name = METRIC_NAMES.get(metric, metric)
    return f"{name} {number(before)} → {number(after)} ({change:+.4g})", direction


def change_verdict(change: Mapping[str, Any], *, marker: bool = False) -> str:
    """What a change's interval says (see the module's docstring)."""
    low, high = (list(change.get("ci") or [0.0, 0.0]) + [0.0, 0.0])[:2]
    if marker:
        return "regressed" if change.get("regressed") else "held"
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    return "no clear change"


def delta_rows(delta: Mapping[str, Any]) -> list[list[str]]:
    """The delta report's changes as rows: key, role, n before/after, before, after, change,
    interval, verdict; the target first, then the markers, then the proxy."""
    changes: list[tuple[str, Mapping[str, Any], bool]] = []
    if isinstance(delta.get("target"), Mapping):
        changes.append(("target", delta["target"], False))
    changes += [("must not regress", m, True) for m in delta.get("markers") or [] if isinstance(m, Mapping)]
    if isinstance(delta.get("proxy"), Mapping):
        changes.append(("proxy", delta["proxy"], False))
    rows = []
    for role, change, marker in changes:
        low, high = (list(change.get("ci") or [None, None]) + [None, None])[:2]
        rows.append(
            [
                str(change.get("key", "")),
                role,
                f"{change.get('n_before', '-')} / {change.get('n_after', '-')}",
                number(change.get("before")),
                number(change.get("after")),
                f"{change.get('diff', 0.0):+.4g}",
                f"[{number(low)}, {number(high)}]",
                change_verdict(change, marker=marker),
            ]
        )
    return rows


def group_rows(delta: Mapping[str, Any]) -> list[list[str]]:
    """The per-group table of the target: group, n before/after, before, after, change."""
    rows = []
    for group in delta.get("groups") or []:
        diff = group.get("diff")
        rows.append(
            [
                str(group.get("group", "")),
                f"{group.get('n_before', '-')} / {group.get('n_after', '-')}",
                number(group.get("before")),
                number(group.get("after")),
                "-" if diff is None else f"{diff:+.4g}",
            ]
        )
    return rows


def report_lines(reports: Mapping[str, Any]) -> list[str]:
    """The reports as the lines `runs show` prints under "did it work?"; none when none."""
    lines: list[str] = []
    holdout, delta, notes = reports.get("holdout"), reports.get("delta"), reports.get("notes")
    if isinstance(holdout, Mapping):
        text, direction = holdout_text(holdout)
        lines.append(f"  holdout: {text}, {direction}")
    if isinstance(delta, Mapping):
        for key, role, n, before, after, diff, interval, verdict in delta_rows(delta):
            lines.append(f"  {role} {key}: {before} → {after} ({diff}, n {n}, 95% {interval}) {verdict}")
        if delta.get("over_optimized"):
            lines.append("  over-optimized: the proxy moved and the target did not")
        for group, n, before, after, diff in group_rows(delta):
            lines.append(f"    {delta.get('by', 'group')} {group}: {before} → {after} ({diff}, n {n})")
    if isinstance(notes, Mapping):
        for key, value in sorted(notes.items()):
            lines.append(f"  note {key}: {value if isinstance(value, str) else json.dumps(value)}")
    return ["did it work?", *lines] if lines else []
