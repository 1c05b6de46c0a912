"""The service fixture: one in-process server per test module, on port 0 with a tmp SQLite file."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ledger import Ledger
from tests.service.support import Served


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    ledger = Ledger.open(str(tmp_path_factory.mktemp("service") / "ledger.db"))
    server = Served(ledger)
    try:
        yield server
    finally:
        server.close()
        ledger.close()


@pytest.fixture
def stubs(served: Served):
    return served.stubs
