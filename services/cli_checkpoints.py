"""`trainledger checkpoints`: a run's retention plan, and pruning the checkpoints it offers.

    trainledger checkpoints list RUN [--keep-last N]
    trainledger checkpoints prune RUN|--all [--keep-last N] [--dry-run] [--reason TEXT]

The ledger decides (PlanPrune, ledger.domain.retention): never the live resume point, the best
checkpoint on the run's objective or one a registry version was made from; the newest
`--keep-last` usable checkpoints besides; deleted and expired ones shown as such; every other
checkpoint offered for deletion. `list` prints that plan. `prune` deletes what it offers, one
checkpoint at a time and in this order, so the log never claims less than what is gone:

1. DeleteCheckpoint records the deletion. The ledger checks the protections again as it records
   it, so a checkpoint that became protected since the plan was read (a new registration, a new
   best score) is refused (CHECKPOINT_PROTECTED): it is kept, and the table says why;
2. its state is deleted through clients.retention (local files and file:// trees, other schemes
   through fsspec when installed; a provider's handle cannot be deleted from here).

A checkpoint recorded deleted whose state is still there (a delete that failed, or a deletion
recorded by someone else) has its state deleted by the next prune. `--dry-run` records and
deletes nothing. The table says per checkpoint what was deleted, what was kept and why, and what
could not be deleted (no deleter for the uri's scheme, or the delete failed): then the command
exits 1, having done everything else. A second prune of the same plan changes nothing.

Like every command, through a server by default (services.remote), or on a database file with
--db PATH / --database-url URL (services.reports: the same plan and records, the principal
`local:<user>`). --all prunes every run, retracted ones included: deleting unprotected state is
housekeeping, which a retraction does not stop.
"""

from __future__ import annotations

import argparse
import getpass
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from ledger.domain.reasons import Reason
from services import render
from services.reports import Failure
from services.tables import to_json

__all__ = ["Outcome", "Side", "add_parser", "listing", "prune"]

PAGE = 500
# The reason DeleteCheckpoint records for a prune.
REASON = "pruned by trainledger checkpoints prune"
PROTECTED = Reason.CHECKPOINT_PROTECTED


@dataclass(frozen=True)
class Outcome:
    """What a prune did with one checkpoint: `result` ("deleted", "kept", "would delete", "not
    deleted", ...) and why; `failed` when its state could not be deleted."""

    run_id: str
    run: str
    step: int
    attempt: int
    backend: str
    uri: str
    result: str
    detail: str
    position: int = 0
    failed: bool = False


class Side(Protocol):
    """Where the command reads and writes: a server, or a database file."""

    def run_id(self, ref: str) -> str: ...

    def runs(self) -> list[tuple[str, str]]: ...

    def name(self, run_id: str) -> str: ...

    def plan(self, run_id: str, keep_last: int) -> list[Any]: ...

    def delete(self, run_id: str, attempt: int, step: int, reason: str) -> tuple[int, bool]: ...


class Remote:
    """Through a server (a clients.LedgerClient)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def run_id(self, ref: str) -> str:
        from services.remote import resolve_run

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


class Local:
    """On a database file (a ledger.Ledger), recorded as `local:<user>`."""

    def __init__(self, ledger: Any) -> None:
        self.ledger = ledger

    def run_id(self, ref: str) -> str:
        from services.reports import run_id_of

        return run_id_of(self.ledger, ref)

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
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = "unknown"
        receipt = self.ledger.delete_checkpoint(
            run_id=run_id,
            attempt=attempt,
            step=step,
            reason=reason,
            principal=f"local:{user}",
            request_id=str(uuid.uuid4()),
        )
        return receipt.position, receipt.duplicate


@contextmanager
def side_of(args: argparse.Namespace) -> Iterator[Side]:
    """The server the options name, or the database --db / --database-url names."""
    if args.database:
        from services.reports import opened

        with opened(args.database) as ledger:
            yield Local(ledger)
    else:
        from services.remote import talking

        with talking(args) as client:
            yield Remote(client)


def listing(args: argparse.Namespace) -> None:
    """The run's retention plan: every checkpoint, and whether it would be deleted or why kept."""
    with side_of(args) as side:
        run_id = side.run_id(args.run)
        entries = side.plan(run_id, args.keep_last)
    if args.json:
        print(to_json({"run_id": run_id, "keep_last": args.keep_last, "entries": entries}))
        return
    print(render.plan_table(entries) if entries else "(no checkpoint saved)")


def _handle(entry: Any) -> tuple[str, str]:
    handle = entry.checkpoint.handle
    return (handle.backend, handle.uri) if handle is not None else ("", "")


