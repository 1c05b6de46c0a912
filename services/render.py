"""What the CLI's read and write commands print for people, whichever way they read.

A command reads through a server (services.remote: clients.models) or a database file
(services.reports: ledger.views.models); both models carry the same field names, so each text here
takes either (typed `Any`) and prints the same thing. Amounts are dollars (tables.usd), times UTC
with their zone (tables.when), run statuses as people read them (`status_text`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from services.tables import basis_text, fields, printable, table, usd, when

__all__ = [
    "status_text",
    "spend_text",
    "spec_lines",
    "runs_table",
    "run_text",
    "account_text",
    "families_table",
    "family_text",
    "cap_text",
    "move_text",
]


def status_text(status: str, attempt: int) -> str:
    """A run's status as people read it: a run opened with no attempt yet is not running."""
    if status in ("", "running") and attempt == 0:
        return "opened (no attempt yet)"
    return status


def spend_text(committed: int, cap: int | None) -> str:
    """ "$1.200000 of $5.000000": spend committed against the cap ("of no cap" without one)."""
    return f"{usd(committed)} of {usd(cap) if cap is not None else 'no cap'}"


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


def runs_table(runs: Sequence[Any]) -> str:
    """The runs list: id, name, status, attempt, last step, spend against the cap, what holds
    keep pending and the account the run's spend lies under (each when any run has one), opened.
    On a narrow terminal ids and statuses are cut first; then the account, the time opened, the
    holds and the attempt are left out, in that order, before names are cut."""
    accounts, held = any(r.parent_account for r in runs), any(r.pending_usd_micro for r in runs)
    headers = ["RUN", "NAME", "STATUS", "ATTEMPT", "LAST STEP", "SPEND"] + ["HELD"] * held
    headers += ["ACCOUNT"] * accounts + ["OPENED"]
    return table(
        headers,
        [
            (
                r.run_id,
                r.name,
                status_text(r.status, r.current_attempt),
                r.current_attempt or None,
                r.last_step,
                spend_text(r.committed_usd_micro, r.cap_usd_micro),
                *([usd(r.pending_usd_micro) if r.pending_usd_micro else None] if held else []),
                *([r.parent_account or None] if accounts else []),
                when(r.opened_at),
            )
            for r in runs
        ],
        keep=(5,),
        optional=[headers.index(name) for name in ("ACCOUNT", "OPENED", "HELD", "ATTEMPT") if name in headers],
        first=(0, 2),  # A few characters of an id still name the run (a prefix); names are kept longer.
    )


def _checkpoint_state(checkpoint: Any, live: Any, now: datetime) -> str:
    marks = []
    if live is not None and (checkpoint.step, checkpoint.attempt) == (live.step, live.attempt):
        marks.append("live (resume)")
    if checkpoint.superseded:
        marks.append("superseded")
    if checkpoint.expires_at is not None and checkpoint.expires_at <= now:
        marks.append("expired")
    if checkpoint.final:
        marks.append("final")
    return ", ".join(marks)


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


