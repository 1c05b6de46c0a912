"""What the providers billed, recorded on the ledger beside what the trainers estimated.

The ledger's spend is an estimate: every billable call reserves and commits what the price sheet
says it costs. The providers' bills say what it did cost. This package pulls a bill, turns it
into BilledLines (clients.models; Spend.RecordBilledUsage in spend.proto) and records them; the
ledger then answers `reconcile()` (estimate beside bill, per run and account, drift flagged above
a threshold, 5% by default) and `adjust_to_bill()` (the drift recorded as an adjustment, so the
committed spend and the caps above it reflect the bill).

    from clients import LedgerClient
    from clients.billing import pull_tinker, pull_modal, read_bill_file, send_lines

    ledger = LedgerClient("127.0.0.1:50051")
    result = pull_tinker(ledger, datetime(2026, 7, 1, tzinfo=UTC), datetime(2026, 7, 31, tzinfo=UTC))
    print(result.recorded, result.restated, result.unchanged)      # a PullResult
    report = ledger.reconcile(threshold_percent=5)                 # runs, accounts, providers, unattributed

Pullers, one per provider; each makes lines from the provider's own records and sends them:

- Tinker (clients.billing.tinker): `pull_tinker(ledger, start, end, base_url=, api_key=)` asks
  Tinker's billing API (tinker.AdminClient.get_billing_usage; an admin or billing-admin key) in
  hour-aligned windows of at most 14 days; `tinker_lines(response)` is the conversion alone: one
  line per hourly bucket, session x base model x usage kind.
- Modal (clients.billing.modal): `pull_modal(...)` and `modal_lines(...)`, the same for Modal's
  usage report.
- A file (clients.billing.files): `read_bill_file(path, ...)` reads a provider's bill exported
  as a file into lines (BillFileError names what is wrong with it), to be sent with send_lines.

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
lines into requests of at most 5,000 lines and about 2 MiB (the server takes 10,000 and 3 MiB)
and sums the receipts into a PullResult (recorded, restated, unchanged, lines, requests,
position). Every request is idempotent: an interrupted pull is simply run again. The pullers use
the synchronous LedgerClient.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clients.billing.send import BYTES_PER_REQUEST, LINES_PER_REQUEST, PullResult, batches, send_lines
from clients.billing.tinker import pull_tinker, tinker_lines, tinker_windows

if TYPE_CHECKING:
    from clients.billing.files import BillFileError, read_bill_file
    from clients.billing.modal import modal_lines, pull_modal

__all__ = [
    "BYTES_PER_REQUEST",
    "LINES_PER_REQUEST",
    "PullResult",
    "batches",
    "send_lines",
    "pull_tinker",
    "tinker_lines",
    "tinker_windows",
    "pull_modal",
    "modal_lines",
    "read_bill_file",
    "BillFileError",
]

# The Modal and file pullers are imported when first used, so that importing the package needs
# neither their dependencies nor them.
_LAZY = {
    "pull_modal": "clients.billing.modal",
    "modal_lines": "clients.billing.modal",
    "read_bill_file": "clients.billing.files",
    "BillFileError": "clients.billing.files",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
