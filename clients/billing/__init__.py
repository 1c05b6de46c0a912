"""What the providers billed, recorded on the ledger beside what the trainers estimated.

The ledger's spend is an estimate: every billable call reserves and commits what the price sheet
says it costs. The providers' bills say what it did cost. This package pulls a bill, turns it
into BilledLines (clients.models; Spend.RecordBilledUsage in spend.proto) and records them; the
ledger then answers `reconcile()` (estimate beside bill, per run and account, drift flagged above
a threshold, 5% by default) and `adjust_to_bill()` (the drift recorded as an adjustment, so the
committed spend and the caps above it reflect the bill).

    from datetime import UTC, datetime

    from clients import LedgerClient
    from clients.billing import import_bill_file, pull_modal, pull_tinker

    ledger = LedgerClient("127.0.0.1:50051")
    start, end = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    result = pull_tinker(ledger, start, end)                        # a PullResult
    print(result.recorded, result.restated, result.unchanged)
    pull_modal(ledger, start, end)                                  # Modal's workspace billing report
    import_bill_file(ledger, "acme-2026-11.csv", provider="acme")   # any provider's bill as a file
    report = ledger.reconcile()                                     # runs, accounts, providers, unattributed
    ledger.adjust_to_bill()                                         # the drift recorded as adjustments

Pullers, one per provider; each makes lines from the provider's own records and sends them:

- Tinker (clients.billing.tinker): `pull_tinker(ledger, start, end, base_url=, api_key=)` asks
  Tinker's billing API (tinker.AdminClient.get_billing_usage; a key with the admin or
  billing-admin role, TINKER_API_KEY by default) in hour-aligned windows of at most 14 days
  (`tinker_windows`); `tinker_lines(response)` is the conversion alone: one line per hourly
  bucket (session x base model x usage kind), and the answer's cost_data_through.
- Modal (clients.billing.modal): `pull_modal(ledger, start, end, resolution=, environment=)`
  reads the workspace's billing report through the modal SDK (`report_items`) and records one
  line per object, interval and resource (`modal_lines`, `modal_line`).
- A file (clients.billing.files): `read_bill_file(path, provider=)` reads a provider's bill as
  CSV or JSON (the columns in COLUMNS, REQUIRED_COLUMNS) or Modal's own export
  (MODAL_CSV_COLUMNS) into lines, every row checked first: BillFileError lists each BadRow.
  `load_bill_file` gives the lines with the file's shape (BillFile); `import_bill_file(ledger,
  path, provider=)` reads and sends, all or nothing.

What every line carries, and how the ledger attributes it: the provider's line id with the
billed interval (the same bucket in a later pull is the same line: sent again it is unchanged,
with another amount it is a restatement that replaces the earlier amount, never a duplicate);
the amount in integer micro-dollars, rounded half-even from the provider's figure, which is kept
as text (trainledger.bills.usd_micro_from_text), or no amount when the provider has not priced it;
the quantities by token class or unit; and the attribution the provider's records give: a run
id (Tinker session user_metadata "ledger_run_id", Modal tag "trainledger_run_id", a file's run_id
column), an account ("ledger_account", "trainledger_account", the account column) and the
provider's session id. The ledger gives a line to the run it names when it knows that run, else
to the run linked to its session (the Tinker integration links each run to its sessions with
Runs.LinkSession), else to the account it names, else leaves it unattributed (reconcile lists
unattributed spend by session or source).

Sending (clients.billing.send): `send_lines(ledger, provider, lines, cost_data_through=)` cuts the
lines into requests of at most 5,000 lines and about 2 MiB (well within what the server takes)
and sums the receipts into a PullResult (recorded, restated, unchanged, lines, requests,
position). A bill of several requests is checked whole by the ledger first (validate_only), so
it is recorded whole or not at all; a line the ledger refuses raises LineRefused with its index
in the bill. Every request is idempotent: an interrupted pull is simply run again. The pullers use
the synchronous LedgerClient. The providers' SDKs (the `tinker` and `modal` extras) are imported
only by the functions that call them, so this package imports without them.
"""

from __future__ import annotations

from clients.billing.files import (
    COLUMNS,
    MODAL_CSV_COLUMNS,
    REQUIRED_COLUMNS,
    BadRow,
    BillFile,
    BillFileError,
    import_bill_file,
    load_bill_file,
    read_bill_file,
)
from clients.billing.modal import modal_line, modal_lines, pull_modal, report_items
from clients.billing.send import BYTES_PER_REQUEST, LINES_PER_REQUEST, LineRefused, PullResult, batches, send_lines
from clients.billing.tinker import pull_tinker, tinker_lines, tinker_windows

__all__ = [
    "BYTES_PER_REQUEST",
    "LINES_PER_REQUEST",
    "LineRefused",
    "PullResult",
    "batches",
    "send_lines",
    "pull_tinker",
    "tinker_lines",
    "tinker_windows",
    "pull_modal",
    "modal_line",
    "modal_lines",
    "report_items",
    "COLUMNS",
    "REQUIRED_COLUMNS",
    "MODAL_CSV_COLUMNS",
    "BadRow",
    "BillFile",
    "BillFileError",
    "read_bill_file",
    "load_bill_file",
    "import_bill_file",
]
