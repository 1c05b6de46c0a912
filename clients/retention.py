"""Deleting a checkpoint's state where it lives: the backend hook of checkpoint retention.

The ledger decides which checkpoints may go (PlanPrune: never the resume point, the best
checkpoint on the run's objective or one a registry version was made from) and records each
deletion (DeleteCheckpoint); the state itself lives outside the ledger, in files or a provider's
store, and is deleted here, by whoever holds the credentials for it (`trainledger checkpoints
prune` calls `delete_state` for each checkpoint the ledger accepted as deleted, on the path
clients.retention_guard allowed: inside its roots, never a state the ledger still needs).

`delete_state(uri, backend)` picks a deleter by the handle's backend and the uri's scheme:

- a local path or a `file://` uri: the file, or the directory tree, at that path. Only what lies
  under the path is removed: symbolic links inside the tree are unlinked, never followed, and a
  path that is itself a symbolic link is refused (its target lies elsewhere);
- a provider's handle (`tinker://`, `modal-volume://`, or any uri of the backends `tinker` and
  `modal-volume`): the provider holds the state (Tinker drops it when its TTL passes), so nothing
  can be deleted from here, and the answer says so;
- any other scheme (`s3://`, `gs://`, `memory://` ...) through fsspec, when it is installed (it is
  no dependency of trainledger: imported on first use, and its absence is said in the answer, as is
  a protocol whose fsspec implementation, such as s3fs, is missing).

Nothing here raises for a deletion that could not be made: each call answers a `Deletion` whose
`outcome` is "deleted", "absent" (nothing was there: deleted before, or never written), "unsupported"
(no deleter for that state here) or "failed" (the deleter tried and the store refused), and a line
for people (`detail`). `ok` is true for the first two. Other stores plug in through `deleters`, a
mapping from a backend name or a uri scheme to a function of the uri.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Literal
from urllib.parse import unquote, urlsplit

__all__ = [
    "PROVIDER_BACKENDS",
    "PROVIDER_SCHEMES",
    "Deleter",
    "Deletion",
    "Outcome",
    "delete_local",
    "delete_real",
    "delete_state",
    "delete_with_fsspec",
    "local_path",
]

Outcome = Literal["deleted", "absent", "unsupported", "failed"]
# Backends and uri schemes whose state a provider holds: nothing to delete from this machine.
PROVIDER_BACKENDS = frozenset({"tinker", "modal-volume"})
PROVIDER_SCHEMES = frozenset({"tinker", "modal-volume"})


@dataclass(frozen=True)
class Deletion:
    """What became of one checkpoint's state: `outcome` and a line for people."""

    uri: str
    outcome: Outcome
    detail: str

    @property
    def ok(self) -> bool:
        """The state is gone: deleted now, or nothing was there."""
        return self.outcome in ("deleted", "absent")


# A deleter for one store: the uri in, what happened out (it never raises).
Deleter = Callable[[str], Deletion]


def delete_state(uri: str, backend: str = "", *, deleters: Mapping[str, Deleter] | None = None) -> Deletion:
    """Delete the state a checkpoint handle (`backend`, `uri`) names: see the module docstring
    for which deleter each takes. `deleters` adds or overrides deleters by backend name or uri
    scheme (a backend's takes precedence)."""
    scheme = _scheme(uri)
    chosen = dict(deleters or {})
    if backend in chosen:
        return chosen[backend](uri)
    if scheme in chosen:
        return chosen[scheme](uri)
    if backend in PROVIDER_BACKENDS or scheme in PROVIDER_SCHEMES:
        provider = backend if backend in PROVIDER_BACKENDS else scheme
        return Deletion(uri, "unsupported", f"a {provider} handle: its provider holds the state; delete it there")
    if not uri:
        return Deletion(uri, "unsupported", "no uri: nothing names the state")
    if scheme in ("", "file"):
        return delete_local(uri)
    return delete_with_fsspec(uri)


def _scheme(uri: str) -> str:
    """The uri's scheme in lower case ("" for a plain path; a Windows drive letter is a path)."""
    head, sep, _ = uri.partition("://")
    return head.lower() if sep and len(head) > 1 else ""


