"""A run's page shows its plan hold beside its spend: planned, drawn by its holds, still held."""

from __future__ import annotations

import httpx

from clients import LedgerClient
from tests.web.conftest import fresh_key
from tests.web.test_pages import page


def test_a_run_page_shows_its_plan_hold(http: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id = grpc_client.open_run(run_key=fresh_key(), name="web-planned", cap_usd_micro=5_000_000).state.run.run_id
    attempt = grpc_client.start_attempt(run_id=run_id, attempt_id="a1").attempt
    grpc_client.reserve_plan(account=run_id, amount_usd_micro=2_000_000, attempt=attempt)
    held = grpc_client.reserve(account=run_id, amount_usd_micro=500_000, attempt=attempt)
    grpc_client.get_account(account=run_id, min_position=held.position)  # the views hold the write
    cell = page(http, "/runs/" + run_id).one(data_field="plan_hold")
    assert cell.text == "$2.00 planned, $0.50 drawn, $1.50 held (pending)"
    unplanned = grpc_client.open_run(run_key=fresh_key(), name="web-unplanned").state.run.run_id
    assert "plan_hold" not in http.get("/runs/" + unplanned).text
