"""What the CLI's read and write commands print for people, whichever way they read.

A command reads through a server (services.cli.remote: clients.models) or a database file
(services.cli.local: ledger.views.models); both models carry the same field names, so each text here
takes either (typed `Any`) and prints the same thing. Amounts are dollars (tables.usd), times UTC
with their zone (tables.when), run statuses as people read them (`status_text`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from services.render.tables import basis_text, fields, printable, table, usd, when
from services.render.verdict import report_lines
from trainledger.text import account_text as holder_text

__all__ = [
    "status_text",
    "spend_text",
    "spec_lines",
    "runs_table",
    "run_text",
    "account_text",
    "families_table",
    "family_text",
    "verdict_text",
    "alias_text",
    "retire_text",
    "cap_text",
    "move_text",
    "progress_text",
    "scores_text",
    "checkpoint_state",
    "plan_table",
    "prune_table",
    "retract_text",
    "register_text",
    "report_verdict",
    "datasets_table",
]


def status_text(status: str, attempt: int) -> str:
    """A run's status as people read it: a run opened with no attempt yet is not running."""
    if status in ("", "running") and attempt == 0:
        return "opened (no attempt yet)"
    return status


#: What "presumed" means, in one line beside a presumed amount.
PRESUMED_GLOSS = "presumed: charged by the ledger for holds nobody settled, pro rata or as reserved"


def presumed_text(presumed: int) -> str:
    """ " $0.400000 presumed,": what the ledger charged for abandoned holds (pro rata or as reserved),
    shown apart from what was committed; empty when nothing was."""
    return f" {usd(presumed)} presumed," if presumed else ""


def spend_text(committed: int, cap: int | None, presumed: int = 0) -> str:
    """ "$1.200000 of $5.000000": spend against the cap ("of no cap" without one): committed plus
    what the ledger presumed spent for abandoned holds, as the cap counts it, the presumed part
    named ("$1.200000 of $5.000000 ($0.200000 presumed)")."""
    text = f"{usd(committed + presumed)} of {usd(cap) if cap is not None else 'no cap'}"
    return text + (f" ({usd(presumed)} presumed)" if presumed else "")


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


def progress_text(progress: Any, running: bool = True) -> str | None:
    """ "step 400 of 1,000 (40.0%), 12.50 steps/s, ETA 2026-12-01 07:10:00 UTC": a run's progress
    against its plan (what is known of it; the rate only while `running`); None when it has
    neither a step nor a plan."""
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
    if progress.eta is not None:
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


def _same(checkpoint: Any, other: Any) -> bool:
    return other is not None and (checkpoint.step, checkpoint.attempt) == (other.step, other.attempt)


def checkpoint_state(checkpoint: Any, live: Any = None, best: Any = None, now: datetime | None = None) -> str:
    """What a checkpoint is: "live (resume)" (the resume point), "best", "superseded",
    "expired" (its handle's time passed), "deleted" (recorded deleted), "final"; "live" when it
    is none of the first five and still usable."""
    now = now or datetime.now(UTC)
    expired = bool(getattr(checkpoint, "expired", False)) or (
        checkpoint.expires_at is not None and checkpoint.expires_at <= now
    )
    deleted = getattr(checkpoint, "deleted_at", None) is not None
    marks = []
    if _same(checkpoint, live):
        marks.append("live (resume)")
    if _same(checkpoint, best):
        marks.append("best")
    if checkpoint.superseded:
        marks.append("superseded")
    if expired:
        marks.append("expired")
    if deleted:
        marks.append("deleted")
    if not marks:
        marks.append("live")
    if checkpoint.final:
        marks.append("final")
    return ", ".join(marks)


def scores_text(scores: Mapping[str, float] | None) -> str | None:
    """A checkpoint's scores as "eval_loss=0.412, win_rate=0.61" (by name); None without any."""
    if not scores:
        return None
    return ", ".join(f"{name}={_number(value)}" for name, value in sorted(scores.items()))