def run_text(
    state: Any, metrics: Sequence[Any], checkpoints: Sequence[Any], series: Any, now: datetime | None = None
) -> str:
    """A run: its fields, spec and summary, metrics (last, min, max), every checkpoint (live,
    superseded, expired marked), the attempts and the last steps."""
    now = now or datetime.now(UTC)
    run, spend, resume = state.run, state.spend, state.resume
    status = status_text(run.status, state.current_attempt)
    if status == "running":
        status = f"running (attempt {state.current_attempt})"
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
                (
                    "resume",
                    f"from step {resume.from_step} ({resume.handle.uri})"
                    if resume.handle is not None
                    else "no live checkpoint",
                ),
                (
                    "spend",
                    f"{usd(spend.committed_usd_micro)} committed, {usd(spend.pending_usd_micro)} pending,"
                    f" cap {usd(spend.cap_usd_micro) if spend.cap_usd_micro is not None else 'none'},"
                    f" remaining {usd(spend.remaining_usd_micro)}"
                    + (f", overrun {usd(spend.overrun_usd_micro)}" if spend.overrun_usd_micro else ""),
                ),
            ]
        ),
        "spec\n" + spec_lines(run.spec),
    ]
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
        "checkpoints\n"
        + (
            table(
                ["STEP", "ATTEMPT", "BACKEND", "URI", "FIDELITY", "SAVED", "EXPIRES", "STATE"],
                [
                    (
                        c.step,
                        c.attempt,
                        c.handle.backend if c.handle else None,
                        c.handle.uri if c.handle else None,
                        c.handle.fidelity if c.handle else None,
                        when(c.saved_at),
                        when(c.expires_at),
                        _checkpoint_state(c, state.checkpoint, now),
                    )
                    for c in checkpoints
                ],
            )
            if checkpoints
            else "  (no checkpoint saved)"
        )
    )
    parts.append(
        "attempts\n"
        + (
            table(
                ["ATTEMPT", "LABEL", "STARTED", "RESUMED FROM", "ENDED"],
                [(a.number, a.label or None, when(a.started_at), a.resumed_from_step, a.ended) for a in state.attempts],
            )
            if state.attempts
            else "  (no attempt yet)"
        )
    )
    headers, rows = _step_rows(series)
    parts.append(f"last {len(rows)} steps\n" + table(headers, rows) if rows else "last steps\n  (no step recorded)")
    return "\n\n".join(parts)


def account_text(account: Any, reservations: Sequence[Any], more: str = "") -> str:
    """An account's totals against its cap and a page of its reservations; `more` says how to
    see the next page."""
    text = fields(
        [
            ("account", account.account),
            ("parent", account.parent or None),
            ("cap", usd(account.cap_usd_micro) if account.cap_usd_micro is not None else "none"),
            ("committed", usd(account.committed_usd_micro)),
            ("pending", usd(account.pending_usd_micro)),
            ("remaining", usd(account.remaining_usd_micro)),
            ("overrun", usd(account.overrun_usd_micro)),
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
    return table(["FAMILY", "CURRENT", "VERSIONS"], [(f.family, f.current or None, f.version_count) for f in families])


def _verdict(promotion: Any) -> str | None:
    verdict = promotion.verdict
    if verdict is None:
        return None
    stats = ", ".join(f"{key}={value}" for key, value in sorted((verdict.stats or {}).items()))
    return (
        f"{'passed' if verdict.passed else 'failed'}"
        + (f": {verdict.reason}" if verdict.reason else "")
        + (f" ({stats})" if stats else "")
    )


def family_text(family: str, current: int, versions: Sequence[Any], history: Sequence[Any]) -> str:
    """A family: its current version, every version, and the promotions and rollbacks with their
    gate verdicts and who made them."""
    return "\n\n".join(
        [
            fields([("family", family), ("current", current or None)]),
            "versions\n"
            + table(
                ["VERSION", "ARTIFACT", "DIGEST", "SOURCE RUN", "STEP", "REGISTERED"],
                [
                    (
                        v.version,
                        v.artifact_uri,
                        v.digest.rpartition(":")[2][:12],
                        v.source_run_id or None,
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
                    [
                        (when(p.at), p.kind, p.version, p.previous or None, p.principal, _verdict(p), p.reason or None)
                        for p in history
                    ],
                )
                if history
                else "  (never promoted)"
            ),
        ]
    )


def cap_text(account: Any, position: int) -> str:
    """What `spend cap` prints: the account's cap and totals as they stand after it."""
    cap = usd(account.cap_usd_micro) if account.cap_usd_micro is not None else "none"
    return (
        f"{account.account}: cap {cap}, {usd(account.committed_usd_micro)} committed,"
        f" {usd(account.pending_usd_micro)} pending, remaining {usd(account.remaining_usd_micro)}"
        f" (position {position})"
    )


def move_text(kind: str, family: str, current: int, previous: int, position: int, duplicate: bool) -> str:
    """What `registry promote` and `registry rollback` print."""
    again = " (already done: answered as a duplicate)" if duplicate else ""
    return f"{family}: {kind} to version {current} (was {previous or 'none'}) at position {position}{again}"
