"""`trainledger checkpoints`: a run's retention plan, and pruning the checkpoints it offers.

    trainledger checkpoints list RUN [--keep-last N]
    trainledger checkpoints prune RUN|--all [--keep-last N] [--root DIR]... [--dry-run | --yes]

The ledger decides (PlanPrune, ledger.domain.retention): never the live resume point, the best
checkpoint on the run's objective or one a registry version was made from; the newest
`--keep-last` usable checkpoints besides; every other checkpoint is offered for deletion. `list`
prints that plan. `prune` first shows what it would delete, each with the path and its bytes, or
why it refuses (clients.retention_guard: only inside the roots `--root` or
TRAINLEDGER_PRUNE_ROOTS name, symbolic links resolved, and never a state that any run's resume
or best checkpoint, a registered checkpoint or a registry artifact still names). `--dry-run`
stops there; otherwise it deletes once told `--yes`, or `y` at a terminal, one checkpoint at a
time, so the log never claims less than what is gone:

1. DeleteCheckpoint records the deletion. The ledger checks the protections again as it records
   it, so a checkpoint that became protected since the plan was read is refused
   (CHECKPOINT_PROTECTED): it is kept, and the table says why;
2. its state is deleted through clients.retention, at the path the guard resolved (checked again
   just before).

A checkpoint recorded deleted whose state is still there has its state deleted by the next prune.
The table says per checkpoint what was deleted, kept (by the plan, or because the guard refuses
its path: outside the roots, a root itself, or a state the ledger still needs) or could not be
deleted. Only the last is a failure: the command exits 1, having done everything else. A second
prune of the same plan changes nothing. With no root at all, or with --dry-run and --yes
together, it refuses before reading anything (exit 2); a root that is not a directory here is
reported and skipped.

`list` reads a server or a database file (--db PATH / --database-url URL). `prune` deletes files,
so it reads the states the ledger protects from the live ledger only: through a server
(services.cli.remote; ListProtectedStates, an unscoped operator's or admin's call), never from a
database file, which may be a backup that predates a protection. --all prunes every run,
retracted ones included.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any

from clients.retention import delete_real, delete_state, local_path
from clients.retention_guard import ROOTS_ENVIRONMENT, Guard, Target, roots_from
from ledger.domain.reasons import Reason
from services.cli.checkpoint_sides import Side, side_of
from services.cli.output import Failure
from services.render.checkpoints import plan_table, prune_table
from services.render.tables import to_json

__all__ = ["Outcome", "add_parser", "listing", "prune"]

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


def listing(args: argparse.Namespace) -> None:
    """The run's retention plan: every checkpoint, and whether it would be deleted or why kept."""
    with side_of(args) as side:
        run_id = side.run_id(args.run)
        entries = side.plan(run_id, args.keep_last)
    if args.json:
        print(to_json({"run_id": run_id, "keep_last": args.keep_last, "entries": entries}))
        return
    print(plan_table(entries) if entries else "(no checkpoint saved)")


def _handle(entry: Any) -> tuple[str, str]:
    handle = entry.checkpoint.handle
    return (handle.backend, handle.uri) if handle is not None else ("", "")


def _kept(entry: Any) -> tuple[str, str]:
    reasons = list(entry.kept_because)
    if "expired" in reasons:
        return "expired", "its handle expired: the provider dropped the state"
    return "kept", ", ".join(reasons)


def _planned(entry: Any, guard: Guard) -> tuple[str, str, Target | None]:
    """What a prune would do with one plan entry: (result, detail, the target to delete)."""
    backend, uri = _handle(entry)
    recorded = "deleted" in entry.kept_because
    if not entry.delete and not recorded:
        return (*_kept(entry), None)
    target = guard.check(uri, backend)
    before = "recorded deleted before; " if recorded else ""
    if recorded and target.local and not (target.path and os.path.lexists(target.path)):
        return "deleted", "recorded deleted before", None
    if not target.allowed:
        return "kept", before + target.refusal, None
    return "would delete", before + (_where(target) or "offered by the plan"), target


