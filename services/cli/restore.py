"""`trainledger restore FILE --db NEW`: a backup (services.cli.backup, or any copy of a SQLite ledger)
made into a new ledger file, verified before anything is written under NEW's name.

FILE is opened read-only and copied with SQLite's online backup API into a temporary file beside
NEW; the copy's views are brought up to its log (a backup taken while the views lagged holds
events they had not applied yet), then the whole copy is verified (ledger.application.integrity:
the hash chain, the snapshots, the views). Only a copy that verifies is synced and linked to NEW;
an existing NEW is never overwritten, nor a NEW whose -wal, -shm or -journal an earlier file of
that name left behind (SQLite would replay a stale -wal into the restored file), and a copy that
does not verify leaves nothing behind.
PostgreSQL databases are restored from their base backup and WAL archive (docs/operations-backup.md).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass

from services.cli.backup import BackupError, companion_left, copy_online, sync_path

__all__ = ["Restored", "RestoreError", "restore", "add_parser"]

CATCH_UP_S = 600.0


class RestoreError(Exception):
    """The backup cannot be restored; nothing was written under the destination's name."""


@dataclass(frozen=True)
class Restored:
    """A restored ledger: where, the log position it ends at and the events verified."""

    path: str
    position: int
    checked: int


def restore(source: str, destination: str) -> Restored:
    """Restore the SQLite backup `source` to the new file `destination`. Raises RestoreError."""
    if "://" in destination or "://" in source:
        raise RestoreError(
            "restore makes SQLite files; restore PostgreSQL from its base backup and WAL archive "
            "(docs/operations-backup.md)"
        )
    if not os.path.isfile(source):
        raise RestoreError(f"no backup at {source}")
    if os.path.lexists(destination):
        raise RestoreError(f"{destination} already exists: restore to a new file")
    left = companion_left(destination)
    if left:
        raise RestoreError(
            f"{left} exists (left by an earlier file of that name): "
            f"restore to a new name, or move {left} away with its file"
        )
    directory = os.path.dirname(os.path.abspath(destination))
    try:
        descriptor, partial = tempfile.mkstemp(
            dir=directory, prefix=f".{os.path.basename(destination)}.", suffix=".restoring"
        )
    except OSError as error:
        raise RestoreError(f"cannot write in {directory}: {error.strerror or error}") from None
    os.close(descriptor)
    try:
        # The backup's permissions, owner-writable: a backup archived read-only restores to a
        # ledger its owner can serve, readable by no one the backup was not.
        os.chmod(partial, stat.S_IMODE(os.stat(source).st_mode) | stat.S_IWUSR)
        try:
            copy_online(source, partial)
        except BackupError as error:
            raise RestoreError(str(error)) from None
        position, checked = _verify(source, partial)
        sync_path(partial)
        try:
            os.link(partial, destination)  # Fails rather than replace a file made meanwhile.
        except FileExistsError:
            raise RestoreError(f"{destination} already exists: restore to a new file") from None
        except OSError as error:
            raise RestoreError(f"cannot write {destination}: {error.strerror or error}") from None
        sync_path(directory)
        return Restored(destination, position, checked)
    finally:
        for leftover in (partial, partial + "-wal", partial + "-shm", partial + "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)


def _verify(source: str, partial: str) -> tuple[int, int]:
    """Open the copy, bring its views up to its log and verify it: (its head, events checked)."""
    from ledger import Ledger
    from ledger.storage.version import SchemaTooNew

    try:
        ledger = Ledger.open(partial)
    except SchemaTooNew as error:
        raise RestoreError(f"cannot restore {source}: {error}") from None
    except Exception as error:
        raise RestoreError(f"cannot open the copy of {source}: {error}") from None
    try:
        head = ledger.head()
        ledger.wait(head, CATCH_UP_S)
        verified = ledger.verify()
    except Exception as error:
        raise RestoreError(f"cannot verify the copy of {source}: {error}") from None
    finally:
        # Checkpoint the WAL into the file: the link names one complete file.
        ledger.close()
    if not verified.ok:
        raise RestoreError(
            f"{source} does not verify ({verified.problem} at position {verified.broken_at}: {verified.detail}); "
            "nothing was restored"
        )
    return head, verified.checked


def run(args: argparse.Namespace) -> None:
    from services.cli.output import Failure

    try:
        made = restore(args.backup, args.target)
    except RestoreError as error:
        raise Failure(str(error)) from None
    print(
        f"restored {args.backup} to {made.path}: the log up to position {made.position}, {made.checked} events verified"
    )


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = commands.add_parser("restore", help="make a verified new SQLite ledger of a backup")
    sub.add_argument("backup", metavar="FILE", help="the backup (trainledger backup --to FILE)")
    sub.add_argument(
        "--db", dest="target", required=True, metavar="NEW", help="the new ledger file (never overwritten)"
    )
    sub.set_defaults(handler=run)
