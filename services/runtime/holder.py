"""One SQLite file has one serving process: an exclusive holder lock on a sidecar file.

A process that serves a SQLite file (`trainledger serve`, a server built by create_server on a
database it opens) or rewrites its views (`trainledger rebuild`) holds an exclusive flock on
`<database>.lock` for as long as it runs. The file records the holder's pid, its command and,
once bound, its listen address, so that a refused process can name it. The kernel releases the
lock when the holder dies, kill -9 included: a stale file never blocks a restart. A clean release
removes the file (still holding the lock, and a newcomer re-checks that the file it locked is
still the one at the path, so two holders can never lock two different files).

Commands that only read take no lock. PostgreSQL URLs and in-memory databases take none either:
replicas share a PostgreSQL database by design.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Iterator

__all__ = ["HolderError", "Holder", "acquire", "held", "lock_path"]

# A holder writes its record right after taking the lock; a refused process that reads the file
# in between retries for at most this long before naming the holder without it.
RECORD_WAIT_S = 1.0


class HolderError(Exception):
    """The database is held by another process, or its lock file cannot be created."""


def lock_path(database: str) -> str | None:
    """The lock file of a SQLite database, or None for a database that takes no lock."""
    if "://" in database or database == ":memory:" or "mode=memory" in database or database.startswith("file:"):
        return None
    return os.path.realpath(database) + ".lock"


class Holder:
    """The held lock of one database; release() (or the process's death) gives it up."""

    def __init__(self, database: str, path: str, fd: int, command: str) -> None:
        self.database, self.path, self.command = database, path, command
        self._fd: int | None = fd
        self.record()

    def record(self, address: str = "") -> None:
        """Write who holds the file: the pid, the command and the listen address, when known."""
        if self._fd is None:
            return
        record = {"pid": os.getpid(), "command": self.command}
        if address:
            record["address"] = address
        data = (json.dumps(record) + "\n").encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)  # While still holding the lock (see the module's docstring).
        finally:
            os.close(fd)

    @property
    def holding(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def acquire(database: str, command: str = "serve") -> Holder | None:
    """Hold `database` for this process, or None for a database that takes no lock. Raises
    HolderError naming the holder when another process holds it."""
    path = lock_path(database)
    if path is None:
        return None
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise HolderError(
                f"cannot open database {database}: cannot create its lock file {path}: {error.strerror or error}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise HolderError(refusal(database, path, command)) from None
            raise HolderError(
                f"cannot open database {database}: cannot lock {path}: {error.strerror or error}"
            ) from None
        try:
            current = os.stat(path)
        except FileNotFoundError:
            current = None
        own = os.fstat(fd)
        if current is not None and (current.st_dev, current.st_ino) == (own.st_dev, own.st_ino):
            return Holder(database, path, fd, command)
        os.close(fd)  # Its previous holder removed the file after this process opened it: again.


@contextlib.contextmanager
def held(database: str, command: str) -> Iterator[Holder | None]:
    """acquire() for the length of a block."""
    holder = acquire(database, command)
    try:
        yield holder
    finally:
        if holder is not None:
            holder.release()


def refusal(database: str, path: str, command: str) -> str:
    """The one line that names the holder of `database` (read from its lock file)."""
    record = read_record(path)
    pid = record.get("pid")
    who = f"pid {pid}" if isinstance(pid, int) else "another process"
    # What the holder runs (its record's command), not what `command` would run.
    held, address = record.get("command"), record.get("address")
    if address:
        doing = f"serving on {address}"
    elif held == "serve":
        doing = "starting to serve"
    elif held:
        doing = f"running `trainledger {held}`"
    else:
        doing = ""
    holder = f"{who}, {doing}" if doing else who
    remedy = "stop it first or serve another --db" if held == "serve" else "stop it first"
    return (
        f"database {database} is held by another process ({holder}); one SQLite file has one serving process: {remedy}"
    )


def read_record(path: str) -> dict[str, object]:
    """The holder's record, or {} when it cannot be read within RECORD_WAIT_S."""
    deadline = time.monotonic() + RECORD_WAIT_S
    while True:
        try:
            with open(path, encoding="utf-8") as file:
                record = json.loads(file.read())
            if isinstance(record, dict):
                return record
        except (OSError, ValueError):
            pass
        if time.monotonic() >= deadline:
            return {}
        time.sleep(0.02)
