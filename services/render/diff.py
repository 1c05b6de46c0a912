"""What several runs differ in: the rows `trainledger runs diff` prints and the dashboard's compare
page shows, made here once so both show the same.

`run_diff` takes the runs' states (RunState, from a server or a database file) and answers one
column per run, labelled by `run_labels` (the run's name, with the first 8 characters of its id
where several compared runs share the name; the id's first characters for a run without a name),
and one row per key: every spec key (`spec.lr`, nested keys dotted: `spec.lora.r`, a key that is not
letters, digits and `_` in backticks: ``spec.`warmup-steps` ``) and summary key
(`summary.eval_loss`) any run has, then `spend` (what the cap counts as spent, in dollars) and `best
checkpoint` ("step N (metric=value)", by the run's objective). A key a run lacks is "-"; a value is
its text (strings as they are, anything else as JSON). A spec or summary row whose values are all
the same is `differs=False`: folded away unless asked for (the count is `identical`); the spend
and best checkpoint rows are always shown.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.render.checkpoints import figure
from services.render.tables import printable, table, usd
from trainledger.fields import shown_segment

__all__ = ["DiffRow", "RunDiff", "COMPARE_RUNS_MAX", "MISSING", "SHORT_ID", "diff_text", "run_diff", "run_labels"]

COMPARE_RUNS_MAX = 10  # The most runs compared at once (the dashboard's, `runs diff`).
MISSING = "-"
SHORT_ID = 8  # The characters of a run id that tell runs of the same name apart.
_ABSENT = object()


@dataclass(frozen=True)
class DiffRow:
    """One key across the runs: its text per run, and whether the runs differ on it."""

    key: str
    values: tuple[str, ...]
    differs: bool
    fact: bool = False  # spend, best checkpoint: shown whether or not the runs differ


@dataclass(frozen=True)
class RunDiff:
    """The runs compared (ids and labels, in the order asked) and their rows."""

    run_ids: tuple[str, ...]
    labels: tuple[str, ...]
    rows: tuple[DiffRow, ...]

    @property
    def identical(self) -> int:
        """How many rows are the same for every run (folded away unless asked for)."""
        return sum(1 for row in self.rows if not row.differs and not row.fact)

    def shown(self, everything: bool = False) -> tuple[DiffRow, ...]:
        """The rows to show: the spec and summary keys that differ (every one when `everything`),
        then the spend and the best checkpoint."""
        return tuple(row for row in self.rows if everything or row.differs or row.fact)


def run_labels(runs: Sequence[tuple[str, str]]) -> list[str]:
    """Each (run id, name)'s label: the name; name and short id where several share the name;
    the short id without a name."""
    counts: dict[str, int] = {}
    for _, name in runs:
        counts[name] = counts.get(name, 0) + 1
    return [
        run_id[:SHORT_ID] if not name else f"{name} {run_id[:SHORT_ID]}" if counts[name] > 1 else name
        for run_id, name in runs
    ]


def _leaves(prefix: str, value: Any) -> Iterable[tuple[str, Any]]:
    """Each leaf of a document, named as a search and a runs frame name it: a key that is not
    letters, digits and `_` in backticks, so a key "a.b" and the key b under a are two rows."""
    if isinstance(value, Mapping) and value:
        for key in value:
            yield from _leaves(f"{prefix}.{shown_segment(str(key))}", value[key])
    else:
        yield prefix, value


def _text(value: Any) -> str:
    if value is _ABSENT:
        return MISSING
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _same(values: Sequence[Any]) -> bool:
    """Whether every value is the same (absent differs from any value, 1 from "1")."""
    marks = [
        ("absent",) if v is _ABSENT else (type(v) is str, json.dumps(v, sort_keys=True, default=str)) for v in values
    ]
    return all(mark == marks[0] for mark in marks)


def _document_rows(section: str, documents: Sequence[Mapping[str, Any] | None]) -> list[DiffRow]:
    flat = [dict(_leaves(section, document)) if document else {} for document in documents]
    keys = sorted({key for leaves in flat for key in leaves})
    rows = []
    for key in keys:
        values = [leaves.get(key, _ABSENT) for leaves in flat]
        rows.append(DiffRow(key, tuple(_text(v) for v in values), not _same(values)))
    return rows


def spend_of(state: Any) -> str:
    """What the cap counts as spent on a run, in dollars: committed plus presumed."""
    spend = state.spend
    return usd(spend.committed_usd_micro + getattr(spend, "presumed_usd_micro", 0))


def best_of(state: Any) -> str:
    """The run's best checkpoint by its objective: "step N (metric=value)", "step N" without a
    score, "-" without one."""
    best = getattr(state, "best_checkpoint", None)
    if best is None:
        return MISSING
    objective = getattr(state.run, "objective", None)
    metric = objective.metric if objective is not None else ""
    score = (getattr(best, "scores", None) or {}).get(metric) if metric else None
    return f"step {best.step} ({metric}={figure(score)})" if score is not None else f"step {best.step}"


def run_diff(states: Sequence[Any]) -> RunDiff:
    """The runs' spec and summary keys (those that differ marked), their spend and best checkpoint."""
    run_ids = tuple(state.run.run_id for state in states)
    labels = tuple(run_labels([(state.run.run_id, state.run.name) for state in states]))
    spend = tuple(spend_of(state) for state in states)
    best = tuple(best_of(state) for state in states)
    rows = [
        *_document_rows("spec", [state.run.spec for state in states]),
        *_document_rows("summary", [state.run.summary for state in states]),
        DiffRow("spend", spend, len(set(spend)) > 1, fact=True),
        DiffRow("best checkpoint", best, len(set(best)) > 1, fact=True),
    ]
    return RunDiff(run_ids, labels, tuple(rows))


def diff_text(diff: RunDiff, everything: bool = False) -> str:
    """`runs diff`: the runs' labels and ids, then a KEY column and one column per run (`shown`);
    the identical keys folded away are counted (`everything`: shown, marked "=" under SAME)."""
    headers = ["KEY", *diff.labels] + (["SAME"] if everything else [])
    body = [
        (row.key, *row.values, *([("=" if not row.differs else "")] if everything else []))
        for row in diff.shown(everything)
    ]
    text = table(headers, body)
    folded = diff.identical
    if folded and not everything:
        text += f"\n({folded} identical key{'s' if folded != 1 else ''} folded away: --all shows them)"
    runs = "\n".join(
        f"{printable(label)}: {printable(run_id)}" for label, run_id in zip(diff.labels, diff.run_ids, strict=True)
    )
    return f"{runs}\n\n{text}"
