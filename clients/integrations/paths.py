"""Where a resume may load from: checkpoint paths named by the ledger are held to a directory
the trainer owns (its output directory, a mounted volume, its adapter folder)."""

from __future__ import annotations

import os

__all__ = ["outside"]


def outside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """Why `path` is not inside `root` once real paths are resolved, or "" when it is: the path
    (a `..` climbing out, a symlink out) and, for a directory, every entry under it, links followed."""
    real_root = os.path.realpath(root)

    def inside(real: str) -> bool:
        return real != real_root and os.path.commonpath([real, real_root]) == real_root

    real = os.path.realpath(path)
    if not inside(real):
        return f"{path} is {real}, not under {real_root}"
    directories, seen = [real] if os.path.isdir(real) else [], set()
    while directories:
        directory = directories.pop()
        if directory in seen:
            continue
        seen.add(directory)
        with os.scandir(directory) as entries:
            for entry in entries:
                target = os.path.realpath(entry.path)
                if not inside(target):
                    return f"{entry.path} is {target}, not under {real_root}"
                if os.path.isdir(target):
                    directories.append(target)
    return ""