def _kept(entry: Any) -> tuple[str, str]:
    reasons = list(entry.kept_because)
    if "expired" in reasons:
        return "expired", "its handle expired: the provider dropped the state"
    return "kept", ", ".join(reasons)


def _prune_one(side: Side, run_id: str, name: str, entry: Any, *, dry_run: bool, reason: str) -> Outcome:
    """Record the deletion, then delete the state (or say what would be done)."""
    from clients.retention import delete_state

    checkpoint = entry.checkpoint
    backend, uri = _handle(entry)

    def outcome(result: str, detail: str, position: int = 0, failed: bool = False) -> Outcome:
        return Outcome(
            run_id, name, checkpoint.step, checkpoint.attempt, backend, uri, result, detail, position, failed
        )

    if "deleted" in entry.kept_because:
        if dry_run:
            return outcome("deleted", "recorded deleted before")
        leftover = delete_state(uri, backend)
        if leftover.outcome == "deleted":
            return outcome("deleted", f"recorded deleted before; {leftover.detail}")
        if leftover.outcome == "failed":
            return outcome("not deleted", f"recorded deleted before; {leftover.detail}", failed=True)
        return outcome("deleted", "recorded deleted before")
    if not entry.delete:
        return outcome(*_kept(entry))
    if dry_run:
        return outcome("would delete", "offered by the plan")
    try:
        position, _ = side.delete(run_id, checkpoint.attempt, checkpoint.step, reason)
    except Exception as error:
        if str(getattr(error, "reason", "")) != PROTECTED:
            raise
        protected_by = getattr(error, "metadata", {}).get("protected_by", "")
        return outcome("kept", f"became protected since the plan was read ({protected_by or error})")
    done = delete_state(uri, backend)
    if done.ok:
        return outcome("deleted", done.detail, position)
    return outcome("not deleted", f"recorded deleted; {done.detail}", position, failed=True)


def prune(args: argparse.Namespace) -> None:
    """Delete what the plan offers for the run (or every run with --all): record, then delete."""
    if bool(args.run) == bool(args.all):
        raise Failure("name a run or pass --all", status=1)
    outcomes: list[Outcome] = []
    with side_of(args) as side:
        if args.all:
            targets = side.runs()
        else:
            run_id = side.run_id(args.run)
            targets = [(run_id, side.name(run_id))]
        for run_id, name in targets:
            for entry in side.plan(run_id, args.keep_last):
                outcomes.append(
                    _prune_one(side, run_id, name or run_id, entry, dry_run=args.dry_run, reason=args.reason)
                )
    _print_prune(args, outcomes)
    failed = [o for o in outcomes if o.failed]
    if failed:
        raise Failure(f"{len(failed)} checkpoint{'s' * (len(failed) != 1)} could not be deleted", status=1)


def _print_prune(args: argparse.Namespace, outcomes: list[Outcome]) -> None:
    if args.json:
        print(to_json([asdict(o) for o in outcomes]))
        return
    if not outcomes:
        print("(no checkpoint saved)")
        return
    print(render.prune_table(outcomes))
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.result] = counts.get(o.result, 0) + 1
    print("\n" + ", ".join(f"{count} {result}" for result, count in sorted(counts.items())))


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add `checkpoints` to the CLI's subcommands (the `add_subparsers` of services.cli.parser)."""
    from services.cli import read_options

    checkpoints: argparse.ArgumentParser = commands.add_parser(
        "checkpoints", help="a run's checkpoints: the retention plan, and pruning what it offers"
    )
    actions = checkpoints.add_subparsers(dest="action", required=True)
    listed: argparse.ArgumentParser = actions.add_parser(
        "list", help="every checkpoint of a run, and what retention would keep (and why) or delete"
    )
    read_options(listed)
    listed.add_argument("run", metavar="RUN", help="run id, unique id prefix (4+ characters), name or part of one")
    _keep_last(listed)
    listed.set_defaults(handler=listing)
    pruned: argparse.ArgumentParser = actions.add_parser(
        "prune", help="delete the checkpoints retention offers: record each deletion, then delete its state"
    )
    read_options(pruned)
    pruned.add_argument("run", metavar="RUN", nargs="?", default="", help="the run (or --all)")
    pruned.add_argument("--all", action="store_true", help="every run, retracted ones included")
    _keep_last(pruned)
    pruned.add_argument("--dry-run", action="store_true", help="show what would be deleted; record and delete nothing")
    pruned.add_argument("--reason", default=REASON, help="recorded with each deletion (default: %(default)s)")
    pruned.set_defaults(handler=prune)
    return checkpoints


def _keep_last(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--keep-last",
        type=_count,
        default=0,
        metavar="N",
        help="keep the newest N usable checkpoints besides the protected ones (default: 0)",
    )


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value
