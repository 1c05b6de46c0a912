"""Ledgers written by earlier releases keep opening: each release's corpus under tests/data/<release>/
(scripts/make_upgrade_corpus.py: every kind of event, snapshots, seals, tokens, bills) is opened on
SQLite (a copy of its file) and on PostgreSQL (its dump loaded into a schema of its own), verified
against the head its manifest wrote down, served over gRPC, read, and written to."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger
from ledger.views.models import ChainHead
from tests.conftest import POSTGRES_URL
from tests.service.support import Served, batch
from trainledger.v1 import runs_pb2, spend_pb2

DATA = Path(__file__).resolve().parents[1] / "data"
RELEASES = sorted(path.name for path in DATA.iterdir() if (path / "manifest.json").exists())
CORPUS_SCHEMA = "trainledger_corpus"


def test_this_release_has_a_corpus() -> None:
    from ledger.storage.version import SCHEMA_VERSION

    manifests = [json.loads((DATA / release / "manifest.json").read_text()) for release in RELEASES]
    assert SCHEMA_VERSION in {manifest["schema_version"] for manifest in manifests}


@pytest.fixture(params=["sqlite", "postgres"])
def corpus(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(database, manifest) of each release's corpus, on each backend."""
    release = request.node.callspec.params["release"]
    directory = DATA / release
    manifest = json.loads((directory / "manifest.json").read_text())
    if request.param == "sqlite":
        copy = tmp_path / "ledger.db"
        shutil.copyfile(directory / "ledger.sqlite", copy)
        yield str(copy), manifest["sqlite"]
        return
    if not POSTGRES_URL:
        pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set")
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    script = (directory / "ledger.postgres.sql").read_text().replace(CORPUS_SCHEMA, schema)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(script.encode())
    separator = "&" if "?" in POSTGRES_URL else "?"
    try:
        yield f"{POSTGRES_URL}{separator}schema={schema}", manifest["postgres"]
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.parametrize("release", RELEASES)
def test_a_corpus_opens_verifies_serves_reads_and_takes_writes(release: str, corpus: tuple[str, Any]) -> None:
    database, written = corpus
    ledger = Ledger.open(database)
    try:
        ledger.wait(ledger.head(), 60)
        assert ledger.head() == written["head"]
        checked = ledger.verify(ChainHead(position=written["head"], digest=written["chain_digest"]))
        assert checked.ok, checked
        types = {event["type"] for event in ledger.read_events(limit=10_000)}
        assert types == set(written["types"])
        assert ledger.storage.snapshot_ids(), "the corpus holds snapshots"
        run_id = written["run_id"]
        state = ledger.run_state(run_id)
        assert state.run.status == "done"
        assert ledger.family("corpus-model").current == 1
        assert ledger.account("corpus-lab").committed_usd_micro == 900_000 + 1_234
        assert {token.holder for token in ledger.token_book().values()} >= {"corpus-admin"}
        # Authentication is on (the corpus issued tokens): a new admin token is a write too.
        admin = (("authorization", f"Bearer {ledger.issue_token(holder='upgrader', role='admin').bearer}"),)
        served = Served(ledger)
        try:
            stubs = served.stubs
            answer = stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=10, metadata=admin)
            assert answer.state.run.run_id == run_id
            opened = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=f"after-{release}"), timeout=10, metadata=admin)
            new_run = opened.state.run.run_id
            stubs.runs.StartAttempt(
                runs_pb2.StartAttemptRequest(run_id=new_run, attempt_id="a1"), timeout=10, metadata=admin
            )
            stubs.runs.AppendSteps(
                runs_pb2.AppendStepsRequest(batch=batch(new_run, range(10))), timeout=10, metadata=admin
            )
            stubs.spend.Reserve(
                spend_pb2.ReserveRequest(account="corpus-lab", reservation_id="after", amount_usd_micro=1_000),
                timeout=10,
                metadata=admin,
            )
        finally:
            served.close()
        assert ledger.head() > written["head"]
        assert ledger.verify().ok
    finally:
        ledger.close()
