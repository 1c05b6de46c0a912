"""A token revoked on PostgreSQL is refused by every replica within 2 s: two servers over one
schema, the revocation written by a third process's ledger (as `trainledger tokens revoke` does);
and the streams its token holds open on one replica end when it is revoked through the other.

Needs TRAINLEDGER_TEST_DATABASE_URL.
"""

from __future__ import annotations

import os
import queue
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
from services.runtime.auth import CACHE_S, STREAM_RECHECK_S  # noqa: E402
from tests.service.support import Served, batch, error_info, key  # noqa: E402
from trainledger.v1 import runs_pb2  # noqa: E402

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

WHO = {"principal": "setup", "request_id": ""}
# The deadline of a stream that should end on its own: well past the server's re-check interval.
STREAM_WAIT_S = 4 * (STREAM_RECHECK_S + CACHE_S)


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


def test_a_revocation_through_another_replica_ends_the_open_streams_of_its_token(url: str) -> None:
    """A WatchRun and a RecordSteps stream open on one replica end with TOKEN_REVOKED when the
    token is revoked through the other replica's ledger."""
    ledgers = [Ledger.open(url), Ledger.open(url)]
    watched, revoking = Served(ledgers[0]), Served(ledgers[1])
    try:
        issued = ledgers[1].issue_token(holder="alice", role="trainer", **WHO)
        metadata = (("authorization", f"Bearer {issued.bearer}"),)
        runs = watched.stubs.runs
        run_id = runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key()), metadata=metadata).state.run.run_id
        runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), metadata=metadata)
        watch = runs.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), metadata=metadata, timeout=STREAM_WAIT_S)
        assert next(watch).state.run.run_id == run_id
        requests: queue.SimpleQueue[runs_pb2.RecordStepsRequest | None] = queue.SimpleQueue()
        requests.put(runs_pb2.RecordStepsRequest(sequence=1, batch=batch(run_id, range(1, 2))))
        acks = runs.RecordSteps(iter(requests.get, None), metadata=metadata, timeout=STREAM_WAIT_S)
        assert next(acks).sequence == 1
        ledgers[1].revoke_token(token_id=issued.token.token_id, reason="compromised", **WHO)
        for stream in (watch, acks):
            with pytest.raises(grpc.RpcError) as ended:
                list(stream)
            assert (ended.value.code(), error_info(ended.value).reason) == (
                grpc.StatusCode.UNAUTHENTICATED,
                "TOKEN_REVOKED",
            )
        requests.put(None)
    finally:
        for replica in (watched, revoking):
            replica.close()
        for ledger in ledgers:
            ledger.close()