def local_path(uri: str) -> str | None:
    """The local path a plain path or a `file://` uri names (None for another host's file)."""
    if not uri.lower().startswith("file://"):
        return os.path.abspath(os.path.expanduser(uri))
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        return None
    return os.path.abspath(unquote(parts.path))


def delete_local(uri: str) -> Deletion:
    """Delete the file or directory tree at a local path or `file://` uri, never following a
    symbolic link out of it."""
    path = local_path(uri)
    if path is None:
        return Deletion(uri, "unsupported", "a file on another host: delete it there")
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return Deletion(uri, "absent", f"nothing at {path}")
    except OSError as error:
        return Deletion(uri, "failed", f"cannot read {path}: {error.strerror or error}")
    if stat.S_ISLNK(found.st_mode):
        return Deletion(uri, "failed", f"{path} is a symbolic link: not followed, nothing deleted")
    try:
        if stat.S_ISDIR(found.st_mode):
            # rmtree unlinks the links inside the tree and never descends through them.
            shutil.rmtree(path)
            return Deletion(uri, "deleted", f"deleted the directory {path}")
        os.unlink(path)
        return Deletion(uri, "deleted", f"deleted the file {path}")
    except OSError as error:
        return Deletion(uri, "failed", f"cannot delete {error.filename or path}: {error.strerror or error}")


def delete_real(path: str) -> Deletion:
    """Delete the file or directory tree at `path`, an absolute path with no symbolic link in it
    (os.path.realpath's answer, which clients.retention_guard allowed). Each folder on the way is
    opened without following a link, and the last part is deleted relative to its folder, so a
    link swapped in above it after the check (ELOOP, ENOTDIR) deletes nothing, never what it
    points at."""
    parts = [part for part in path.split("/") if part]
    if not path.startswith("/") or not parts or any(part in (".", "..") for part in parts):
        return Deletion(path, "failed", f"{path} is not an absolute path without . or ..: nothing deleted")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        folder = os.open("/", flags)
    except OSError as error:
        return Deletion(path, "failed", f"cannot open /: {error.strerror or error}")
    try:
        for part in parts[:-1]:
            inner = os.open(part, flags, dir_fd=folder)
            os.close(folder)
            folder = inner
        found = os.stat(parts[-1], dir_fd=folder, follow_symlinks=False)
        if stat.S_ISLNK(found.st_mode):
            return Deletion(path, "failed", f"{path} is a symbolic link: not followed, nothing deleted")
        if stat.S_ISDIR(found.st_mode):
            shutil.rmtree(parts[-1], dir_fd=folder)
            return Deletion(path, "deleted", f"deleted the directory {path}")
        os.unlink(parts[-1], dir_fd=folder)
        return Deletion(path, "deleted", f"deleted the file {path}")
    except FileNotFoundError:
        return Deletion(path, "absent", f"nothing at {path}")
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            return Deletion(path, "failed", f"a symbolic link appeared in {path}: not followed, nothing deleted")
        return Deletion(path, "failed", f"cannot delete {path}: {error.strerror or error}")
    finally:
        os.close(folder)


def delete_with_fsspec(uri: str) -> Deletion:
    """Delete what a uri of any other scheme names, through fsspec when it is installed."""
    scheme = _scheme(uri)
    try:
        fsspec_core = import_module("fsspec.core")  # Untyped, and optional: by name.
    except ImportError:
        return Deletion(uri, "unsupported", f"deleting {scheme}:// state needs fsspec, which is not installed")
    try:
        filesystem, path = fsspec_core.url_to_fs(uri)
    except (ImportError, ValueError) as error:  # No implementation of the protocol, or none installed.
        return Deletion(uri, "unsupported", f"fsspec cannot open {scheme}:// ({_first_line(error)})")
    try:
        if not filesystem.exists(path):
            return Deletion(uri, "absent", f"nothing at {uri}")
        filesystem.rm(path, recursive=True)
    except Exception as error:  # Each store raises its own errors; a failure is reported, not raised.
        return Deletion(uri, "failed", f"cannot delete {uri}: {_first_line(error)}")
    return Deletion(uri, "deleted", f"deleted {uri}")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