def _number(value: float) -> str:
    return f"{value:.6g}"


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
    scored = f" ({metric}={_number(score)})" if score is not None else ""
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
    run, spend, resume = state.run, state.spend, state.resume
    status = status_text(run.status, state.current_attempt)
    if status == "running":
        status = f"running (attempt {state.current_attempt})"
    retraction = _retraction_text(getattr(run, "retraction", None))
    if retraction is not None:
        status += " (retracted)"
    optional = [
        ("objective", _objective_text(getattr(run, "objective", None))),
        ("progress", progress_text(getattr(state, "progress", None), run.status in ("running", ""))),
        ("best", _best_text(state)),
        ("retracted", retraction),
    ]
    parts = [
        fields(
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
                (
                    "spend",
                    f"{usd(spend.committed_usd_micro)} committed,"
                    + presumed_text(spend.presumed_usd_micro)
                    + f" {usd(spend.pending_usd_micro)} pending,"
                    f" cap {usd(spend.cap_usd_micro) if spend.cap_usd_micro is not None else 'none'},"
                    f" remaining {usd(spend.remaining_usd_micro)}"
                    + (f", overrun {usd(spend.overrun_usd_micro)}" if spend.overrun_usd_micro else "")
                    + (f"; plan {plan_hold_text(spend.plan)}" if spend.plan is not None else ""),
                ),
                *([("presumed", PRESUMED_GLOSS.removeprefix("presumed: "))] if spend.presumed_usd_micro else []),
            ]
        ),
        "spec\n" + spec_lines(run.spec),
    ]
    verdict = report_lines(getattr(state, "reports", None) or {})
    if verdict:
        parts.insert(1, "\n".join(verdict))
    if run.summary:
        parts.append("summary\n" + spec_lines(run.summary))
    parts.append(
        "metrics\n"
        + (
            table(
                ["METRIC", "STEPS", "FIRST STEP", "LAST STEP", "LAST", "MIN", "MAX"],
                [(m.name, m.count, m.first_step, m.last_step, m.last, m.min, m.max) for m in metrics],
            )
            if metrics
            else "  (no metric recorded)"
        )
    )
    parts.append(
        "checkpoints\n" + (_checkpoints_table(checkpoints, state, now) if checkpoints else "  (no checkpoint saved)")
    )
    datasets = getattr(state, "datasets", None) or ()
    if datasets:
        parts.append("datasets\n" + datasets_table(datasets))
    parts.append(
        "attempts\n"
        + (
            table(
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
                    for a in state.attempts
                ],
            )
            if state.attempts
            else "  (no attempt yet)"
        )
    )
    headers, rows = _step_rows(series)
    parts.append(f"last {len(rows)} steps\n" + table(headers, rows) if rows else "last steps\n  (no step recorded)")
    return "\n\n".join(parts)


def _checkpoints_table(checkpoints: Sequence[Any], state: Any, now: datetime) -> str:
    scored = any(getattr(c, "scores", None) for c in checkpoints)
    deleted = any(getattr(c, "deleted_at", None) is not None for c in checkpoints)
    headers = ["STEP", "ATTEMPT", "BACKEND", "URI", "FIDELITY", "SAVED", "EXPIRES"]
    headers += ["DELETED"] * deleted + ["SCORES"] * scored + ["STATE"]
    best = getattr(state, "best_checkpoint", None)
    return table(
        headers,
        [
            (
                c.step,
                c.attempt,
                c.handle.backend if c.handle else None,
                c.handle.uri if c.handle else None,
                c.handle.fidelity if c.handle else None,
                when(c.saved_at),
                when(c.expires_at),
                *([when(c.deleted_at)] if deleted else []),
                *([scores_text(c.scores)] if scored else []),
                checkpoint_state(c, state.checkpoint, best, now),
            )
            for c in checkpoints
        ],
    )


def plan_table(entries: Sequence[Any], actions: Sequence[tuple[str, str]] | None = None) -> str:
    """A retention plan: each checkpoint with its handle, scores and what retention does with it
    ("delete", else "keep: " and why). `actions`, one (result, detail) per entry, replaces the
    plan's column with what a prune did (deleted, kept, failed ...) and why."""
    scored = any(e.checkpoint.scores for e in entries)
    headers = ["STEP", "ATTEMPT", "BACKEND", "URI", "SAVED"] + ["SCORES"] * scored
    headers += ["RESULT", "DETAIL"] if actions is not None else ["PLAN"]
    rows = []
    for i, entry in enumerate(entries):
        c = entry.checkpoint
        row: list[Any] = [
            c.step,
            c.attempt,
            c.handle.backend if c.handle else None,
            c.handle.uri if c.handle else None,
            when(c.saved_at),
            *([scores_text(c.scores)] if scored else []),
        ]
        row += list(actions[i]) if actions is not None else [plan_text(entry)]
        rows.append(row)
    return table(headers, rows)


