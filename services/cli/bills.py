"""`trainledger spend pull` and `trainledger spend reconcile`: providers' bills beside the ledger.

    trainledger spend pull --provider tinker|modal --from DATE --to DATE [--resolution h|d]
    trainledger spend pull --file BILL.csv|BILL.json --provider NAME [--cost-data-through TIME]
    trainledger spend reconcile [RUN|ACCOUNT] [--threshold PERCENT] [--adjust] [--json]

Both talk to a server (`--address HOST:PORT`, else TRAINLEDGER_ADDRESS, else 127.0.0.1:50051),
with the token and TLS settings of the environment (TRAINLEDGER_TOKEN, TRAINLEDGER_TLS,
TRAINLEDGER_CA_FILE ...: clients.LedgerClient). A pull runs here, with the provider's own
credentials (Tinker: TINKER_API_KEY; Modal: its token in ~/.modal.toml or MODAL_TOKEN_ID /
MODAL_TOKEN_SECRET), which never reach the ledger: only the lines do. Pulling the same window
again records nothing new. Amounts print in dollars; --json prints the figures in micro-dollars.
`--adjust` records each drift not yet adjusted as an adjustment (an explicit write, never done
otherwise) and then prints the reconciliation.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from clients import LedgerClient, LedgerClientError, NotFound
from clients.billing import BillFileError, PullResult, import_bill_file, pull_modal, pull_tinker
from clients.models import AdjustReceipt, BillTotals, ReconcileReport, Reconciliation
from services.cli.connection import ADDRESS_DEFAULT, address_of
from services.cli.output import Failure, emit
from services.render.tables import table, to_json, usd, when

__all__ = ["add_parsers", "pull", "reconcile", "reconcile_text"]


def moment(text: str) -> datetime:
    """A date (midnight UTC) or an RFC 3339 time; a time without a zone is UTC."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date (2026-11-01) or a time (2026-11-01T13:00:00Z)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _client(args: argparse.Namespace) -> LedgerClient:
    return LedgerClient(address_of(args))


def pull(args: argparse.Namespace) -> None:
    """Pull a provider's bill (or import a file) and record its lines."""
    if args.file is None and args.provider not in ("tinker", "modal"):
        raise Failure("--provider must be tinker or modal, or give --file with the provider's name")
    if args.file is None and (args.start is None or args.end is None):
        raise Failure("--from and --to are required to pull from a provider")
    client = _client(args)
    try:
        if args.file is not None:
            result = import_bill_file(
                client,
                args.file,
                provider=args.provider,
                resolution=args.resolution,
                cost_data_through=args.cost_data_through,
            )
        elif args.provider == "tinker":
            result = pull_tinker(client, args.start, args.end)
        else:
            result = pull_modal(client, args.start, args.end, resolution=args.resolution)
    except BillFileError as error:
        if args.json:  # What a script reads: every bad row, on stdout, beside the line on stderr.
            print(to_json({"error": _bill_file_error(error)}))
        raise Failure(str(error), status=1) from None
    except (LedgerClientError, ValueError, OSError) as error:
        raise Failure(str(error), status=1) from None
    finally:
        client.close()
    emit(args, result, pull_text(args.provider or "the file's provider", result))


def _bill_file_error(error: BillFileError) -> dict[str, Any]:
    """A refused bill file as `spend pull --json` prints it: each bad row with its number (None
    for the file as a whole), its unit ("line" or "object") and its problem."""
    return {
        "reason": "BILL_FILE_REFUSED",
        "message": str(error),
        "path": error.path,
        "stage": error.stage,
        "problems": [{"number": p.number, "unit": p.unit, "problem": p.reason} for p in error.problems],
    }


def pull_text(provider: str, result: PullResult) -> str:
    return (
        f"{provider}: {result.lines} lines in {result.requests} requests: {result.recorded} recorded,"
        f" {result.restated} restated, {result.unchanged} unchanged (position {result.position})"
    )


