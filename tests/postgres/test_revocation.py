"""A token revoked on PostgreSQL is refused by every replica within 2 s: two servers over one
schema, the revocation written by a third process's ledger (as `trainledger tokens revoke` does).

Needs TRAINLEDGER_TEST_DATABASE_URL.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator

import pytest

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
if not POSTGRES_URL:
    pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set", allow_module_level=True)

import grpc  # noqa: E402
import psycopg  # noqa: E402

from ledger import Ledger  # noqa: E402
from tests.service.support import Served, error_info  # noqa: E402
from trainledger.v1 import runs_pb2  # noqa: E402

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

WHO = {"principal": "setup", "request_id": ""}


@pytest.fixture
def url() -> Iterator[str]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    separator = "&" if "?" in POSTGRES_URL else "?"
    yield f"{POSTGRES_URL}{separator}schema={schema}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def accepted(served: Served, token: str) -> bool:
    """Whether the replica lets the token through; a refusal must be TOKEN_REVOKED."""
    metadata = (("authorization", f"Bearer {token}"),)
    try:
        served.stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=str(uuid.uuid4())), metadata=metadata)
    except grpc.RpcError as error:
        if error.code() == grpc.StatusCode.NOT_FOUND:
            return True
        assert (error.code(), error_info(error).reason) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")
        return False
    return True


def test_a_revoked_token_is_refused_by_every_replica_within_two_seconds(url: str) -> None:
    ledgers = [Ledger.open(url), Ledger.open(url)]
    replicas = [Served(ledger) for ledger in ledgers]
    revoker = Ledger.open(url, project=False)
    try:
        issued = revoker.issue_token(holder="alice", role="auditor", **WHO)
        assert all(accepted(replica, issued.bearer) for replica in replicas)
        revoker.revoke_token(token_id=issued.token.token_id, reason="compromised", **WHO)
        revoked = time.monotonic()
        pending = list(replicas)
        while pending:
            pending = [replica for replica in pending if accepted(replica, issued.bearer)]
            assert time.monotonic() - revoked < 2.0, f"{len(pending)} replica(s) still accept a revoked token"
            time.sleep(0.05)
    finally:
        for replica in replicas:
            replica.close()
        for ledger in [*ledgers, revoker]:
            ledger.close()