def plan_text(entry: Any) -> str:
    """ "delete", "deleted" (recorded deleted before), or "keep: resume, best" (why it is kept)."""
    if "deleted" in entry.kept_because:
        return "deleted"
    return "delete" if entry.delete else "keep: " + ", ".join(entry.kept_because)


def prune_table(results: Sequence[Any]) -> str:
    """What a prune did, per checkpoint: run, step, attempt, uri, result and why."""
    return table(
        ["RUN", "STEP", "ATTEMPT", "URI", "RESULT", "DETAIL"],
        [(r.run, r.step, r.attempt, r.uri or None, r.result, r.detail or None) for r in results],
        first=(0,),
    )


def retract_text(run_id: str, name: str, position: int, duplicate: bool) -> str:
    """What `runs retract` prints."""
    named = f"{run_id} ({name})" if name else run_id
    again = " (already retracted: answered as a duplicate)" if duplicate else ""
    return f"{named}: retracted at position {position}{again}"


def register_text(family: str, version: int, position: int, duplicate: bool, source: str) -> str:
    """What `registry register` prints."""
    again = " (already registered: answered as a duplicate)" if duplicate else ""
    made = f" from {source}" if source else ""
    return f"{family}: version {version}{made} at position {position}{again}"


def account_text(account: Any, reservations: Sequence[Any], more: str = "") -> str:
    """An account's totals against its cap and a page of its reservations; `more` says how to
    see the next page."""
    text = fields(
        [
            ("account", account.account),
            ("parent", account.parent or None),
            ("cap", usd(account.cap_usd_micro) if account.cap_usd_micro is not None else "none"),
            ("committed", usd(account.committed_usd_micro)),
            *([("presumed", usd(account.presumed_usd_micro))] if account.presumed_usd_micro else []),
            ("pending", usd(account.pending_usd_micro)),
            ("remaining", usd(account.remaining_usd_micro)),
            ("overrun", usd(account.overrun_usd_micro)),
            *([("plan", plan_hold_text(account.plan))] if account.plan is not None else []),
        ]
    )
    listed = (
        table(
            ["ID", "KIND", "STATE", "AMOUNT", "ACTUAL", "OVERRUN", "BASIS", "REASON", "AT", "SETTLED"],
            [
                (
                    e.reservation_id,
                    e.kind,
                    e.state,
                    usd(e.amount_usd_micro),
                    usd(e.actual_usd_micro),
                    usd(e.overrun_usd_micro),
                    basis_text(e.actual_basis or e.basis),
                    e.reason or None,
                    when(e.reserved_at),
                    when(e.settled_at),
                )
                for e in reservations
            ],
        )
        if reservations
        else "(no reservation)"
    )
    return "\n\n".join([text, listed] + ([more] if more else []))


def families_table(families: Sequence[Any]) -> str:
    rows = [(f.family, f.current or None, f.version_count, "yes" if f.retired else None) for f in families]
    return table(["FAMILY", "CURRENT", "VERSIONS", "RETIRED"], rows)


def verdict_text(verdict: Any) -> str | None:
    """A gate verdict on one line: who reached it (evaluated by the ledger, or asserted by the
    caller), whether it passed, why, and for an evaluated one each score with the log position
    that recorded it."""
    if verdict is None:
        return None
    mode = getattr(verdict, "mode", "") or "asserted"
    evidence = getattr(verdict, "evidence", None) or ()
    if evidence:
        scores = ", ".join(
            f"{e.name}={'none' if e.value is None else f'{e.value:g}'}@{e.position or '-'}" for e in evidence
        )
    else:
        scores = ", ".join(f"{key}={value}" for key, value in sorted((verdict.stats or {}).items()))
    return (
        f"{mode}, {'passed' if verdict.passed else 'failed'}"
        + (f": {verdict.reason}" if verdict.reason else "")
        + (f" ({scores})" if scores else "")
    )


def _history_reason(promotion: Any) -> str | None:
    refusal = getattr(promotion, "refusal", "")
    if refusal:
        return f"{refusal}: {promotion.reason}" if promotion.reason else refusal
    return promotion.reason or None


