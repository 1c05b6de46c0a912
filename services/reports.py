"""The CLI's read commands: each opens the database directly (no server) and prints a table or
JSON. A read never projects beside a server: it shows the views that the serving process has
committed; with no process serving the file, it first brings the views up to the head of the log."""

from __future__ import annotations

import argparse
import base64
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ledger import Ledger, LedgerError
from ledger.domain.base import ledger_id
from ledger.domain.topics import event_topics
from ledger.views.models import Reservation, RunState, SeriesPage
from services.describe import describe
from services.tables import basis_text, fields, table, to_json, usd, when

__all__ = [
    "Failure",
    "runs_list",
    "runs_show",
    "spend_show",
    "registry_list",
    "registry_show",
    "events_export",
    "rebuild",
]

PAGE = 1_000
# An export page also ends at this many stored bytes (one larger event is a page of its own), so
# the export holds a page of the log, never the log.
PAGE_BYTES = 1024 * 1024


class Failure(Exception):
    """A problem to report in one line, with the exit status to end with."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


@contextmanager
def opened(database: str, *, catch_up: bool = True) -> Iterator[Ledger]:
    if "://" not in database and not os.path.exists(database):
        raise Failure(f"no database at {database}")
    try:
        ledger = Ledger.open(database, project=False)
    except Exception as error:
        raise Failure(f"cannot open database {describe(database)}: {error}") from None
    try:
        if catch_up:
            _catch_up_when_alone(database, ledger)
        yield ledger
    except LedgerError as error:
        raise Failure(error.message, status=1) from None
    finally:
        ledger.close()


def _catch_up_when_alone(database: str, ledger: Ledger) -> None:
    """A read never projects beside a process that serves the file (that process projects, and
    the read shows the views as it committed them). With none serving, the views are brought up
    to the head of the log first, holding the file as a server would."""
    from services.holder import HolderError, acquire

    try:
        holder = acquire(database, "read")
    except HolderError:
        return
    if holder is None:  # PostgreSQL: projected by its servers and workers.
        return
    with holder:
        ledger.projector.catch_up()


def emit(args: argparse.Namespace, value: Any, text: str) -> None:
    print(to_json(value) if args.json else text)


def runs_list(args: argparse.Namespace) -> None:
    with opened(args.database) as ledger:
        runs = ledger.list_runs(limit=args.limit, status=args.status).runs
    emit(
        args,
        runs,
        table(
            ["run_id", "name", "status", "attempt", "last_step", "committed", "opened_at"],
            [
                (
                    r.run_id,
                    r.name,
                    r.status,
                    r.current_attempt,
                    r.last_step,
                    usd(r.committed_usd_micro),
                    when(r.opened_at),
                )
                for r in runs
            ],
        ),
    )


def _run_state(ledger: Ledger, run: str) -> RunState:
    """A run by id, else by run key."""
    try:
        return ledger.run_state(run)
    except LedgerError:
        pass
    try:
        return ledger.run_state(str(ledger_id("run", run)))
    except LedgerError:
        raise Failure(f"no run with id or key {run}", status=1) from None


def _step_rows(series: SeriesPage) -> tuple[list[str], list[list[Any]]]:
    """The metric names of a series page, and one row per record: step, attempt, tokens, cost and
    each metric's value (None where a sparse metric has none)."""
    columns = sorted(series.metrics, key=lambda column: column.name)
    # A sparse column's values by the index of their record.
    sparse = [dict(zip(column.index, column.values, strict=True)) if column.index else None for column in columns]
    rows = []
    for i, step in enumerate(series.steps):
        values = [
            column.values[i] if by_record is None else by_record.get(i)
            for column, by_record in zip(columns, sparse, strict=True)
        ]
        rows.append([step, series.attempts[i], series.tokens[i], series.usd_micro[i], *values])
    return [column.name for column in columns], rows


def runs_show(args: argparse.Namespace) -> None:
    with opened(args.database) as ledger:
        state = _run_state(ledger, args.run)
        last = state.last_step
        first = 0 if last is None else max(0, last - args.steps + 1)
        series = ledger.series(state.run.run_id, from_step=first, limit=max(1, args.steps))
    run, spend, resume = state.run, state.spend, state.resume
    names, steps = _step_rows(series)
    checkpoints = [
        (
            c.attempt,
            c.step,
            c.handle.backend,
            c.handle.uri,
            c.handle.fidelity,
            when(c.saved_at),
            when(c.expires_at),
            "live" if c is state.checkpoint else "expired",
        )
        for c in ([state.checkpoint] if state.checkpoint else []) + list(state.expired_checkpoints)
    ]
    text = "\n\n".join(
        [
            fields(
                [
                    ("run", run.run_id),
                    ("key", run.run_key),
                    ("name", run.name),
                    ("status", run.status),
                    ("opened", when(run.opened_at)),
                    ("finished", when(run.finished_at)),
                    ("error", run.error or None),
                    ("last step", last),
                    (
                        "resume",
                        f"from step {resume.from_step} ({resume.handle.uri})"
                        if resume.handle is not None
                        else "no live checkpoint",
                    ),
                    (
                        "spend",
                        f"{usd(spend.committed_usd_micro)} committed, {usd(spend.pending_usd_micro)} pending,"
                        f" cap {usd(spend.cap_usd_micro)}, remaining {usd(spend.remaining_usd_micro)},"
                        f" overrun {usd(spend.overrun_usd_micro)}",
                    ),
                ]
            ),
            "attempts\n"
            + table(
                ["number", "label", "started_at", "resumed_from", "ended"],
                [(a.number, a.label, when(a.started_at), a.resumed_from_step, a.ended) for a in state.attempts],
            ),
            "checkpoints\n"
            + table(["attempt", "step", "backend", "uri", "fidelity", "saved_at", "expires_at", "state"], checkpoints),
            "last steps\n" + table(["step", "attempt", "tokens", "usd_micro", *names], steps),
        ]
    )
    emit(args, {"state": state, "series": series}, text)


