"""Money and accounts in text for people (trainledger.text): dollars, exact to the micro-dollar,
with cents always and further digits only where the amount has them; a run's account by the
run's name with its id after."""

from __future__ import annotations

import pytest

from trainledger.text import account_text, usd_text


@pytest.mark.parametrize(
    ("usd_micro", "text"),
    [
        (12_500_000, "$12.50"),
        (30_000, "$0.03"),
        (123, "$0.000123"),
        (73_400, "$0.0734"),
        (1, "$0.000001"),
        (0, "$0.00"),
        (49_970_000, "$49.97"),
        (1_234_000_000, "$1,234.00"),
        (-1_500_000, "-$1.50"),
        (-5, "-$0.000005"),
        (9_223_372_036_854_775_807, "$9,223,372,036,854.775807"),
    ],
)
def test_dollars_are_exact_with_cents_always(usd_micro: int, text: str) -> None:
    assert usd_text(usd_micro) == text


def test_a_run_account_reads_as_the_run_with_its_id_after_and_others_as_accounts() -> None:
    run_id = "3f2a9c1e-0000-5000-8000-000000000001"
    assert account_text(run_id, "sft-demo") == f"run sft-demo ({run_id})"
    assert account_text(run_id, "") == f"run {run_id}"
    assert account_text("team-a") == "account team-a"
