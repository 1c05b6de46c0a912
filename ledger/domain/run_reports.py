"""The reports a run records about whether training worked: their kinds and the checks of their shape.

- holdout: {"metric": "pass_rate" | "loss", "before": x, "after": y}; a pass rate is from 0 to 1
  (higher is better), a held-out loss is not negative (lower is better).
- delta: {"target": change, "markers": [change + "regressed"], "method": str, "confidence": c,
  optional "by" and "groups": [{"group", "n_before", "n_after", "before", "after", "diff"}],
  optional "proxy": change and "over_optimized": bool}, where a change is {"key", "n_before",
  "n_after", "before", "after", "diff", "ci": [low, high]}.
- notes: a free-form document merged into the run's notes.

The client computes them (clients/reports.py); the ledger checks shape and bounds (sizes, finite
numbers, counts, key lengths), never the arithmetic. A report is recorded also after the run
finished: sending another is a correction, and the run's status stays.
"""

from __future__ import annotations

import math
from typing import Any

from ledger.domain.errors import Invalid
from ledger.domain.limits import check_document, check_document_bytes
from ledger.domain.reasons import Reason

__all__ = ["KINDS", "REPORT_BYTES_MAX", "apply_report", "check_notes_bytes", "check_report", "is_recorded"]

KINDS = ("holdout", "delta", "notes")
METRICS = ("pass_rate", "loss")
REPORT_BYTES_MAX = 64 * 1024
KEY_LENGTH_MAX = 128
TEXT_LENGTH_MAX = 256
MARKERS_MAX = 32
GROUPS_MAX = 64
COUNT_MAX = 1_000_000_000
_CHANGE_KEYS = {"key", "n_before", "n_after", "before", "after", "diff", "ci"}
_GROUP_KEYS = {"group", "n_before", "n_after", "before", "after", "diff"}
_DELTA_KEYS = {"target", "markers", "method", "confidence", "by", "groups", "proxy", "over_optimized"}


def check_report(kind: str, report: Any) -> dict[str, Any]:
    """The report, checked (Invalid with a reason and the offending field otherwise)."""
    if kind not in KINDS:
        raise Invalid(f"kind must be one of {', '.join(KINDS)}", reason=Reason.INVALID_FIELD, field="kind")
    document = check_document(report, "report")
    check_document_bytes(document, "report", REPORT_BYTES_MAX, Reason.DOCUMENT_TOO_LARGE)
    if kind == "holdout":
        _check_holdout(document)
    elif kind == "delta":
        _check_delta(document)
    return document


def _check_holdout(report: dict[str, Any]) -> None:
    _only(report, {"metric", "before", "after"}, "report")
    metric = report.get("metric")
    if metric not in METRICS:
        raise Invalid(f"metric must be one of {', '.join(METRICS)}", reason=Reason.INVALID_FIELD, field="metric")
    for side in ("before", "after"):
        value = _number(report, side, "report")
        if metric == "pass_rate" and not 0.0 <= value <= 1.0:
            raise Invalid(f"a pass rate is from 0 to 1, {side} is {value}", reason=Reason.INVALID_FIELD, field=side)
        if metric == "loss" and value < 0:
            raise Invalid(f"a loss is not negative, {side} is {value}", reason=Reason.INVALID_FIELD, field=side)


def _check_delta(report: dict[str, Any]) -> None:
    _only(report, _DELTA_KEYS, "report")
    _check_change(report.get("target"), "target")
    _text(report, "method", "report")
    confidence = _number(report, "confidence", "report")
    if not 0.0 < confidence < 1.0:
        raise Invalid("confidence is between 0 and 1", reason=Reason.INVALID_FIELD, field="confidence")
    markers = _list(report.get("markers", []), "markers", MARKERS_MAX)
    for index, marker in enumerate(markers):
        field = f"markers[{index}]"
        _check_change(marker, field, extra={"regressed"})
        if not isinstance(marker.get("regressed"), bool):
            raise Invalid(f"{field}.regressed must be a boolean", reason=Reason.INVALID_FIELD, field=field)
    if "groups" in report or "by" in report:
        _key(report.get("by"), "by")
        for index, group in enumerate(_list(report.get("groups"), "groups", GROUPS_MAX)):
            _check_group(group, f"groups[{index}]")
    if "proxy" in report or "over_optimized" in report:
        _check_change(report.get("proxy"), "proxy")
        if not isinstance(report.get("over_optimized"), bool):
            raise Invalid("over_optimized must be a boolean", reason=Reason.INVALID_FIELD, field="over_optimized")