def spend_show(args: argparse.Namespace) -> None:
    with opened(args.database) as ledger:
        try:
            account = ledger.account(args.account)
        except LedgerError:
            try:
                account = ledger.account(str(ledger_id("run", args.account)))
            except LedgerError:
                raise Failure(f"no account or run {args.account}", status=1) from None
        entries: list[Reservation] = []
        after: int | None = 0
        while after is not None:
            page = ledger.reservations(account.account, limit=PAGE, after_position=after)
            entries += page.reservations
            after = page.after_position
    text = "\n\n".join(
        [
            fields(
                [
                    ("account", account.account),
                    ("parent", account.parent or None),
                    ("cap", usd(account.cap_usd_micro)),
                    ("committed", usd(account.committed_usd_micro)),
                    ("pending", usd(account.pending_usd_micro)),
                    ("remaining", usd(account.remaining_usd_micro)),
                    ("overrun", usd(account.overrun_usd_micro)),
                ]
            ),
            table(
                ["id", "kind", "state", "amount", "actual", "overrun", "basis", "reason", "at", "settled_at"],
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
                    for e in entries
                ],
            ),
        ]
    )
    emit(args, {"account": account, "reservations": entries}, text)


def registry_list(args: argparse.Namespace) -> None:
    with opened(args.database) as ledger:
        families = ledger.families()
    emit(
        args,
        families,
        table(["family", "current", "versions"], [(f.family, f.current or None, f.version_count) for f in families]),
    )


def registry_show(args: argparse.Namespace) -> None:
    with opened(args.database) as ledger:
        family = ledger.family(args.family)
    text = "\n\n".join(
        [
            fields([("family", family.family), ("current", family.current or None)]),
            "versions\n"
            + table(
                ["version", "artifact_uri", "digest", "source_run", "step", "registered_at"],
                [
                    (
                        v.version,
                        v.artifact_uri,
                        v.digest[:12],
                        v.source_run_id or None,
                        v.source_step,
                        when(v.registered_at),
                    )
                    for v in family.versions
                ],
            ),
            "history\n"
            + table(
                ["at", "kind", "version", "previous", "principal", "reason"],
                [
                    (
                        when(p.at),
                        p.kind,
                        p.version,
                        p.previous or None,
                        p.principal,
                        p.reason or (p.verdict.reason if p.verdict is not None else None),
                    )
                    for p in family.history
                ],
            ),
        ]
    )
    emit(args, family, text)


def _with_stored(ledger: Ledger, page: list[dict[str, Any]], types: list[str]) -> None:
    """Add to each event of a page what its digest covers that the decoded event does not show:
    its stored topic and its stored bytes (base64), so a checker can recompute the chain
    (ledger.storage.chain) without trainledger."""
    topics = [topic for name in types for topic in event_topics(name)]
    stored = ledger.recorder.select_notifications(page[0]["position"], len(page), topics=topics)
    by_position = {notification.id: notification for notification in stored}
    for event in page:
        notification = by_position[event["position"]]
        event["topic"] = notification.topic
        event["stored"] = base64.b64encode(notification.state).decode("ascii")


def events_export(args: argparse.Namespace) -> None:
    """The log up to its head as JSON lines, streamed page by page (pages bounded by bytes). Each
    line is an event with its digest in the hash chain, its stored topic and its stored bytes
    (base64): examples/check_export.py recomputes the chain from an export."""
    with opened(args.database, catch_up=False) as ledger:
        head, position = ledger.head(), max(1, args.from_position)
        while position <= head:
            page = ledger.read_events(from_position=position, limit=PAGE, types=args.types, bytes_max=PAGE_BYTES)
            if not page:
                return
            _with_stored(ledger, page, args.types)
            position = page[-1]["position"] + 1
            while page:
                event = page.pop(0)  # Each event is let go of once written.
                if event["position"] > head:
                    return
                sys.stdout.write(to_json(event, indent=None) + "\n")


def rebuild(args: argparse.Namespace) -> None:
    with opened(args.database, catch_up=False) as ledger:
        count = ledger.projector.rebuild()
    print(f"rebuilt every view from {count} events")