def reconcile(args: argparse.Namespace) -> None:
    """Print the reconciliation of one run, one account, or the whole ledger (after adjusting)."""
    client = _client(args)
    try:
        run_id, account = _target(client, args.target)
        adjusted = client.adjust_to_bill(run_id=run_id, account=account) if args.adjust else None
        report = _whole(client, run_id, account, args.threshold, adjusted.position if adjusted else 0)
    except NotFound:
        raise Failure(f"no run or account {args.target}", status=1) from None
    except LedgerClientError as error:
        raise Failure(str(error), status=1) from None
    finally:
        client.close()
    value: dict[str, Any] = report.to_dict()
    if adjusted is not None:
        value["adjustments"] = adjusted.to_dict()["adjustments"]
    emit(args, value, reconcile_text(report, adjusted))


def _target(client: LedgerClient, target: str) -> tuple[str, str]:
    """(run id, "") when `target` names a run, ("", account) when an account, ("", "") for none.
    A run id, then an account's name, then any other way `runs show` names a run (a unique id
    prefix, a name, a run key, part of a name: services.cli.remote.resolve_run). Raises Failure when
    none answers or the reference fits several runs."""
    from services.cli.naming import NoRun
    from services.cli.remote import resolve_run  # Here: most spend commands never need it.

    if not target:
        return "", ""
    try:
        client.get_run_state(run_id=target)
        return target, ""
    except NotFound:
        pass
    try:
        client.get_account(account=target)
        return "", target
    except NotFound:
        pass
    try:
        return resolve_run(client, target), ""
    except NoRun:
        raise Failure(f"no run or account {target}", status=1) from None


def _whole(client: LedgerClient, run_id: str, account: str, threshold: float, position: int) -> ReconcileReport:
    """Every page of runs in one report."""
    report = client.reconcile(run_id=run_id, account=account, threshold_percent=threshold, min_position=position)
    runs = list(report.runs)
    while report.next_page_token:
        report = client.reconcile(
            run_id=run_id, account=account, threshold_percent=threshold, page_token=report.next_page_token
        )
        runs.extend(report.runs)
    return ReconcileReport(
        runs=runs,
        accounts=report.accounts,
        providers=report.providers,
        unattributed=report.unattributed,
        threshold_percent=report.threshold_percent,
        position=report.position,
    )


def _drift_percent(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}%"


def _bill_cells(bill: BillTotals | None) -> list[Any]:
    bill = bill or BillTotals()
    return [
        usd(bill.estimated_usd_micro),
        usd(bill.billed_usd_micro),
        usd(bill.drift_usd_micro),
        _drift_percent(bill.drift_percent),
        usd(bill.pending_bill_usd_micro),
        usd(bill.adjusted_usd_micro),
        "FLAGGED" if bill.flagged else "",
    ]


BILL_HEADERS = ["ESTIMATED", "BILLED", "DRIFT", "DRIFT %", "PENDING BILL", "ADJUSTED", ""]


def _token_rows(rows: list[Reconciliation]) -> list[list[Any]]:
    return [
        [
            row.name or row.run_id or row.account,
            t.token_class,
            f"{t.ledger_tokens:,}",
            f"{t.billed_tokens:,}",
            f"{t.drift_tokens:+,}",
        ]
        for row in rows
        for t in row.token_classes
    ]


