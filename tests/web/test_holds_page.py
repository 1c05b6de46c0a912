"""A run's page lists its holds as a table (server-rendered, "none yet" when there are none) and
gives its spend figure the run's life: its opening and, once finished, its finish."""

from __future__ import annotations

import httpx

from clients import LedgerClient
from tests.web.conftest import Recorded, fresh_key
from tests.web.test_pages import page


def test_a_run_page_lists_its_holds_in_a_table(http: httpx.Client, recorded: Recorded) -> None:
    main = page(http, "/runs/" + recorded.run_id).one("main")
    table = main.one("table", class_="holds")
    assert "hidden" not in table.attrs
    rows = table.one("tbody").all("tr")
    # web-chart committed $1.50 of a $2 hold and holds $0.25 pending: the pending first.
    assert [row.attrs["data-state"] for row in rows] == ["pending", "committed"]
    assert [[cell.text for cell in row.all("td")][:4] for row in rows] == [
        ["pending", "reservation", "$0.25", "-"],
        ["committed", "reservation", "$2.00", "$1.50"],
    ]
    assert not main.all("details", class_="holds-more") and not main.all("p", class_="holds-count")
    assert "hidden" in main.one("p", class_="holds-empty").attrs
    assert "reservations (JSON)" not in http.get("/runs/" + recorded.run_id).text


