"""The CLI's read commands on a database file (`--db PATH`, `--database-url URL` or
TRAINLEDGER_DATABASE_URL): offline inspection, no server. They print what services.cli.remote and
services.cli.registry print through a server (services.render), naming runs the same way
(services.cli.naming). A read
never projects beside a server: it shows the views that the serving process has committed; with no
process serving the file, it first brings the views up to the head of the log.

The ledger is imported inside the handlers, so that the CLI starts without it when it talks to a
server. `opened` is the ledger of every command on a database file.
"""

from __future__ import annotations

import argparse
import base64
import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from services.cli.naming import Candidate, account_of, choose_run
from services.cli.output import Failure, emit
from services.cli.run_diff import diff_refs, diff_shown
from services.cli.run_rows import as_rows, write_rows
from services.render.registry import families_table, family_text
from services.render.runs import retract_text, run_text, runs_list_text, status_text
from services.render.spend import account_totals_text
from services.render.tables import to_json

if TYPE_CHECKING:
    from ledger import Ledger

__all__ = [
    "local_principal",
    "opened",
    "resolve_run",
    "runs_diff",
    "runs_list",
    "runs_show",
    "spend_show",
    "registry_list",
    "registry_show",
    "runs_retract",
    "events_export",
    "rebuild",
]

PAGE = 1_000
# An export page also ends at this many stored bytes (one larger event is a page of its own), so
# the export holds a page of the log, never the log.
PAGE_BYTES = 1024 * 1024


@contextmanager
def opened(database: str, *, catch_up: bool = True, read_only: bool = False) -> Iterator[Ledger]:
    """The ledger on `database` for one command; with `read_only` nothing can write to it (verify)."""
    from ledger import Ledger, LedgerError
    from services.runtime.describe import describe

    if "://" not in database and not os.path.exists(database):
        raise Failure(f"no database at {database}")
    try:
        ledger = Ledger.open(database, project=False, read_only=read_only)
    except Exception as error:
        raise Failure(f"cannot open database {describe(database)}: {error}") from None
    try:
        if catch_up and not read_only:
            _catch_up_when_alone(database, ledger)
        yield ledger
    except LedgerError as error:
        raise Failure(error.message, status=1) from None
    except sqlite3.DatabaseError as error:  # A damaged file ("database disk image is malformed").
        raise Failure(f"cannot read database {describe(database)}: {error}") from None
    finally:
        ledger.close()


def _catch_up_when_alone(database: str, ledger: Ledger) -> None:
    """A read never projects beside a process that serves the file (that process projects, and
    the read shows the views as it committed them). With none serving, the views are brought up
    to the head of the log first, holding the file as a server would."""
    from services.runtime.holder import HolderError, acquire

    try:
        holder = acquire(database, "read")
    except HolderError:
        return
    if holder is None:  # PostgreSQL: projected by its servers and workers.
        return
    with holder:
        ledger.projector.catch_up()


def _lister(ledger: Ledger) -> Any:
    """services.cli.naming.choose_run's way to list runs, over the ledger's views."""

    def lister(prefix: str, contains: str) -> Iterator[Candidate]:
        after = None
        while True:
            page = ledger.list_runs(
                limit=PAGE, after=after, run_id_prefix=prefix, name_contains=contains, include_retracted=True
            )
            for run in page.runs:
                yield Candidate(run.run_id, run.name, status_text(run.status, run.current_attempt), run.opened_at)
            after = page.after
            if after is None:
                return

    return lister


def resolve_run(ledger: Ledger, ref: str) -> str:
    """The run `ref` names (services.cli.naming.choose_run: id, prefix, name, key, part of a name)."""
    return choose_run(ref, _lister(ledger))


def runs_list(args: argparse.Namespace) -> None:
    filters = {"status": args.status, "name_contains": args.name, "account": args.account}
    rows, records = as_rows(args), []
    with opened(args.database) as ledger:
        if args.where or args.order_by:
            found = ledger.search_runs(
                where=args.where,
                order_by=args.order_by,
                descending=args.desc,
                limit=args.limit,
                include_retracted=args.include_retracted,
                **filters,
            )
            runs, more = list(found.runs), found.next_offset is not None
        else:
            page = ledger.list_runs(limit=args.limit, include_retracted=args.include_retracted, **filters)
            runs, more = list(page.runs), page.after is not None
        if rows:
            from clients.frames import run_record

            records = [run_record(run, ledger.run_state(run.run_id)) for run in runs]
    if rows:
        write_rows(args, records, more)
        return
    emit(args, runs, runs_list_text(runs, more, args.limit))