def _check_change(change: Any, field: str, extra: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    if not isinstance(change, dict):
        raise Invalid(f"{field} must be a change document", reason=Reason.MISSING_FIELD, field=field)
    _only(change, _CHANGE_KEYS | extra, field)
    _key(change.get("key"), f"{field}.key")
    for side in ("n_before", "n_after"):
        _count(change, side, field, least=1)
    for name in ("before", "after", "diff"):
        _number(change, name, field)
    interval = change.get("ci")
    if not (isinstance(interval, list) and len(interval) == 2 and all(_is_number(v) for v in interval)):
        raise Invalid(f"{field}.ci must be [low, high]", reason=Reason.INVALID_FIELD, field=f"{field}.ci")
    if interval[0] > interval[1]:
        raise Invalid(f"{field}.ci has its low above its high", reason=Reason.INVALID_FIELD, field=f"{field}.ci")


def _check_group(group: Any, field: str) -> None:
    if not isinstance(group, dict):
        raise Invalid(f"{field} must be a document", reason=Reason.INVALID_FIELD, field=field)
    _only(group, _GROUP_KEYS, field)
    _key(group.get("group"), f"{field}.group")
    for side in ("n_before", "n_after"):
        _count(group, side, field, least=0)
    for name in ("before", "after", "diff"):
        if group.get(name) is not None:
            _number(group, name, field)


def _only(document: dict[str, Any], allowed: set[str], field: str) -> None:
    unknown = sorted(set(document) - allowed)
    if unknown:
        raise Invalid(f"{field} has unknown keys: {', '.join(unknown)}", reason=Reason.INVALID_FIELD, field=field)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _number(document: dict[str, Any], name: str, field: str) -> float:
    value = document.get(name)
    if value is None:
        raise Invalid(f"{field}.{name} is missing", reason=Reason.MISSING_FIELD, field=f"{field}.{name}")
    if not _is_number(value):
        raise Invalid(f"{field}.{name} must be a finite number", reason=Reason.INVALID_FIELD, field=f"{field}.{name}")
    return float(value)


def _count(document: dict[str, Any], name: str, field: str, *, least: int) -> None:
    value = document.get(name)
    if not (isinstance(value, int) and not isinstance(value, bool) and least <= value <= COUNT_MAX):
        raise Invalid(
            f"{field}.{name} must be a count from {least} to {COUNT_MAX}",
            reason=Reason.INVALID_FIELD,
            field=f"{field}.{name}",
        )


def _key(value: Any, field: str) -> None:
    if not isinstance(value, str) or not value:
        raise Invalid(f"{field} must be a non-empty string", reason=Reason.MISSING_FIELD, field=field)
    if len(value) > KEY_LENGTH_MAX:
        raise Invalid(
            f"{field} is longer than {KEY_LENGTH_MAX} characters",
            reason=Reason.STRING_TOO_LONG,
            field=field,
            limit=KEY_LENGTH_MAX,
        )


def _text(document: dict[str, Any], name: str, field: str) -> None:
    value = document.get(name)
    if not isinstance(value, str) or len(value) > TEXT_LENGTH_MAX:
        raise Invalid(
            f"{field}.{name} must be a string of at most {TEXT_LENGTH_MAX} characters",
            reason=Reason.INVALID_FIELD,
            field=f"{field}.{name}",
        )


def _list(value: Any, field: str, limit: int) -> list[Any]:
    if not isinstance(value, list):
        raise Invalid(f"{field} must be a list", reason=Reason.INVALID_FIELD, field=field)
    if len(value) > limit:
        raise Invalid(
            f"{field} holds {len(value)} entries, above the limit of {limit}",
            reason=Reason.INVALID_FIELD,
            field=field,
            limit=limit,
        )
    return value


def apply_report(reports: dict[str, Any], kind: str, report: dict[str, Any]) -> None:
    """Fold a recorded report into a run's reports: holdout and delta replace, notes merge."""
    reports[kind] = {**reports.get("notes", {}), **report} if kind == "notes" else report


def is_recorded(reports: dict[str, Any], kind: str, report: dict[str, Any]) -> bool:
    """Whether recording this report would change nothing (a retry)."""
    if kind == "notes":
        notes = reports.get("notes", {})
        return all(key in notes and notes[key] == value for key, value in report.items())
    return reports.get(kind) == report


def check_notes_bytes(reports: dict[str, Any], notes: dict[str, Any]) -> None:
    """The notes with these merged in stay within REPORT_BYTES_MAX (DOCUMENT_TOO_LARGE)."""
    check_document_bytes({**reports.get("notes", {}), **notes}, "notes", REPORT_BYTES_MAX, Reason.DOCUMENT_TOO_LARGE)