def family_text(
    family: str,
    current: int,
    versions: Sequence[Any],
    history: Sequence[Any],
    aliases: Sequence[Any] = (),
    retired: Any = None,
) -> str:
    """A family: its current version, aliases and retirement, every version, and the history of
    promotions, rollbacks and refused promotions with their gate verdicts (evaluated or asserted),
    alias moves (each alias's latest) and the retirement, with who made them."""
    named = ", ".join(f"{a.alias}={a.version}" for a in aliases)
    return "\n\n".join(
        [
            fields(
                [
                    ("family", family),
                    ("current", current or None),
                    ("aliases", named or None),
                    ("retired", None if retired is None else f"{retired.reason} ({when(retired.at)})"),
                ]
            ),
            "versions\n"
            + table(
                ["VERSION", "ARTIFACT", "DIGEST", "SOURCE RUN", "STEP", "REGISTERED"],
                [
                    (
                        v.version,
                        v.artifact_uri,
                        v.digest.rpartition(":")[2][:12],
                        (v.source_run_id + " (retracted)" if getattr(v, "source_retracted", False) else v.source_run_id)
                        or None,
                        v.source_step,
                        when(v.registered_at),
                    )
                    for v in versions
                ],
            ),
            "history\n"
            + (
                table(
                    ["AT", "KIND", "VERSION", "PREVIOUS", "BY", "GATE", "REASON"],
                    _history_rows(history, aliases, retired),
                )
                if history or aliases or retired is not None
                else "  (never promoted)"
            ),
        ]
    )


def _history_rows(history: Sequence[Any], aliases: Sequence[Any], retired: Any) -> list[tuple[Any, ...]]:
    """A family's history in log order: its promotions, rollbacks and refusals, each alias's move
    to the version it names now and the retirement, each with who made it."""
    rows: list[tuple[int, tuple[Any, ...]]] = [
        (
            p.position,
            (
                when(p.at),
                p.kind,
                p.version,
                p.previous or None,
                p.principal,
                verdict_text(p.verdict),
                _history_reason(p),
            ),
        )
        for p in history
    ]
    rows += [(a.position, (when(a.moved_at), "alias", a.version, None, a.principal, None, a.alias)) for a in aliases]
    if retired is not None:
        rows.append(
            (retired.position, (when(retired.at), "retire", None, None, retired.principal, None, retired.reason))
        )
    return [row for _, row in sorted(rows, key=lambda entry: entry[0])]


def plan_hold_text(plan: Any) -> str:
    """A plan hold on one line: what was planned, drawn by holds and is still held, and its state."""
    return (
        f"{usd(plan.planned_usd_micro)} planned, {usd(plan.drawn_usd_micro)} drawn,"
        f" {usd(plan.held_usd_micro)} held ({plan.state})"
    )


def cap_text(account: Any, position: int, run_name: str | None = None) -> str:
    """What `spend cap` prints: the account (a run's by the run's name and id, given
    `run_name`) and its cap and totals as they stand after it."""
    cap = usd(account.cap_usd_micro) if account.cap_usd_micro is not None else "none"
    return (
        f"{holder_text(account.account, run_name)}: cap {cap}, {usd(account.committed_usd_micro)} committed,"
        f"{presumed_text(account.presumed_usd_micro)}"
        f" {usd(account.pending_usd_micro)} pending, remaining {usd(account.remaining_usd_micro)}"
        f" (position {position})"
    )


def move_text(kind: str, family: str, current: int, previous: int, position: int, duplicate: bool) -> str:
    """What `registry promote` and `registry rollback` print."""
    again = " (already done: answered as a duplicate)" if duplicate else ""
    return f"{family}: {kind} to version {current} (was {previous or 'none'}) at position {position}{again}"


def alias_text(family: str, alias: str, version: int, previous: int, position: int, duplicate: bool) -> str:
    """What `registry alias` prints."""
    again = " (already done: answered as a duplicate)" if duplicate else ""
    moved = f"names version {version}" if version else "removed"
    return f"{family}: alias {alias} {moved} (was {previous or 'none'}) at position {position}{again}"


def retire_text(family: str, position: int, duplicate: bool) -> str:
    """What `registry retire` prints."""
    again = " (already retired: answered as a duplicate)" if duplicate else ""
    return f"{family}: retired at position {position}{again}"