def runs_show(args: argparse.Namespace) -> None:
    from ledger.views.models import SeriesPage

    with opened(args.database) as ledger:
        run_id = resolve_run(ledger, args.run)
        state = ledger.run_state(run_id)
        metrics = ledger.metric_stats(run_id)
        checkpoints = ledger.checkpoints(run_id, limit=PAGE * 10)
        last, count = state.last_step, max(0, min(args.steps, PAGE * 10))
        if last is None or count == 0:
            series = SeriesPage(
                steps=(), attempts=(), tokens=(), usd_micro=(), superseded=(), metrics=(), next_from_step=None
            )
        else:
            series = ledger.series(run_id, from_step=max(0, last - count + 1), limit=count)
    value = {"state": state, "metrics": metrics, "checkpoints": checkpoints, "series": series}
    emit(args, value, run_text(state, metrics, checkpoints, series, datetime.now(UTC)))


def runs_diff(args: argparse.Namespace) -> None:
    refs = diff_refs(args.runs)
    with opened(args.database) as ledger:
        run_ids = [resolve_run(ledger, ref) for ref in refs]
        states = [ledger.run_state(run_id) for run_id in run_ids]
    diff_shown(args, run_ids, states)


def local_principal() -> str:
    """Who a write on the database itself is recorded as: `local:<user>`."""
    import getpass

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"local:{user}"


def runs_retract(args: argparse.Namespace) -> None:
    """Retract a run on the database itself, recorded as `local:<user>`."""
    import uuid

    with opened(args.database) as ledger:
        run_id = resolve_run(ledger, args.run)
        receipt = ledger.retract_run(
            run_id=run_id, reason=args.reason, principal=local_principal(), request_id=str(uuid.uuid4())
        )
        name = ledger.run_state(run_id).run.name
    value = {"position": receipt.position, "duplicate": receipt.duplicate}
    emit(args, value, retract_text(run_id, name, receipt.position, receipt.duplicate))


def _account(ledger: Ledger, ref: str) -> Any:
    from ledger import LedgerError

    return account_of(ref, ledger.account, LedgerError, lambda name: resolve_run(ledger, name))


def spend_show(args: argparse.Namespace) -> None:
    """The account's totals and a page of its reservations: --limit of them after the position
    that --page names (the previous page's last)."""
    try:
        after = int(args.page or 0)
    except ValueError:
        raise Failure(f"--page {args.page} is not a page this command printed") from None
    with opened(args.database) as ledger:
        account = _account(ledger, args.account)
        page = ledger.reservations(account.account, limit=max(1, args.limit), after_position=after)
        following = page.after_position
        if (
            following is not None
            and not ledger.reservations(account.account, limit=1, after_position=following).reservations
        ):
            following = None  # A full last page: nothing follows.
    token = "" if following is None else str(following)
    more = f"(more reservations: trainledger spend show {args.account} --db ... --page {token})" if token else ""
    value = {"account": account, "reservations": page.reservations, "next_page_token": token}
    emit(args, value, account_totals_text(account, page.reservations, more))


def registry_list(args: argparse.Namespace) -> None:
    with opened(args.database) as ledger:
        families = ledger.families()
    emit(args, families, families_table(families) if families else "(no family)")


def registry_show(args: argparse.Namespace) -> None:
    with opened(args.database) as ledger:
        family = ledger.family(args.family)
    value = {
        "family": family.family,
        "current": family.current,
        "versions": family.versions,
        "history": family.history,
        "aliases": family.aliases,
        "retired": family.retired,
    }
    text = family_text(family.family, family.current, family.versions, family.history, family.aliases, family.retired)
    emit(args, value, text)


def _with_stored(ledger: Ledger, page: list[dict[str, Any]], types: list[str]) -> None:
    """Add to each event of a page what its digest covers that the decoded event does not show:
    its stored topic and its stored bytes (base64), so a checker can recompute the chain
    (ledger.storage.chain) without trainledger."""
    from ledger.domain.topics import event_topics

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
