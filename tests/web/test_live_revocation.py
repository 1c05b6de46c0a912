"""The dashboard's live feeds end when the token that opened them stops being valid, over real
HTTP: a run's feed and the runs feed, opened with the login cookie or a bearer header, send one
`error` event (TOKEN_REVOKED, TOKEN_EXPIRED) and close once the token is revoked or expires."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from clients import LedgerClient
from ledger import Ledger
from services.runtime.auth import CACHE_S, STREAM_RECHECK_S
from services.web.access import TOKEN_COOKIE
from tests.web.conftest import WebServer
from tests.web.test_live import Event, events, new_run

WHO = {"principal": "tests", "request_id": ""}
# How long a read waits before calling the feed open for good: past the re-check interval, and
# short of the feeds' keep-alive comment (PING_S), which would count as a read.
WAIT_S = 2 * (STREAM_RECHECK_S + CACHE_S) + 1


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def served(tmp_path, clock: Clock) -> Iterator[tuple[WebServer, Ledger]]:
    ledger = Ledger.open(str(tmp_path / "ledger.db"), clock=clock)
    server = WebServer(ledger=ledger, auth=True).start()
    try:
        yield server, ledger
    finally:
        server.stop()
        ledger.close()


def feed_of(server: WebServer, ledger: Ledger, which: str) -> str:
    if which == "runs":
        return "/api/live"
    admin = ledger.issue_token(holder="root", role="admin", **WHO).bearer
    with LedgerClient(server.address, token=admin, timeout_s=10.0) as client:
        run_id, _ = new_run(client, "live-revoked")
    return f"/api/runs/{run_id}/live"


def final_event(stream: Iterator[Event]) -> tuple[str, dict[str, str]]:
    """The last event of a feed that ends (its comments skipped)."""
    last: tuple[str, dict[str, str]] = ("", {})
    for kind, _, data in stream:
        if kind != "comment":
            last = (kind, data)
    return last


@pytest.mark.parametrize("which", ["run", "runs"])
def test_revoking_the_cookies_token_ends_the_feed(served: tuple[WebServer, Ledger], which: str) -> None:
    server, ledger = served
    path = feed_of(server, ledger, which)
    issued = ledger.issue_token(holder="viewer", role="operator", **WHO)
    cookies = {TOKEN_COOKIE: issued.bearer}
    with httpx.Client(base_url=server.url, cookies=cookies, timeout=httpx.Timeout(WAIT_S)) as http:
        with http.stream("GET", path) as response:
            assert response.status_code == 200
            stream = events(response)
            next(stream)  # The feed is open: its first state or its opening comment.
            ledger.revoke_token(token_id=issued.token.token_id, reason="left the team", **WHO)
            kind, data = final_event(stream)
    assert (kind, data["reason"]) == ("error", "TOKEN_REVOKED")


def test_an_expired_bearer_token_ends_the_runs_feed(served: tuple[WebServer, Ledger], clock: Clock) -> None:
    server, ledger = served
    issued = ledger.issue_token(holder="viewer", role="auditor", expires_at=clock.now + timedelta(seconds=6), **WHO)
    headers = {"authorization": f"Bearer {issued.bearer}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=httpx.Timeout(WAIT_S)) as http:
        with http.stream("GET", "/api/live") as response:
            assert response.status_code == 200
            stream = events(response)
            next(stream)
            clock.now += timedelta(seconds=7)
            kind, data = final_event(stream)
    assert (kind, data["reason"]) == ("error", "TOKEN_EXPIRED")
