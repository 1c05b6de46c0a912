"""How money and accounts read in text meant for people: refusals, CLI output, the dashboard,
logs and the examples' prints. The wire and the stored events keep integer micro-dollars and ids;
only the words people read go through here, so every message says the same thing the same way.

Both sides of the wire import it (the ledger, the server, the clients). Standard library only.
"""

from __future__ import annotations

__all__ = ["account_text", "usd_text"]


def usd_text(usd_micro: int) -> str:
    """Micro-dollars as dollars, exactly: cents always, further digits only where the amount has
    them. 12_500_000 -> "$12.50", 30_000 -> "$0.03", 73_400 -> "$0.0734", 123 -> "$0.000123",
    -1_500_000 -> "-$1.50", 1_234_000_000 -> "$1,234.00"."""
    sign = "-" if usd_micro < 0 else ""
    whole, micro = divmod(abs(usd_micro), 1_000_000)
    digits = f"{micro:06d}"
    return f"{sign}${whole:,}.{digits[:2]}{digits[2:].rstrip('0')}"


def account_text(account: str, run_name: str | None = None) -> str:
    """A spend account as people know it. A run's account is named by the run's id: given the
    run's name (`run_name`, "" for a run without one) it reads "run sft-demo (<run id>)" or
    "run <run id>"; any other account (None) reads "account team-a"."""
    if run_name is None:
        return f"account {account}"
    return f"run {run_name} ({account})" if run_name else f"run {account}"
