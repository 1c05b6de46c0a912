"""The reports a run records about whether training worked, made on the client from its own rows.

- `holdout_report(before, after, metric)`: the held-out score before and after training; metric
  "pass_rate" (from 0 to 1, higher is better) or "loss" (held-out loss, lower is better).
- `delta_report(before, after, target=..., must_not_regress=..., by=..., proxy=...)`: over
  rollout rows (mappings) from before and after training, the target's change with each side's n
  and a 95% interval, the change of each must-not-regress marker (regressed when its whole
  interval is below zero), a per-group table of the target when `by` names a key, and an
  over-optimization flag when the proxy moved up and the target did not.

The interval of a change is the normal approximation for a difference of two independent means,
mean_after - mean_before ± 1.96 · sqrt(s²_before/n_before + s²_after/n_after), with s² the sample
variance (n - 1 in the denominator); for 0/1 values (pass or fail) it is the Wald interval for a
difference of proportions, s² = p(1 - p). A side with fewer than two values has no spread to
estimate, so its interval is the point. Values are numbers or booleans (True is 1); a row without
the key is left out of that key's n. The ledger checks the report's shape and bounds (ledger.domain
.run_reports), not its arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["CONFIDENCE", "INTERVAL_METHOD", "METRICS", "delta_report", "holdout_report"]

METRICS = ("pass_rate", "loss")
CONFIDENCE = 0.95
INTERVAL_METHOD = "normal approximation, difference of means (Wald for 0/1 values), 95%"
_Z = 1.959963984540054
# How many groups a per-group table may hold (the ledger refuses more).
GROUPS_MAX = 64

Row = Mapping[str, Any]


def holdout_report(before: float, after: float, metric: str) -> dict[str, Any]:
    """The holdout document for Run.holdout; refuses (ValueError) an unknown metric or a value
    that is not a finite number, or a pass rate outside 0..1, before anything is sent."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, not {metric!r}")
    values = {"before": _finite(before, "before"), "after": _finite(after, "after")}
    if metric == "pass_rate" and not all(0.0 <= value <= 1.0 for value in values.values()):
        raise ValueError("a pass rate is from 0 to 1")
    return {"metric": metric, **values}


def delta_report(
    before: Iterable[Row],
    after: Iterable[Row],
    *,
    target: str,
    must_not_regress: Sequence[str] = (),
    by: str | None = None,
    proxy: str | None = None,
) -> dict[str, Any]:
    """The delta document for Run.delta (see the module's docstring)."""
    rows_before, rows_after = list(before), list(after)
    target_change = change(rows_before, rows_after, target)
    report: dict[str, Any] = {
        "target": target_change,
        "markers": [change(rows_before, rows_after, key) for key in must_not_regress],
        "method": INTERVAL_METHOD,
        "confidence": CONFIDENCE,
    }
    for marker in report["markers"]:
        marker["regressed"] = marker["ci"][1] < 0
    if by is not None:
        report["by"] = by
        report["groups"] = _groups(rows_before, rows_after, target, by)
    if proxy is not None:
        proxy_change = change(rows_before, rows_after, proxy)
        report["proxy"] = proxy_change
        report["over_optimized"] = proxy_change["ci"][0] > 0 and target_change["ci"][0] <= 0
    return report


def change(before: Sequence[Row], after: Sequence[Row], key: str) -> dict[str, Any]:
    """One key's change from before to after: its means, n, difference and 95% interval."""
    values_before, values_after = _values(before, key), _values(after, key)
    if not values_before or not values_after:
        raise ValueError(f"{key!r} needs at least one value before and one after")
    mean_before, mean_after = _mean(values_before), _mean(values_after)
    diff = mean_after - mean_before
    spread = _Z * math.sqrt(_variance(values_before) / len(values_before) + _variance(values_after) / len(values_after))
    return {
        "key": key,
        "n_before": len(values_before),
        "n_after": len(values_after),
        "before": mean_before,
        "after": mean_after,
        "diff": diff,
        "ci": [diff - spread, diff + spread],
    }


def _groups(before: Sequence[Row], after: Sequence[Row], target: str, by: str) -> list[dict[str, Any]]:
    names = sorted({str(row[by]) for row in [*before, *after] if by in row})
    if len(names) > GROUPS_MAX:
        raise ValueError(f"{by!r} has {len(names)} groups, above the limit of {GROUPS_MAX}")
    groups = []
    for name in names:
        side_before = [row for row in before if by in row and str(row[by]) == name]
        side_after = [row for row in after if by in row and str(row[by]) == name]
        values_before, values_after = _values(side_before, target), _values(side_after, target)
        group: dict[str, Any] = {"group": name, "n_before": len(values_before), "n_after": len(values_after)}
        group["before"] = _mean(values_before) if values_before else None
        group["after"] = _mean(values_after) if values_after else None
        both = values_before and values_after
        group["diff"] = group["after"] - group["before"] if both else None
        groups.append(group)
    return groups


def _values(rows: Sequence[Row], key: str) -> list[float]:
    return [_finite(row[key], key) for row in rows if key in row and row[key] is not None]


def _finite(value: Any, name: str) -> float:
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value!r}")
    return float(value)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _variance(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = _mean(values)
    if all(value in (0.0, 1.0) for value in values):
        return mean * (1.0 - mean)
    return math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1)