def reconcile_text(report: ReconcileReport, adjusted: AdjustReceipt | None = None) -> str:
    """The reconciliation as the tables people read (amounts in dollars)."""
    parts: list[str] = []  # Sections: a heading and its table.
    if adjusted is not None:
        parts.append(_adjustments_text(adjusted))
    parts.append(
        f"Runs (drift beyond {report.threshold_percent:g}% of the estimate is flagged)\n"
        + (
            table(["RUN", "NAME", *BILL_HEADERS], [[r.run_id, r.name, *_bill_cells(r.bill)] for r in report.runs])
            if report.runs
            else "(no run has spend or bill lines)"
        )
    )
    if report.accounts:
        parts.append(
            "Accounts (each with the accounts and runs under it)"
            + "\n"
            + table(
                ["ACCOUNT", "PARENT", *BILL_HEADERS],
                [[a.account, a.parent, *_bill_cells(a.bill)] for a in report.accounts],
            )
        )
    tokens = _token_rows(list(report.runs))
    if tokens:
        parts.append(
            "Tokens by class (ledger's cost bases beside the bill, over the time the bill covers)"
            + "\n"
            + table(["RUN", "CLASS", "LEDGER", "BILLED", "DRIFT"], tokens)
        )
    if report.providers:
        parts.append("Providers" + "\n" + _providers_table(report))
    if report.unattributed:
        parts.append(
            "Unattributed: billed spend that no run accounted for"
            + "\n"
            + table(
                ["PROVIDER", "SOURCE", "BILLED", "LINES"],
                [[u.provider, u.source, usd(u.billed_usd_micro), u.lines] for u in report.unattributed],
            )
        )
    return "\n\n".join(parts)


def _adjustments_text(adjusted: AdjustReceipt) -> str:
    if not adjusted.adjustments:
        return "Nothing to adjust: every drift is adjusted already."
    return (
        "Adjustments recorded"
        + "\n"
        + table(
            ["ACCOUNT", "AMOUNT", "OVERRUN", "ID"],
            [
                [a.run_id or a.account, usd(a.amount_usd_micro), usd(a.overrun_usd_micro), a.adjustment_id]
                for a in adjusted.adjustments
            ],
        )
    )


def _providers_table(report: ReconcileReport) -> str:
    return table(
        [
            "PROVIDER",
            "BILLED",
            "UNATTRIBUTED",
            "LINES",
            "UNATTRIBUTED LINES",
            "RESTATED",
            "FINAL THROUGH",
            "BILLED UNTIL",
        ],
        [
            [
                p.provider,
                usd(p.billed_usd_micro),
                usd(p.unattributed_usd_micro),
                p.lines,
                p.unattributed_lines,
                p.restatements,
                when(p.cost_data_through),
                when(p.last_interval_end),
            ]
            for p in report.providers
        ],
    )


def add_parsers(spend: Any) -> None:
    """Register `pull` and `reconcile` under `trainledger spend`."""
    pulled = spend.add_parser("pull", help="record a provider's bill (pulled here with its own credentials, or a file)")
    pulled.add_argument(
        "--provider", default="", metavar="NAME", help="tinker or modal; with --file, the provider's name"
    )
    pulled.add_argument("--from", dest="start", type=moment, metavar="DATE", help="start of the window (inclusive)")
    pulled.add_argument("--to", dest="end", type=moment, metavar="DATE", help="end of the window (exclusive)")
    pulled.add_argument(
        "--file", metavar="PATH", help="a bill as CSV or JSON (clients.billing.files), or a Modal export"
    )
    pulled.add_argument(
        "--resolution", choices=("h", "d"), default="h", help="Modal's intervals (default: %(default)s)"
    )
    pulled.add_argument(
        "--cost-data-through", type=moment, metavar="TIME", help="with --file: where its amounts stop being final"
    )
    _server_options(pulled)
    pulled.set_defaults(handler=pull)
    reconciled = spend.add_parser("reconcile", help="the ledger's estimates beside the providers' bills")
    reconciled.add_argument(
        "target", nargs="?", default="", metavar="RUN|ACCOUNT", help="one run or account (default: all)"
    )
    reconciled.add_argument(
        "--threshold", type=float, default=0.0, metavar="PERCENT", help="flag drift beyond this (default: 5)"
    )
    reconciled.add_argument("--adjust", action="store_true", help="first record each unadjusted drift as an adjustment")
    _server_options(reconciled)
    reconciled.set_defaults(handler=reconcile)


def _server_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--address",
        default="",
        metavar="HOST:PORT",
        help=f"the server (default: TRAINLEDGER_ADDRESS or {ADDRESS_DEFAULT})",
    )
    sub.add_argument("--json", action="store_true", help="machine-readable output")
