"""The unit tier: tests that start no process and open no socket, on plain values, and on a Ledger
over a SQLite file in tmp_path where a test needs stored state (the `ledger` fixture also runs on
PostgreSQL when TRAINLEDGER_TEST_DATABASE_URL is set). They share the ledger tests' fixtures."""

from tests.ledger.conftest import clock, ledger  # noqa: F401  (fixtures)
