"""The commands through a server: the reads (`runs_list`, `runs_show`, `runs_diff`, `spend_show`,
`events_export`; the registry's are in services.cli.registry) print what services.cli.local prints
from a database file (services.render); the writes operators make by hand (`runs_retract`,
`spend_cap`) are recorded with the operating-system user as principal unless a token names one
(services.cli.connection). Each handler takes the parsed arguments; `add_runs_parser`,
`add_spend_parser` and `add_events_parser` add their commands to the CLI's.

A run is named the way people remember it (services.cli.naming): `resolve_run` is that naming
through a server.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from services.cli.connection import talking
from services.cli.naming import MATCH_PAGE, Candidate, Lister, NoRun, account_of, choose_run, is_run_id, key_run_id
from services.cli.options import add_reading, add_writing, positive
from services.cli.output import Failure, emit
from services.cli.run_diff import diff_refs, diff_shown
from services.cli.run_rows import add_format_options, as_rows, write_rows
from services.render.diff import COMPARE_RUNS_MAX
from services.render.runs import retract_text, run_text, runs_list_text, status_text
from services.render.spend import account_totals_text, cap_text
from services.render.tables import to_json

if TYPE_CHECKING:
    from clients import LedgerClient

__all__ = [
    "add_events_parser",
    "add_runs_parser",
    "add_spend_parser",
    "cap_of",
    "events_export",
    "resolve_run",
    "runs_diff",
    "runs_list",
    "runs_retract",
    "runs_show",
    "spend_cap",
    "spend_show",
]

RUNS_PAGE = 500
SERIES_PAGE_MAX = 10_000
EVENTS_PAGE = 1_000


def add_runs_parser(commands: Any) -> Any:
    """Add `runs` and its commands to the CLI's (the `add_subparsers` of services.cli.commands.parser);
    the group, for those of services.cli.run_tags."""
    group = commands.add_parser("runs", help="training runs").add_subparsers(dest="action", required=True)
    listed = add_reading(group, "list", runs_list, "list runs, newest first")
    listed.add_argument("--status", choices=("running", "lost", "done", "failed", "stopped"), default="")
    listed.add_argument("--name", default="", metavar="TEXT", help="runs whose name holds TEXT (any case)")
    listed.add_argument("--account", default="", help="runs whose spend lies under this account")
    listed.add_argument("--limit", type=positive, default=100, help="at most this many (default: %(default)s)")
    listed.add_argument("--include-retracted", action="store_true", help="list retracted runs too (marked)")
    listed.add_argument("--where", default="", metavar="EXPR", help="runs a search selects (docs/search.md)")
    listed.add_argument("--order-by", default="", metavar="FIELD", help="order by a search field (asc, or desc after)")
    listed.add_argument("--desc", action="store_true", help="order by --order-by descending")
    add_format_options(listed)
    shown = add_reading(group, "show", runs_show, "a run's state, spec, metrics, checkpoints, attempts and last steps")
    shown.add_argument("run", metavar="RUN", help="run id, unique id prefix (4+ characters), name or part of one")
    shown.add_argument("--steps", type=int, default=10, help="how many of the last steps to show (default: 10)")
    diffed = add_reading(group, "diff", runs_diff, "what runs differ in: spec and summary keys, spend, best checkpoint")
    diffed.add_argument("runs", nargs="+", metavar="RUN", help=f"2 to {COMPARE_RUNS_MAX} runs: id, prefix, name")
    diffed.add_argument("--all", dest="everything", action="store_true", help="show the identical keys too")
    retracted = add_reading(group, "retract", runs_retract, "retract a run: hidden from lists, refused new writes")
    retracted.add_argument("run", metavar="RUN", help="run id, unique id prefix (4+ characters), name or part of one")
    retracted.add_argument("--reason", required=True, help="why (recorded; retracting again takes the same reason)")
    return group


def add_spend_parser(commands: Any) -> Any:
    """Add `spend` and its commands here; the group, for those of services.cli.bills."""
    group = commands.add_parser("spend", help="spend accounts").add_subparsers(dest="action", required=True)
    spent = add_reading(group, "show", spend_show, "an account's totals against its cap and its reservations")
    spent.add_argument("account", metavar="RUN_OR_ACCOUNT")
    spent.add_argument("--limit", type=positive, default=50, help="reservations per page (default: %(default)s)")
    spent.add_argument("--page", default="", metavar="TOKEN", help="the page a previous `spend show` pointed to")
    capped = add_writing(group, "cap", spend_cap, "set the cap of an account or a run, or lift it (none)")
    capped.add_argument("account", metavar="RUN_OR_ACCOUNT")
    capped.add_argument("amount", metavar="AMOUNT", help="dollars (25, 12.50) or none")
    return group


def add_events_parser(commands: Any) -> None:
    group = commands.add_parser("events", help="the event log").add_subparsers(dest="action", required=True)
    exported = add_reading(group, "export", events_export, "events as JSON lines")
    exported.add_argument("--from", dest="from_position", type=int, default=1, metavar="N")
    exported.add_argument("--types", nargs="*", default=[], metavar="TYPE")


def resolve_run(client: LedgerClient, ref: str) -> str:
    """The id of the run `ref` names, through the server (see `choose_run`). A whole run id is
    looked up by a read of that run first, so a token that may read the run but not list runs
    (a trainer's) finds it; such a token is told to name a run by its id or run key, which it may
    read. Raises Failure (status 1) for no run or an ambiguous reference; client errors propagate."""
    from clients import PermissionDenied
    from ledger.domain.reasons import Reason

    if is_run_id(ref.strip()) and _readable(client, ref.strip().lower()):
        return ref.strip().lower()
    try:
        return choose_run(ref, _lister(client))
    except PermissionDenied as error:
        if error.reason != Reason.ROLE_NOT_ALLOWED:
            raise
        keyed = key_run_id(ref.strip())
        if _readable(client, keyed):
            return keyed
        hint = " this token may read: it cannot list runs, so name a run by its run id or run key"
        raise NoRun(ref.strip(), hint) from None


def _readable(client: LedgerClient, run_id: str) -> bool:
    """Whether run `run_id` exists and the caller may read it (a scoped token is told "outside
    the scope" of a run that does not exist too)."""
    from clients import NotFound, PermissionDenied
    from ledger.domain.reasons import Reason

    try:
        client.get_run_state(run_id=run_id)
    except NotFound:
        return False
    except PermissionDenied as error:
        if error.reason == Reason.OUTSIDE_SCOPE:
            return False
        raise
    return True


def _lister(client: LedgerClient) -> Lister:
    """The runs the server lists by id prefix and part of the name, page by page."""

    def lister(prefix: str, contains: str) -> Iterator[Candidate]:
        token = ""
        while True:
            page = client.list_runs(
                page_size=MATCH_PAGE,
                page_token=token,
                run_id_prefix=prefix,
                name_contains=contains,
                include_retracted=True,
            )
            for run in page.runs:
                yield Candidate(run.run_id, run.name, status_text(run.status, run.current_attempt), run.opened_at)
            token = page.next_page_token
            if not token:
                return

    return lister


def runs_list(args: argparse.Namespace) -> None:
    """Runs newest first (or in --order-by's order), filtered by status, part of the name,
    account and a search (--where), each ANDed; at most --limit. A table, or rows in --format
    (services.cli.run_rows; each run's state is read for its finished time, spec and summary)."""
    runs: list[Any] = []
    more = False
    rows, records = as_rows(args), []
    with talking(args) as client:
        token = ""
        while len(runs) < args.limit:
            page = _runs_page(client, args, min(RUNS_PAGE, args.limit - len(runs)), token)
            runs += page.runs
            token = page.next_page_token
            if not token:
                break
        more = bool(token)
        if rows:
            from clients.frames import run_record

            records = [run_record(run, client.get_run_state(run_id=run.run_id)) for run in runs]
    if rows:
        write_rows(args, records, more)
        return
    emit(args, runs, lambda: runs_list_text(runs, more, args.limit))


def _runs_page(client: LedgerClient, args: argparse.Namespace, size: int, token: str) -> Any:
    """A page of `runs list`: a search's with --where or --order-by, else a listing's."""
    filters = {"status": args.status, "name_contains": args.name, "account": args.account}
    if args.where or args.order_by:
        return client.search_runs(
            args.where,
            order_by=args.order_by,
            descending=args.desc,
            page_size=size,
            page_token=token,
            include_retracted=args.include_retracted,
            **filters,
        )
    return client.list_runs(page_size=size, page_token=token, include_retracted=args.include_retracted, **filters)


def runs_show(args: argparse.Namespace) -> None:
    """A run's state, spec, metrics, checkpoints, attempts and last steps."""
    with talking(args) as client:
        run_id = resolve_run(client, args.run)
        state = client.get_run_state(run_id=run_id)
        position = state.position
        metrics = client.get_metrics(run_id=run_id, min_position=position)
        checkpoints: list[Any] = []
        token = ""
        while True:
            page = client.list_checkpoints(run_id=run_id, page_token=token, min_position=position)
            checkpoints += page.checkpoints
            token = page.next_page_token
            if not token:
                break
        series = _last_steps(client, run_id, state.last_step, args.steps, position)
    value = {"state": state, "metrics": metrics, "checkpoints": checkpoints, "series": series}
    emit(args, value, lambda: run_text(state, metrics, checkpoints, series))


def runs_diff(args: argparse.Namespace) -> None:
    """What runs differ in: spec and summary keys (identical ones folded unless --all), spend and
    best checkpoint, one column per run."""
    refs = diff_refs(args.runs)
    with talking(args) as client:
        run_ids = [resolve_run(client, ref) for ref in refs]
        states = [client.get_run_state(run_id=run_id) for run_id in run_ids]
    diff_shown(args, run_ids, states)


def runs_retract(args: argparse.Namespace) -> None:
    """Retract a run (operators): hidden from lists, refused new writes, its history kept."""
    with talking(args) as client:
        run_id = resolve_run(client, args.run)
        receipt = client.retract_run(run_id=run_id, reason=args.reason)
        name = client.get_run_state(run_id=run_id, min_position=receipt.position).run.name
    emit(args, receipt, retract_text(run_id, name, receipt.position, receipt.duplicate))


def _last_steps(client: LedgerClient, run_id: str, last: int | None, count: int, position: int) -> Any:
    """The last `count` steps of the run's live line (none when count is 0 or no step is)."""
    from clients.models import SeriesPage

    count = max(0, min(count, SERIES_PAGE_MAX))
    if count == 0 or last is None:
        return SeriesPage()
    return client.get_series(run_id=run_id, from_step=max(0, last - count + 1), page_size=count, min_position=position)


def _account(client: LedgerClient, ref: str) -> Any:
    """The account `ref` names: an account, else a run's (any way resolve_run takes)."""
    from clients import NotFound

    return account_of(
        ref, lambda name: client.get_account(account=name), NotFound, lambda name: resolve_run(client, name)
    )


def spend_show(args: argparse.Namespace) -> None:
    """An account's totals and a page of its reservations (--limit, --page)."""
    with talking(args) as client:
        account = _account(client, args.account)
        page = client.list_reservations(account=account.account, page_size=args.limit, page_token=args.page)
        if (
            page.next_page_token
            and not client.list_reservations(
                account=account.account, page_size=1, page_token=page.next_page_token
            ).reservations
        ):
            page = type(page)(reservations=page.reservations)  # A full last page: nothing follows.
    more = (
        f"(more reservations: trainledger spend show {args.account} --page {page.next_page_token})"
        if page.next_page_token
        else ""
    )
    value = {"account": account, "reservations": page.reservations, "next_page_token": page.next_page_token}
    emit(args, value, lambda: account_totals_text(account, page.reservations, more))


def spend_cap(args: argparse.Namespace) -> None:
    """Set (or with "none" lift) the cap of an account or a run."""
    cap = cap_of(args.amount)
    with talking(args) as client:
        account = _account(client, args.account)
        receipt = client.set_cap(account=account.account, cap_usd_micro=cap)
        run_name = _run_name(client, account.account)
    after = receipt.account or account
    emit(args, receipt, lambda: cap_text(after, receipt.position, run_name))


def _run_name(client: LedgerClient, account: str) -> str | None:
    """The name of the run whose account is `account` (named by the run's id), None for an
    account of no run."""
    from uuid import UUID  # Here: the parser does not need it.

    from clients import NotFound

    try:
        UUID(account)
        return client.get_run_state(run_id=account).run.name
    except (ValueError, NotFound):
        return None


def cap_of(text: str) -> int | None:
    """A cap as typed: dollars ("25", "12.50", "$1,000") to micro-dollars, "none" for no cap."""
    from trainledger.bills import usd_micro_from_text

    if text.strip().lower() in ("none", "no", "-"):
        return None
    try:
        micro = usd_micro_from_text(text)
    except ValueError as error:
        raise Failure(f"{error} (a cap is dollars, like 25 or 12.50, or none)") from None
    if micro < 0:
        raise Failure(f"a cap cannot be negative: {text}")
    return micro


def events_export(args: argparse.Namespace) -> None:
    """The log from --from as JSON lines, as the server sends it (each event with its digest),
    page by page."""
    from clients import InvalidArgument

    with talking(args) as client:
        position = max(1, args.from_position)
        while True:
            count = 0
            try:
                events = list(client.read_events(from_position=position, limit=EVENTS_PAGE, types=args.types))
            except InvalidArgument as refused:
                from ledger.domain.reasons import Reason
                from ledger.domain.topics import event_topics, unknown_types_text

                if refused.reason != Reason.UNKNOWN_EVENT_TYPE:
                    raise

                unknown = [name for name in args.types if not event_topics(name)]
                raise Failure(unknown_types_text(unknown) if unknown else refused.message, status=2) from None
            for event in events:
                sys.stdout.write(to_json(event, indent=None) + "\n")
                position = event.position + 1
                count += 1
            if count < EVENTS_PAGE:
                return