def _where(target: Target) -> str:
    """The path a target deletes with its bytes (a uri of another scheme alone: its size is not read)."""
    return f"{target.path}, {target.size_bytes:,} bytes" if target.path and target.local else target.path


def _prune_one(side: Side, guard: Guard, step: Step, reason: str) -> Outcome:
    """Record the deletion (unless recorded before), then delete the state the guard allows."""
    run_id, name, entry, target = step
    checkpoint = entry.checkpoint
    backend, uri = _handle(entry)

    def outcome(result: str, detail: str, position: int = 0, failed: bool = False) -> Outcome:
        return Outcome(
            run_id, name, checkpoint.step, checkpoint.attempt, backend, uri, result, detail, position, failed
        )

    again = guard.check(uri, backend)  # The filesystem may have changed since the plan was shown.
    if not again.allowed or (target is not None and again.path != target.path):
        return outcome("kept", again.refusal or f"{uri} now resolves elsewhere")
    position = 0
    if "deleted" not in entry.kept_because:
        try:
            position, _ = side.delete(run_id, checkpoint.attempt, checkpoint.step, reason)
        except Exception as error:
            if str(getattr(error, "reason", "")) != PROTECTED:
                raise
            protected_by = getattr(error, "metadata", {}).get("protected_by", "")
            return outcome("kept", f"became protected since the plan was read ({protected_by or error})")
    local = again.local and again.path  # Deleted as resolved: a link swapped in since is not followed.
    done = delete_real(again.path) if local else delete_state(uri, backend)
    before = "recorded deleted before; " if "deleted" in entry.kept_because else ""
    if done.ok:
        freed = f" ({again.size_bytes:,} bytes)" if done.outcome == "deleted" and again.local and again.path else ""
        return outcome("deleted", before + done.detail + freed, position)
    return outcome("not deleted", f"{before or 'recorded deleted; '}{done.detail}", position, failed=True)


# One checkpoint a prune may delete: run id, run name, plan entry, the target the plan showed.
Step = tuple[str, str, Any, Target | None]


def _roots(args: argparse.Namespace) -> list[str]:
    """The prune roots (--root, else the environment): a local one that is not a directory here is
    reported and skipped; none left is a usage error."""
    try:
        named = roots_from(args.root, os.environ)
    except ValueError as error:
        raise Failure(str(error), status=2) from None
    roots = []
    for root in named:
        local = "://" not in root or root.startswith("file://")
        if local and not os.path.isdir(local_path(root) or root):
            print(f"trainledger: prune root {root!r} is not a directory here: skipped", file=sys.stderr)
            continue
        roots.append(root)
    if not roots:
        raise Failure(
            f"no prune root is set: pass --root DIR or set {ROOTS_ENVIRONMENT}"
            " (`trainledger checkpoints list RUN` shows the plan)",
            status=2,
        )
    return roots


def _guard(roots: list[str], side: Side) -> Guard:
    try:
        return Guard(roots, _protected(side))
    except ValueError as error:
        raise Failure(str(error), status=2) from None


def _protected(side: Side) -> list[str]:
    """The states the live ledger protects; a token that may not read them all is told which may."""
    try:
        return side.protected()
    except Exception as error:
        if str(getattr(error, "reason", "")) not in (Reason.OUTSIDE_SCOPE, Reason.ROLE_NOT_ALLOWED):
            raise
        raise Failure(
            "checkpoints prune needs an unscoped operator or admin token: it reads every state the"
            f" ledger protects (ListProtectedStates), whatever run it prunes ({error})",
            status=1,
        ) from None


