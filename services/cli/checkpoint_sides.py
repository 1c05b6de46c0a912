"""Where `trainledger checkpoints` reads and writes: a server (through clients/), or a database
file (a ledger.Ledger, recorded as `local:<user>`)."""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

__all__ = ["PAGE", "Local", "Remote", "Side", "side_of"]

PAGE = 500


class Side(Protocol):
    """Where the command reads and writes: a server, or a database file."""

    def run_id(self, ref: str) -> str: ...

    def runs(self) -> list[tuple[str, str]]: ...

    def name(self, run_id: str) -> str: ...

    def plan(self, run_id: str, keep_last: int) -> list[Any]: ...

    def delete(self, run_id: str, attempt: int, step: int, reason: str) -> tuple[int, bool]: ...

    def protected(self) -> list[str]: ...


class Remote:
    """Through a server (a clients.LedgerClient)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def run_id(self, ref: str) -> str:
        from services.cli.remote import resolve_run

        return resolve_run(self.client, ref)

    def runs(self) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        token = ""
        while True:
            page = self.client.list_runs(page_size=PAGE, page_token=token, include_retracted=True)
            found += [(run.run_id, run.name) for run in page.runs]
            token = page.next_page_token
            if not token:
                return found

    def name(self, run_id: str) -> str:
        return str(self.client.get_run_state(run_id=run_id).run.name)

    def plan(self, run_id: str, keep_last: int) -> list[Any]:
        return list(self.client.plan_prune(run_id=run_id, keep_last=keep_last))

    def delete(self, run_id: str, attempt: int, step: int, reason: str) -> tuple[int, bool]:
        receipt = self.client.delete_checkpoint(run_id=run_id, attempt=attempt, step=step, reason=reason)
        return receipt.position, receipt.duplicate

    def protected(self) -> list[str]:
        return [state.uri for state in self.client.list_protected_states()]


class Local:
    """On a database file (a ledger.Ledger), recorded as `local:<user>`."""

    def __init__(self, ledger: Any) -> None:
        self.ledger = ledger

    def run_id(self, ref: str) -> str:
        from services.cli.local import resolve_run

        return resolve_run(self.ledger, ref)

    def runs(self) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        after = None
        while True:
            page = self.ledger.list_runs(limit=PAGE, after=after, include_retracted=True)
            found += [(run.run_id, run.name) for run in page.runs]
            after = page.after
            if after is None:
                return found

    def name(self, run_id: str) -> str:
        return str(self.ledger.run_state(run_id).run.name)

    def plan(self, run_id: str, keep_last: int) -> list[Any]:
        entries: list[Any] = []
        after = None
        while True:
            page = self.ledger.plan_prune(run_id, keep_last=keep_last, after=after, limit=PAGE)
            entries += page.entries
            after = page.after
            if after is None:
                return entries

    def delete(self, run_id: str, attempt: int, step: int, reason: str) -> tuple[int, bool]:
        from services.cli.local import local_principal

        receipt = self.ledger.delete_checkpoint(
            run_id=run_id,
            attempt=attempt,
            step=step,
            reason=reason,
            principal=local_principal(),
            request_id=str(uuid.uuid4()),
        )
        return receipt.position, receipt.duplicate

    def protected(self) -> list[str]:
        uris: list[str] = []
        after = None
        while True:
            page = self.ledger.protected_states(after=after, limit=PAGE)
            uris += [state.uri for state in page.states]
            after = page.after
            if after is None:
                return uris


@contextmanager
def side_of(args: argparse.Namespace) -> Iterator[Side]:
    """The server the options name, or the database --db / --database-url names."""
    if args.database:
        from services.cli.local import opened

        with opened(args.database) as ledger:
            yield Local(ledger)
    else:
        from services.cli.connection import talking

        with talking(args) as client:
            yield Remote(client)
