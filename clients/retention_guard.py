"""Where a prune may delete: inside the roots its operator names, never a state the ledger protects.

A checkpoint's uri is written by whoever saved the checkpoint (a trainer's token), so it cannot
choose what an operator's prune deletes. `Guard.check` answers for one uri, before anything is
recorded or deleted:

- a local path (a plain path or a `file://` uri) is resolved with every symbolic link in it
  (os.path.realpath), and must then lie strictly inside one of the roots, themselves resolved: a
  link anywhere on the way that leads out of them is refused, and so is a root itself. A path
  that is itself a symbolic link is refused (its target lies elsewhere). What is deleted is the
  resolved path, never the path as written;
- a uri of another scheme (`s3://bucket/...`) must lie strictly inside a root given as a uri of
  the same scheme and host, compared path component by path component after normalising `..`;
- a provider's handle (tinker, modal-volume) or another host's file names nothing deletable from
  here: it passes, and the deleter says so;
- in every case the target must neither be, contain, nor lie inside a protected state: every
  run's live resume and best checkpoints, the checkpoints registry versions were made from and
  every version's artifact (ListProtectedStates), compared as written and as resolved; a
  protected `file://` uri also as the literal path after `file://`, which is what a trainer
  resumes from (`%41`, `?` and `#` are characters of a file name there).

The roots come from `--root` (repeatable) or, when none is given, from the environment variable
TRAINLEDGER_PRUNE_ROOTS (roots separated by os.pathsep; a uri root keeps its `scheme://`). With no
root, nothing is deleted.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from clients.retention import PROVIDER_BACKENDS, PROVIDER_SCHEMES, local_path

__all__ = ["ROOTS_ENVIRONMENT", "Guard", "Target", "roots_from"]

ROOTS_ENVIRONMENT = "TRAINLEDGER_PRUNE_ROOTS"
ROOTS_MAX = 64


@dataclass(frozen=True)
class Target:
    """What a prune may do with one uri: delete `path` (`size_bytes` in it, when `local`: another
    scheme's size is not read) when `refusal` is empty."""

    uri: str
    path: str
    size_bytes: int
    refusal: str
    local: bool = True

    @property
    def allowed(self) -> bool:
        return not self.refusal


def roots_from(options: Sequence[str], environment: Mapping[str, str]) -> list[str]:
    """The roots a prune may delete under: `options` (from --root), else the environment's list."""
    if options:
        found = list(options)
    else:
        found = []
        for part in environment.get(ROOTS_ENVIRONMENT, "").split(os.pathsep):
            if part.startswith("//") and found and "/" not in found[-1]:
                found[-1] += ":" + part  # A uri root ("s3://b/x") split at its scheme's colon.
            elif part.strip():
                found.append(part.strip())
    if len(found) > ROOTS_MAX:
        raise ValueError(f"at most {ROOTS_MAX} prune roots")
    return found


def _scheme(uri: str) -> str:
    head, sep, _ = uri.partition("://")
    return head.lower() if sep and len(head) > 1 else ""


def _remote(uri: str) -> str:
    """A uri of another scheme as `scheme://host/normalised/path` (no slash at the end)."""
    parts = urlsplit(uri)
    path = posixpath.normpath("/" + parts.path.lstrip("/"))
    return f"{parts.scheme.lower()}://{parts.netloc}{path.rstrip('/')}"


def _inside(path: str, root: str) -> bool:
    """Whether `path` lies strictly inside `root` (both normalised, compared by component)."""
    return path != root and path.startswith(root.rstrip("/") + "/")


def _lineage(path: str) -> list[str]:
    """`path` and every folder above it (for a uri, up to `scheme://host/`)."""
    found = [path]
    while True:
        parent = posixpath.dirname(found[-1].rstrip("/")) or "/"
        if parent in found or parent.endswith(":/") or parent.endswith(":"):
            return found
        found.append(parent)


def _forms(uri: str) -> set[str]:
    """A protected uri as written and, for a local path, as resolved. A `file://` uri is read both
    as a uri (percent-decoded, without query or fragment) and as the literal path after its
    `file://`, the way a trainer resumes from it (clients.integrations.resume.local_path)."""
    scheme = _scheme(uri)
    try:
        if scheme not in ("", "file"):
            return {_remote(uri)}
        paths = {local_path(uri)}
    except ValueError:  # Not a uri (an unclosed "[" in its host): no store reads it as one.
        paths = set()
    if scheme == "file":
        paths.add(os.path.abspath(uri[len("file://") :]))
    # A path with a null byte names no file here: nothing to protect (nor to resolve).
    readable = [path for path in paths if path is not None and "\x00" not in path]
    return {form for path in readable for form in (path, os.path.realpath(path))}


def _size_bytes(path: str) -> int:
    """The bytes under `path`, never following a symbolic link."""
    found = os.lstat(path)
    if not stat.S_ISDIR(found.st_mode):
        return found.st_size
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


class Guard:
    """The roots a prune may delete under and the states it must keep (see the module docstring)."""

    def __init__(self, roots: Iterable[str], protected: Iterable[str]) -> None:
        self.local_roots: list[str] = []
        self.remote_roots: list[str] = []
        for root in roots:
            if _scheme(root) in ("", "file"):
                path = local_path(root)
                if path is None or not os.path.isdir(path):
                    raise ValueError(f"prune root {root!r} is not a directory here")
                self.local_roots.append(os.path.realpath(path))
            else:
                self.remote_roots.append(_remote(root))
        # Each protected path, and each folder above one (mapped to the path it holds), so that a
        # target is checked against all of them by walking up its own path once.
        self.protected: set[str] = set()
        self.holding: dict[str, str] = {}
        for uri in protected:
            for form in _forms(uri):
                self.protected.add(form)
                for folder in _lineage(form)[1:]:
                    self.holding.setdefault(folder, form)

    def _clash(self, *paths: str) -> str:
        """A protected path that one of `paths` is, lies inside or contains; "" when none."""
        for path in paths:
            if path in self.holding:
                return self.holding[path]
            for folder in _lineage(path):
                if folder in self.protected:
                    return folder
        return ""

    def check(self, uri: str, backend: str = "") -> Target:
        """What a prune may do with the state `uri` names (see the module docstring)."""
        try:
            return self._check(uri, backend)
        except ValueError as error:  # Not a uri: an unclosed "[" in its host.
            return Target(uri, "", 0, f"{uri} is not a uri a prune can read: {error}")

    def _check(self, uri: str, backend: str) -> Target:
        scheme = _scheme(uri)
        if not uri or backend in PROVIDER_BACKENDS or scheme in PROVIDER_SCHEMES:
            return Target(uri, "", 0, "")
        if scheme not in ("", "file"):
            return self._check_remote(uri)
        written = local_path(uri)
        if written is None:
            return Target(uri, "", 0, "")
        if "\x00" in written:
            return Target(uri, "", 0, f"{uri} names a path with a null byte: no file here has one")
        if not self.local_roots:
            return Target(uri, written, 0, f"no prune root is set: pass --root or set {ROOTS_ENVIRONMENT}")
        resolved = os.path.realpath(written)
        if resolved in self.local_roots:
            return Target(uri, resolved, 0, f"{resolved} is a prune root itself: only what lies inside it is deleted")
        if not any(_inside(resolved, root) for root in self.local_roots):
            shown = written if resolved == written else f"{written} (resolved: {resolved})"
            return Target(uri, resolved, 0, f"{shown} is outside the prune roots")
        clash = self._clash(resolved, written)
        if clash:
            return Target(uri, resolved, 0, f"{resolved} overlaps {clash}, which the ledger still needs")
        try:
            if stat.S_ISLNK(os.lstat(written).st_mode):
                return Target(uri, resolved, 0, f"{written} is a symbolic link: not followed")
            return Target(uri, resolved, _size_bytes(resolved), "")
        except FileNotFoundError:
            return Target(uri, resolved, 0, "")
        except OSError as error:
            return Target(uri, resolved, 0, f"cannot read {resolved}: {error.strerror or error}")

    def _check_remote(self, uri: str) -> Target:
        normal = _remote(uri)
        if normal in self.remote_roots:
            refusal = f"{normal} is a prune root itself: only what lies inside it is deleted"
            return Target(uri, normal, 0, refusal, local=False)
        if not any(_inside(normal, root) for root in self.remote_roots):
            return Target(uri, normal, 0, f"{normal} is outside the prune roots", local=False)
        clash = self._clash(normal)
        if clash:
            return Target(uri, normal, 0, f"{normal} overlaps {clash}, which the ledger still needs", local=False)
        return Target(uri, uri, 0, "", local=False)