def test_a_run_without_holds_says_none_yet(http: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id = grpc_client.open_run(run_key=fresh_key(), name="web-unspent").state.run.run_id
    main = page(http, "/runs/" + run_id).one("main")
    assert "hidden" in main.one("table", class_="holds").attrs
    none = main.one("p", class_="holds-empty")
    assert none.text == "none yet" and "hidden" not in none.attrs


def test_the_spend_figure_spans_the_runs_life(http: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id = grpc_client.open_run(run_key=fresh_key(), name="web-life").state.run.run_id
    grpc_client.start_attempt(run_id=run_id, attempt_id="a1")
    figure = page(http, "/runs/" + run_id).one("figure", class_="spend-chart")
    run = grpc_client.get_run_state(run_id=run_id).run
    assert run.opened_at is not None
    assert figure.attrs["data-opened-at"] == run.opened_at.isoformat()
    assert figure.attrs["data-finished-at"] == ""
    receipt = grpc_client.finish_run(run_id=run_id, attempt=1)
    run = grpc_client.get_run_state(run_id=run_id, min_position=receipt.position).run
    assert run.finished_at is not None
    figure = page(http, "/runs/" + run_id).one("figure", class_="spend-chart")
    assert figure.attrs["data-finished-at"] == run.finished_at.isoformat()


def test_a_hold_the_ledger_settled_shows_its_amount_and_why(http: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id = grpc_client.open_run(run_key=fresh_key(), name="web-settled").state.run.run_id
    grpc_client.start_attempt(run_id=run_id, attempt_id="a1")
    grpc_client.reserve(account=run_id, reservation_id="held", amount_usd_micro=1_000_000, attempt=1)
    started = grpc_client.start_attempt(run_id=run_id, attempt_id="a2")
    grpc_client.get_run_state(run_id=run_id, min_position=started.position)
    main = page(http, "/runs/" + run_id).one("main")
    table = main.one("table", class_="holds")
    assert [h.text for h in table.one("thead").all("th")] == [
        "state",
        "kind",
        "amount",
        "actual",
        "attempt",
        "reserved",
        "settled",
        "reason",
    ]
    [row] = table.one("tbody").all("tr")
    cells = [cell.text for cell in row.all("td")]
    assert cells[:5] == ["settled", "reservation", "$1.00", "$1.00", "1"]
    assert cells[7] == "ATTEMPT_SUPERSEDED: presumed spent as reserved"


def test_the_attempts_table_says_when_each_was_last_seen_and_lost(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    run_id = grpc_client.open_run(run_key=fresh_key(), name="web-attempts").state.run.run_id
    started = grpc_client.start_attempt(run_id=run_id, attempt_id="a1")
    grpc_client.get_run_state(run_id=run_id, min_position=started.position)
    main = page(http, "/runs/" + run_id).one("main")
    table = main.one("table", class_="attempts")
    headers = [h.text for h in table.one("thead").all("th")]
    assert headers == ["attempt", "label", "started", "resumed from", "ended", "last seen", "lost"]
    [row] = table.one("tbody").all("tr")
    assert [cell.text for cell in row.all("td")][5:] == ["-", "-"]


def test_a_long_runs_holds_show_the_pending_and_the_newest_with_the_rest_folded(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    """A run of many steps holds one reservation a step: its page lists the pending holds first,
    then the newest 20 settled ones, newest first, and folds the older ones under a count."""
    run_id = grpc_client.open_run(run_key=fresh_key(), name="web-many-holds").state.run.run_id
    grpc_client.start_attempt(run_id=run_id, attempt_id="a1")
    grpc_client.reserve(account=run_id, reservation_id="early-pending", amount_usd_micro=7_000, attempt=1)
    for step in range(25):
        grpc_client.reserve(account=run_id, reservation_id=f"step-{step}", amount_usd_micro=1_000 + step, attempt=1)
        grpc_client.commit(account=run_id, reservation_id=f"step-{step}", actual_usd_micro=1_000 + step)
    last = grpc_client.reserve(account=run_id, reservation_id="late-pending", amount_usd_micro=9_000, attempt=1)
    grpc_client.get_run_state(run_id=run_id, min_position=last.position)

    main = page(http, "/runs/" + run_id).one("main")
    count = main.one("p", class_="holds-count")
    assert count.text == "27 holds, 2 pending: the pending and the newest 20 shown"
    shown = main.one("table", class_="holds").one("tbody").all("tr")
    amounts = [[cell.text for cell in row.all("td")][2] for row in shown]
    assert [row.attrs["data-state"] for row in shown[:2]] == ["pending", "pending"]
    assert amounts[:2] == ["$0.009", "$0.007"]  # The pending, newest first.
    # Steps 24 down to 5 ($0.001024 ... $0.00102 ... $0.001005).
    assert amounts[2:] == [f"$0.00{1_000 + step}".rstrip("0") for step in range(24, 4, -1)]
    folded = main.one("details", class_="holds-more")
    assert folded.one("summary").text == "5 older holds"
    assert len(folded.one("tbody").all("tr")) == 5


def test_a_run_with_more_holds_than_a_page_shows_its_latest_and_a_late_pending_one(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    """More holds than the page the spend document reads (200): the table still shows the
    pending one reserved last and the newest settled ones, read newest first."""
    run_id = grpc_client.open_run(run_key=fresh_key(), name="web-long-holds").state.run.run_id
    grpc_client.start_attempt(run_id=run_id, attempt_id="a1")
    for step in range(205):
        grpc_client.reserve(account=run_id, reservation_id=f"s{step}", amount_usd_micro=1_000_000 + step, attempt=1)
        grpc_client.commit(account=run_id, reservation_id=f"s{step}", actual_usd_micro=1_000_000 + step)
    last = grpc_client.reserve(account=run_id, reservation_id="late", amount_usd_micro=9_000_000, attempt=1)
    grpc_client.get_run_state(run_id=run_id, min_position=last.position)

    main = page(http, "/runs/" + run_id).one("main")
    assert main.one("p", class_="holds-count").text.startswith("206 holds, 1 pending: the pending and the newest 20")
    rows = main.one("table", class_="holds").one("tbody").all("tr")
    amounts = [[cell.text for cell in row.all("td")][2] for row in rows]
    assert amounts[0] == "$9.00" and rows[0].attrs["data-state"] == "pending"
    assert amounts[1:] == [f"$1.000{step}".rstrip("0") for step in range(204, 184, -1)]  # Steps 204 to 185.


def test_a_run_with_more_pending_holds_than_shown_says_how_many_are_shown(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    """More pending holds than the table shows (200): the line over it must not say every
    pending hold is shown, but how many of them are (the newest)."""
    run_id = grpc_client.open_run(run_key=fresh_key(), name="web-many-pending").state.run.run_id
    grpc_client.start_attempt(run_id=run_id, attempt_id="a1")
    for step in range(205):
        last = grpc_client.reserve(account=run_id, reservation_id=f"p{step}", amount_usd_micro=1_000, attempt=1)
    grpc_client.get_run_state(run_id=run_id, min_position=last.position)

    main = page(http, "/runs/" + run_id).one("main")
    rows = main.one("table", class_="holds").one("tbody").all("tr")
    assert [row.attrs["data-state"] for row in rows] == ["pending"] * 200
    said = main.one("p", class_="holds-count").text
    assert said.startswith("205 holds, 205 pending: the newest 200 pending and"), said
