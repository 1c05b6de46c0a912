"""The view contract runs on the same fixtures as the ledger's tests: a Ledger on the `database`
fixture (SQLite always, PostgreSQL when TRAINLEDGER_TEST_DATABASE_URL is set) and a fake clock."""

from tests.ledger.conftest import clock, ledger  # noqa: F401  (fixtures)