def prune(args: argparse.Namespace) -> None:
    """Show the plan (paths and bytes); once confirmed, delete what it offers: record, then delete."""
    if bool(args.run) == bool(args.all):
        raise Failure("name a run or pass --all", status=1)
    if args.offline_db or args.offline_database_url:
        raise Failure(
            "prune runs through a server (--address HOST:PORT): it deletes files, so it reads what the"
            " live ledger protects, never a database file, which may be an older copy",
            status=2,
        )
    if args.dry_run and args.yes:
        raise Failure("--dry-run and --yes contradict each other: pass one", status=2)
    roots = _roots(args)
    with side_of(args) as side:
        guard = _guard(roots, side)  # First: a token that may not read the protections stops here.
        if args.all:
            targets = side.runs()
        else:
            run_id = side.run_id(args.run)
            targets = [(run_id, side.name(run_id))]
        shown: list[Outcome] = []
        steps: list[Step] = []
        for run_id, name in targets:
            for entry in side.plan(run_id, args.keep_last):
                result, detail, target = _planned(entry, guard)
                backend, uri = _handle(entry)
                c = entry.checkpoint
                shown.append(Outcome(run_id, name or run_id, c.step, c.attempt, backend, uri, result, detail))
                if result == "would delete":
                    steps.append((run_id, name or run_id, entry, target))
        if args.dry_run:
            _show_plan(args, shown, steps)
            return
        if steps and not _confirmed(args, shown, steps):
            raise Failure("nothing deleted: pass --yes to delete what the plan lists", status=1)
        guard = _guard(roots, side)  # What the ledger protects now, not when the plan was read.
        done = {(o.run_id, o.step, o.attempt): o for o in (_prune_one(side, guard, s, args.reason) for s in steps)}
    outcomes = [done.get((o.run_id, o.step, o.attempt), o) for o in shown]
    _print_prune(args, outcomes)
    failed = [o for o in outcomes if o.failed]
    if failed:
        raise Failure(f"{len(failed)} checkpoint{'s' * (len(failed) != 1)} could not be deleted", status=1)


def _confirmed(args: argparse.Namespace, shown: list[Outcome], steps: list[Step]) -> bool:
    """Whether the operator accepts the plan: --yes, or `y` at a terminal after seeing it."""
    if args.yes:
        return True
    _show_plan(args, shown, steps)
    if args.json or not sys.stdin.isatty():
        return False
    return input("delete them? [y/N] ").strip().lower() in ("y", "yes")


def _show_plan(args: argparse.Namespace, shown: list[Outcome], steps: list[Step]) -> None:
    """The plan's table, then every path it would delete, whole, with its bytes and their total."""
    _print_prune(args, shown)
    if args.json or not steps:
        return
    size_bytes = sum(target.size_bytes for *_, target in steps if target is not None)
    print(f"\nto delete: {len(steps)} checkpoint{'s' * (len(steps) != 1)}, {size_bytes:,} bytes")
    for _, name, entry, target in steps:
        print(f"  {name}@{entry.checkpoint.step}: {(_where(target) if target else '') or _handle(entry)[1]}")


def _print_prune(args: argparse.Namespace, outcomes: list[Outcome]) -> None:
    if args.json:
        print(to_json([asdict(o) for o in outcomes]))
        return
    if not outcomes:
        print("(no checkpoint saved)")
        return
    print(prune_table(outcomes))
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.result] = counts.get(o.result, 0) + 1
    print("\n" + ", ".join(f"{count} {result}" for result, count in sorted(counts.items())))


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add `checkpoints` to the CLI's subcommands (the `add_subparsers` of services.cli.commands.parser)."""
    from services.cli.options import add_server_options, read_options

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
    add_server_options(pruned)
    pruned.add_argument("--wide", action="store_true", help="show every value whole (default: fit the terminal)")
    # Refused with a clear message (see prune), so not listed.
    pruned.add_argument("--db", dest="offline_db", default="", help=argparse.SUPPRESS)
    pruned.add_argument("--database-url", dest="offline_database_url", default="", help=argparse.SUPPRESS)
    pruned.add_argument("run", metavar="RUN", nargs="?", default="", help="the run (or --all)")
    pruned.add_argument("--all", action="store_true", help="every run, retracted ones included")
    _keep_last(pruned)
    pruned.add_argument("--dry-run", action="store_true", help="show what would be deleted; record and delete nothing")
    pruned.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help=f"delete only under this directory or uri prefix (repeatable; default: ${ROOTS_ENVIRONMENT})",
    )
    pruned.add_argument("--yes", action="store_true", help="delete what the plan lists without asking")
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
