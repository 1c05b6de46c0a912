"""What `trainledger runs diff` shares whichever way it reads (services.cli.remote through a server,
services.cli.local on a database file): the runs it may name and what it prints
(services.render.diff)."""

from __future__ import annotations

import argparse
from typing import Any

from services.cli.output import Failure, emit
from services.render.diff import COMPARE_RUNS_MAX, diff_text, run_diff

__all__ = ["diff_refs", "diff_shown"]


def diff_refs(refs: list[str]) -> list[str]:
    """The runs `runs diff` names, each once: 2 to COMPARE_RUNS_MAX of them (Failure otherwise)."""
    refs = list(dict.fromkeys(ref.strip() for ref in refs))
    if not 2 <= len(refs) <= COMPARE_RUNS_MAX:
        raise Failure(f"runs diff compares 2 to {COMPARE_RUNS_MAX} runs, not {len(refs)}")
    return refs


def diff_shown(args: argparse.Namespace, run_ids: list[str], states: list[Any]) -> None:
    """Print what the runs differ in; the same run named twice is refused."""
    if len(set(run_ids)) < len(run_ids):
        raise Failure("runs diff: two of the names given are the same run")
    diff = run_diff(states)
    value: dict[str, Any] = {
        "runs": [{"run_id": i, "label": label} for i, label in zip(diff.run_ids, diff.labels, strict=True)],
        "rows": [vars(row) for row in diff.shown(args.everything)],
        "identical": diff.identical,
    }
    emit(args, value, lambda: diff_text(diff, args.everything))
