"""A client of several replicas: the first address that answers serves it, the next one when that
goes away. Two in-process servers on two different files here, so the answers say which served."""

from __future__ import annotations

import pytest

from clients import LedgerClient, RetryPolicy
from clients.client import channel_target
from tests.client.server_thread import ServerThread


def test_channel_target_of_one_or_several_addresses() -> None:
    assert channel_target("127.0.0.1:50051") == "127.0.0.1:50051"
    assert channel_target("dns:///ledger.internal:50051") == "dns:///ledger.internal:50051"
    assert channel_target(["127.0.0.1:1"]) == "127.0.0.1:1"
    assert channel_target(["127.0.0.1:1", "localhost:2"]) in (
        "ipv4:127.0.0.1:1,127.0.0.1:2",
        "ipv6:[::ffff:127.0.0.1]:1,[::1]:2",
    )
    assert channel_target(["[::1]:3", "127.0.0.1:4"]) == "ipv6:[::1]:3,[::ffff:127.0.0.1]:4"
    with pytest.raises(ValueError):
        channel_target(["127.0.0.1", "127.0.0.1:2"])
    with pytest.raises(ValueError):
        channel_target([])


def test_a_client_of_two_replicas_fails_over_to_the_second(tmp_path) -> None:
    first = ServerThread(str(tmp_path / "first.db")).start()
    second = ServerThread(str(tmp_path / "second.db")).start()
    try:
        for server, key in ((first, "on-first"), (second, "on-second")):
            with LedgerClient(server.address) as direct:
                direct.open_run(run_key=key)
        retries = RetryPolicy(attempts=20, initial_backoff_s=0.02, max_backoff_s=0.2)
        with LedgerClient([first.address, second.address], timeout_s=5.0, retries=retries) as client:
            assert [r.name for r in client.list_runs().runs] == ["on-first"]
            first.stop()
            assert [r.name for r in client.list_runs().runs] == ["on-second"]
    finally:
        first.stop()
        second.stop()
