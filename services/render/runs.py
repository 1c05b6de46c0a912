"""Runs for people: a run's status, the runs list, `runs show` (a run's fields, spec, metrics,
checkpoints, datasets, attempts and last steps), its progress against the plan and what a
retraction prints."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from services.render.checkpoints import checkpoints_table, figure
from services.render.spend import PRESUMED_GLOSS, plan_hold_text, presumed_text, spend_text
from services.render.tables import eta_text, fields, metric_value, printable, table, usd, when
from services.render.verdict import report_lines

__all__ = [
    "datasets_table",
    "progress_text",
    "report_verdict",
    "retract_text",
    "run_text",
    "runs_list_text",
    "runs_table",
    "spec_lines",
    "status_text",
]


def status_text(status: str, attempt: int) -> str:
    """A run's status as people read it: a run opened with no attempt yet is not running."""
    if status in ("", "running") and attempt == 0:
        return "opened (no attempt yet)"
    return status


def _leaves(prefix: str, value: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(value, Mapping) and value:
        for key in sorted(value):
            yield from _leaves(f"{prefix}.{key}" if prefix else str(key), value[key])
    else:
        yield prefix, value


def spec_lines(document: Mapping[str, Any] | None, indent: str = "  ") -> str:
    """A document (a spec, a summary) as "key: value" lines, nested keys dotted
    (`lora.r: 16`), lists and empty objects as JSON; "(none)" when empty."""
    if not document:
        return f"{indent}(none)"
    lines = []
    for key, value in _leaves("", document):
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        lines.append(f"{indent}{printable(key)}: {printable(shown)}")
    return "\n".join(lines)


def _percent(fraction: float | None) -> str | None:
    return None if fraction is None else f"{fraction * 100:.1f}%"


def progress_text(progress: Any, running: bool = True, now: datetime | None = None) -> str | None:
    """ "step 400 of 1,000 (40.0%), 12.50 steps/s, ETA 2026-12-01 07:10:00 UTC": a run's progress
    against its plan (what is known of it; the rate only while `running`); None when it has
    neither a step nor a plan. With `now` the ETA reads as `watch` prints it (tables.eta_text:
    "ETA 14m 30s (07:10 UTC)")."""
    if progress is None or (progress.step is None and progress.max_steps is None):
        return None
    if progress.step is None:
        text = f"no step yet ({progress.max_steps:,} planned)"
    else:
        text = f"step {progress.step:,}" + ("" if progress.max_steps is None else f" of {progress.max_steps:,}")
    if progress.fraction is not None:
        text += f" ({_percent(progress.fraction)})"
    if running and progress.steps_per_second is not None:
        text += f", {progress.steps_per_second:,.2f} steps/s"
    if progress.eta is not None and now is not None:
        text += f", ETA {eta_text((progress.eta - now).total_seconds(), now)}"
    elif progress.eta is not None:
        text += f", ETA {when(progress.eta)}"
    return text


def _run_status(run: Any) -> str:
    status = status_text(run.status, run.current_attempt)
    return f"{status} (retracted)" if getattr(run, "retracted", False) else status


def runs_table(runs: Sequence[Any]) -> str:
    """The runs list: id, name, status (a retracted run marked so), attempt, last step, progress
    against the plan (when any run has a plan), spend against the cap, what holds keep pending
    and the account the run's spend lies under (each when any run has one), opened. On a narrow
    terminal ids and statuses are cut first; then the account, the time opened, the holds, the
    progress and the attempt are left out, in that order, before names are cut."""
    accounts, held = any(r.parent_account for r in runs), any(r.pending_usd_micro for r in runs)
    planned = any(r.progress.max_steps is not None for r in runs)
    headers = ["RUN", "NAME", "STATUS", "ATTEMPT", "LAST STEP"] + ["PROGRESS"] * planned + ["SPEND"]
    headers += ["HELD"] * held + ["ACCOUNT"] * accounts + ["OPENED"]
    return table(
        headers,
        [
            (
                r.run_id,
                r.name,
                _run_status(r),
                r.current_attempt or None,
                r.last_step,
                *([_percent(r.progress.fraction)] if planned else []),
                spend_text(r.committed_usd_micro, r.cap_usd_micro, r.presumed_usd_micro),
                *([usd(r.pending_usd_micro) if r.pending_usd_micro else None] if held else []),
                *([r.parent_account or None] if accounts else []),
                when(r.opened_at),
            )
            for r in runs
        ],
        keep=(headers.index("SPEND"),),
        optional=[
            headers.index(name) for name in ("ACCOUNT", "OPENED", "HELD", "PROGRESS", "ATTEMPT") if name in headers
        ],
        first=(0, 2),  # A few characters of an id still name the run (a prefix); names are kept longer.
    )


def _step_rows(series: Any) -> tuple[list[str], list[list[Any]]]:
    """The columns of a series page that some step filled, and one row per step (None where a
    sparse metric has no value). Tokens and cost are left out when no step carries them."""
    columns = sorted(series.metrics, key=lambda column: column.name)
    sparse = [dict(zip(column.index, column.values, strict=True)) if column.index else None for column in columns]
    headers = ["STEP", "ATTEMPT"]
    show_tokens, show_cost = any(series.tokens), any(series.usd_micro)
    headers += ["TOKENS"] * show_tokens + ["COST"] * show_cost + [column.name for column in columns]
    rows = []
    for i, step in enumerate(series.steps):
        row: list[Any] = [step, series.attempts[i]]
        if show_tokens:
            row.append(series.tokens[i])
        if show_cost:
            row.append(usd(series.usd_micro[i]))
        row += [
            column.values[i] if by_record is None else by_record.get(i)
            for column, by_record in zip(columns, sparse, strict=True)
        ]
        rows.append(row)
    return headers, rows


def _objective_text(objective: Any) -> str | None:
    if objective is None or not objective.metric:
        return None
    return f"{objective.metric} ({'lower' if objective.mode == 'min' else 'higher'} is better)"


def _best_text(state: Any) -> str | None:
    best, objective = getattr(state, "best_checkpoint", None), getattr(state.run, "objective", None)
    if best is None:
        return "none scored" if _objective_text(objective) else None
    metric = objective.metric if objective is not None else ""
    score = (best.scores or {}).get(metric)
    scored = f" ({metric}={figure(score)})" if score is not None else ""
    return f"step {best.step}, attempt {best.attempt}{scored}"


def _retraction_text(retraction: Any) -> str | None:
    if retraction is None:
        return None
    by = f" by {retraction.principal}" if retraction.principal else ""
    return f"{when(retraction.retracted_at)}{by}: {retraction.reason}"


def _digest_cut(digest: str) -> str:
    """A digest's algorithm and first 12 hex digits: "sha256:3f2a9c0d51e7"."""
    algorithm, _, hexdigits = digest.partition(":")
    return f"{algorithm}:{hexdigits[:12]}" if hexdigits else digest[:12]


def report_verdict(report: Mapping[str, Any] | None) -> str | None:
    """The gate verdict an export report carries: its "gate" or "verdict" (a word, or a document
    with "verdict" or "passed"), else its "passed" (true: "passed", false: "failed"); None without
    one."""
    if not report:
        return None
    for key in ("gate", "verdict"):
        found = report.get(key)
        if isinstance(found, Mapping):
            found = found.get("verdict", found.get("passed"))
        if isinstance(found, bool):
            return "passed" if found else "failed"
        if isinstance(found, str) and found:
            return found
    passed = report.get("passed")
    return ("passed" if passed else "failed") if isinstance(passed, bool) else None


def datasets_table(datasets: Sequence[Any]) -> str:
    """A run's datasets: role, format, rows, tokens, the digest cut, the source, the export
    report's gate verdict, when recorded."""
    return table(
        ["ROLE", "FORMAT", "ROWS", "TOKENS", "DIGEST", "SOURCE", "VERDICT", "RECORDED"],
        [
            (
                d.role,
                d.format,
                d.rows,
                d.tokens,
                _digest_cut(d.digest),
                d.source_uri or None,
                report_verdict(d.report),
                when(d.recorded_at),
            )
            for d in datasets
        ],
    )


def run_text(
    state: Any, metrics: Sequence[Any], checkpoints: Sequence[Any], series: Any, now: datetime | None = None
) -> str:
    """A run: its fields (objective, progress against the plan, the best checkpoint, the
    retraction among them), spec and summary, metrics (last, min, max), every checkpoint with its
    scores and state (live, best, superseded, expired, deleted), the datasets, the attempts and
    the last steps."""
    now = now or datetime.now(UTC)
    run = state.run
    parts = [_fields_text(state, now), "spec\n" + spec_lines(run.spec)]
    verdict = report_lines(getattr(state, "reports", None) or {})
    if verdict:
        parts.insert(1, "\n".join(verdict))
    if run.summary:
        parts.append("summary\n" + spec_lines(run.summary))
    parts.append("metrics\n" + (_metrics_table(metrics) if metrics else "  (no metric recorded)"))
    parts.append(
        "checkpoints\n" + (checkpoints_table(checkpoints, state, now) if checkpoints else "  (no checkpoint saved)")
    )
    datasets = getattr(state, "datasets", None) or ()
    if datasets:
        parts.append("datasets\n" + datasets_table(datasets))
    children = getattr(state, "children", None) or ()
    if children:
        parts.append(f"children ({getattr(state, 'child_count', len(children))})\n" + _children_table(children))
    parts.append("attempts\n" + (_attempts_table(state.attempts) if state.attempts else "  (no attempt yet)"))
    headers, rows = _step_rows(series)
    parts.append(f"last {len(rows)} steps\n" + table(headers, rows) if rows else "last steps\n  (no step recorded)")
    return "\n\n".join(parts)


def _fields_text(state: Any, now: datetime) -> str:
    """The fields `runs show` begins with: the run, its status, plan, resume point and spend."""
    run, spend, resume = state.run, state.spend, state.resume
    status = status_text(run.status, state.current_attempt)
    if status == "running":
        status = f"running (attempt {state.current_attempt})"
    retraction = _retraction_text(getattr(run, "retraction", None))
    if retraction is not None:
        status += " (retracted)"
    optional = [
        ("objective", _objective_text(getattr(run, "objective", None))),
        ("progress", progress_text(getattr(state, "progress", None), run.status in ("running", ""), now)),
        ("best", _best_text(state)),
        ("retracted", retraction),
        ("tags", " ".join(f"{key}={value}" for key, value in sorted(getattr(state, "tags", {}).items())) or None),
        ("source", _source_text(getattr(state, "source", None))),
    ]
    return fields(
        [
            ("run", run.run_id),
            ("name", run.name or None),
            ("key", run.run_key),
            ("status", status),
            ("opened", when(run.opened_at)),
            *([("finished", when(run.finished_at))] if run.finished_at else []),
            *([("error", run.error)] if run.error else []),
            ("last step", state.last_step),
            *[(name, value) for name, value in optional if value is not None],
            (
                "resume",
                f"from step {resume.from_step} ({resume.handle.uri})"
                if resume.handle is not None
                else "no live checkpoint",
            ),
            ("spend", _spend_field(spend)),
            *([("presumed", PRESUMED_GLOSS.removeprefix("presumed: "))] if spend.presumed_usd_micro else []),
        ]
    )


def _spend_field(spend: Any) -> str:
    """A run's spend on one line: committed, presumed, pending, cap, remaining, overrun, plan."""
    return (
        f"{usd(spend.committed_usd_micro)} committed,"
        + presumed_text(spend.presumed_usd_micro)
        + f" {usd(spend.pending_usd_micro)} pending,"
        f" cap {usd(spend.cap_usd_micro) if spend.cap_usd_micro is not None else 'none'},"
        f" remaining {usd(spend.remaining_usd_micro)}"
        + (f", overrun {usd(spend.overrun_usd_micro)}" if spend.overrun_usd_micro else "")
        + (f"; plan {plan_hold_text(spend.plan)}" if spend.plan is not None else "")
    )


def _metrics_table(metrics: Sequence[Any]) -> str:
    return table(
        ["METRIC", "STEPS", "FIRST STEP", "LAST STEP", "LAST", "MIN", "MAX"],
        [
            (m.name, m.count, m.first_step, m.last_step, *(metric_value(m.name, v) for v in (m.last, m.min, m.max)))
            for m in metrics
        ],
    )


def _attempts_table(attempts: Sequence[Any]) -> str:
    return table(
        ["ATTEMPT", "LABEL", "STARTED", "RESUMED FROM", "ENDED", "LAST SEEN", "LOST"],
        [
            (
                a.number,
                a.label or None,
                when(a.started_at),
                a.resumed_from_step,
                a.ended,
                when(getattr(a, "last_seen_at", None)),
                when(getattr(a, "lost_at", None)),
            )
            for a in attempts
        ],
    )


def runs_list_text(runs: Sequence[Any], more: bool, limit: int) -> str:
    """What `runs list` prints: the runs ("(no run)" without any) and, when `more` runs than the
    `limit` match, the limit that shows more."""
    hint = f"\n(more runs: --limit {limit * 2})" if more else ""
    return (runs_table(runs) if runs else "(no run)") + hint


def retract_text(run_id: str, name: str, position: int, duplicate: bool) -> str:
    """What `runs retract` prints."""
    named = f"{run_id} ({name})" if name else run_id
    again = " (already retracted: answered as a duplicate)" if duplicate else ""
    return f"{named}: retracted at position {position}{again}"


def _source_text(source: Any) -> str | None:
    """The run and checkpoint step a run started from: "NAME (RUN_ID) at step N", and
    "(retracted)" after when that run was retracted."""
    if source is None:
        return None
    marked = " (retracted)" if getattr(source, "retracted", False) else ""
    return f"{printable(source.name or '?')} ({source.run_id}) at step {source.step}{marked}"


def _children_table(children: Sequence[Any]) -> str:
    """The runs started from a run's checkpoints, newest first: run, name (marked when it was
    retracted), source step, opened."""
    return table(
        ["RUN", "NAME", "FROM STEP", "OPENED"],
        [
            (child.run_id, _marked(child.name or "", child.retracted) or None, child.step, when(child.opened_at))
            for child in children
        ],
    )


def _marked(name: str, retracted: bool) -> str:
    return f"{name} (retracted)" if retracted else name
