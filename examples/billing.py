"""A worked example of reconciling the ledger with a provider's bill, against a running server.

    .venv/bin/trainledger serve &                        # or any server: --address HOST:PORT
    .venv/bin/python examples/billing.py --bill bill.csv
    .venv/bin/trainledger spend pull --file bill.csv --provider acme
    .venv/bin/trainledger spend reconcile
    .venv/bin/trainledger spend reconcile --adjust

It records what two training runs of a team spent (token-priced calls, reserved and committed as
a trainer does), then writes the bill a provider might send for them, in the bill file format of
clients.billing.files: run "sft-exact" billed exactly what it committed, run "sft-over" billed 7%
more, and an hour of storage that names no run. Each run is opened under the account "team" with
a $25 cap. Run again, it finds the same runs (their keys) and writes the same bill.
"""

from __future__ import annotations

import argparse
import csv
import os
from datetime import UTC, datetime, timedelta

from clients import LedgerClient, run_key
from trainledger.bills import usd_text
from trainledger.pricing import cost_usd_micro

PRICE_PER_MILLION = 2_000_000  # $2.00 per million train tokens, in micro-dollars
TOKENS_PER_CALL = 500_000  # $1.00 a call
CALLS = 5


def spend(client: LedgerClient, name: str) -> str:
    """Open the run and commit CALLS calls of TOKENS_PER_CALL train tokens; the run's id."""
    client.open_account(account="team", cap_usd_micro=25_000_000)
    run_id = client.open_run(
        run_key=run_key({"name": name, "base_model": "Qwen/Qwen3-8B", "method": "lora"}),
        name=name,
        cap_usd_micro=10_000_000,
        parent_account="team",
    ).state.run.run_id
    basis = {
        "price_sheet": "acme-2026-11",
        "tokens": [
            {"token_class": "train", "tokens": TOKENS_PER_CALL, "usd_micro_per_million_tokens": PRICE_PER_MILLION}
        ],
    }
    amount = cost_usd_micro(basis)  # The one cost rule, which the ledger checks every basis with.
    for call in range(CALLS):
        reservation = f"{name}-call-{call}"
        client.reserve(account=run_id, reservation_id=reservation, amount_usd_micro=amount, basis=basis)
        # Each call here trains exactly the tokens it reserved for: its usage is the same basis.
        client.commit(account=run_id, reservation_id=reservation, actual_usd_micro=amount, basis=basis)
    return run_id


def write_bill(path: str, exact: str, over: str) -> None:
    """The provider's bill: one line per run for the day, and storage no run accounts for."""
    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start, end = day.isoformat(), (day + timedelta(days=1)).isoformat()
    tokens = CALLS * TOKENS_PER_CALL
    committed = CALLS * TOKENS_PER_CALL * PRICE_PER_MILLION // 1_000_000
    rows = [
        ("train-exact", exact, committed, tokens, "LoRA training"),
        ("train-over", over, committed * 107 // 100, tokens, "LoRA training"),
        ("storage-1", "", 420_000, 36, "checkpoint storage"),
    ]
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(
            ["line_id", "interval_start", "interval_end", "amount", "quantity", "unit", "run_id", "description"]
        )
        for line_id, run_id, micro, quantity, description in rows:
            unit = "train" if line_id.startswith("train") else "storage_gb_hours"
            amount = usd_text(micro).removeprefix("$").replace(",", "")
            writer.writerow([line_id, start, end, amount, quantity, unit, run_id, description])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=os.environ.get("TRAINLEDGER_ADDRESS", "127.0.0.1:50051"))
    parser.add_argument("--bill", default="bill.csv", help="where to write the bill (default: %(default)s)")
    args = parser.parse_args()
    with LedgerClient(args.address) as client:
        exact, over = spend(client, "sft-exact"), spend(client, "sft-over")
    write_bill(args.bill, exact, over)
    print(f"recorded the spend of sft-exact ({exact}) and sft-over ({over}); the bill is in {args.bill}")


if __name__ == "__main__":
    main()
