"""ReadEvents with an event type the ledger does not have is refused, naming the types it has,
instead of answering nothing (a misspelt filter looked like an empty log); and so is
`trainledger events export --types` with one."""

from __future__ import annotations

import pytest

from clients import InvalidArgument, LedgerClient
from services.cli import main
from tests.service.support import Served


def test_an_unknown_event_type_is_refused_listing_the_types(served: Served) -> None:
    with LedgerClient(served.address, principal="reader") as client:
        with pytest.raises(InvalidArgument) as refused:
            list(client.read_events(from_position=1, limit=10, types=["RunOpened"]))
        error = refused.value
        assert error.reason == "UNKNOWN_EVENT_TYPE"
        # The message is cut to a few hundred bytes on the wire: the nearest type comes first.
        assert error.message.startswith("no event type RunOpened (did you mean Run.Opened")
        # A known type, by its whole or its short name, still reads.
        assert isinstance(
            list(client.read_events(from_position=1, limit=10, types=["Run.Opened", "StepsRecorded"])), list
        )


def test_events_export_with_an_unknown_type_is_an_error(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["events", "export", "--types", "RunOpened", "--address", served.address])
    out, errors = capsys.readouterr()
    assert status != 0
    assert out == ""
    assert errors.startswith("trainledger: no event type RunOpened (did you mean Run.Opened")
    for known in ("Account.SpendReserved", "Run.StepsRecorded", "Tokens.TokenRevoked"):  # every one of them
        assert known in errors
