"""A client that has never reached a ledger does not wait out the outage budget in silence: its
first call to an address where no ledger listens fails within the first-contact bound (5 s by
default) with an error that names the address and the cause. Once a ledger has answered, the
outage budget applies (tests/client/test_outage_budget.py rides out a restart)."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from clients import AsyncLedgerClient, LedgerClient, Unavailable

# Generous: only a guard against waiting out the whole outage budget (30 s) or hanging.
HANG_S = 20.0


def closed_port() -> int:
    """A loopback port where nothing listens (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_first_call_to_a_closed_port_fails_soon_naming_the_address() -> None:
    address = f"127.0.0.1:{closed_port()}"
    began = time.monotonic()
    with LedgerClient(address, principal="trainer", timeout_s=5.0) as client:
        assert client.outage_budget_s == 30.0
        with pytest.raises(Unavailable) as raised:
            client.list_runs(page_size=1)
    assert time.monotonic() - began < HANG_S
    message = str(raised.value)
    assert address in message
    assert "never answered" in message
    assert "refused" in message.lower() or "failed to connect" in message.lower()


def test_the_first_contact_bound_is_configurable() -> None:
    address = f"127.0.0.1:{closed_port()}"
    with LedgerClient(address, timeout_s=5.0, first_contact_s=0.5) as client:
        assert client.first_contact_s == 0.5
        with pytest.raises(Unavailable, match=address):
            client.get_account(account="nobody")


def test_the_async_client_fails_soon_too() -> None:
    address = f"127.0.0.1:{closed_port()}"

    async def first_call() -> None:
        async with AsyncLedgerClient(address, timeout_s=5.0) as client:
            await client.list_runs(page_size=1)

    began = time.monotonic()
    with pytest.raises(Unavailable, match=address):
        asyncio.run(first_call())
    assert time.monotonic() - began < HANG_S


def test_views_not_caught_up_is_not_called_an_unanswered_ledger(tmp_path) -> None:
    """A ledger that answers VIEW_NOT_CAUGHT_UP (its views are projected by nobody: `serve
    --no-project` with no `trainledger project`) did answer: the first call's error says so, and
    hints at the projection worker, rather than "no ledger answered"."""
    from ledger import Ledger
    from tests.service.support import Served

    ledger = Ledger.open(str(tmp_path / "ledger.db"), project=False)
    served = Served(ledger)
    try:
        ledger.open_account(account="unprojected")  # Logged; no view applies it.
        with LedgerClient(served.address, principal="trainer", timeout_s=1.0, first_contact_s=2.0) as client:
            with pytest.raises(Unavailable) as raised:
                client.get_account(account="unprojected", min_position=ledger.head())
        assert raised.value.reason == "VIEW_NOT_CAUGHT_UP"
        message = str(raised.value)
        assert "no ledger answered" not in message and "never answered" not in message, message
        assert served.address in message and "projection worker" in message, message
    finally:
        served.close()
        ledger.close()
