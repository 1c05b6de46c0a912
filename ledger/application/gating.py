"""The scores a gate rule is evaluated on, as the ledger finds them recorded: a version's source
checkpoint's scores, or an evaluation run's summary, each with the log position of the event that
recorded it (ledger.domain.gates evaluates the rule). A retracted run's scores are no evidence.

A registry write asks for these inside its decision, so the positions it records are of events
already stored; one of the same group commit that is not durable yet is UNAVAILABLE (send again).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any
from uuid import UUID

from ledger.domain import run_checkpoints
from ledger.domain.errors import Invalid, NotFound, Refused, Unavailable
from ledger.domain.gates import ASSERTED, Score, parse_rule
from ledger.domain.limits import check_reference
from ledger.domain.reasons import Reason
from ledger.domain.runs import Run

__all__ = ["asserted", "checkpoint_scores", "request_digest", "summary_scores", "check_gate"]


def request_digest(kind: str, **payload: Any) -> str:
    """The fingerprint of a registry write, kept with its request id (a retry must match it)."""
    text = json.dumps({"kind": kind, **payload}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def check_gate(verdict: dict[str, Any] | None, gate_rule: str, evaluation_run_id: str) -> None:
    """A promotion takes an asserted verdict or a gate rule, not both (INVALID_FIELD); a rule
    must parse (INVALID_GATE_RULE); an evaluation run goes with a rule; an asserted verdict has a
    reason (MISSING_FIELD)."""
    if gate_rule:
        if verdict:
            raise Invalid(
                "a promotion takes a verdict or a gate_rule, not both", reason=Reason.INVALID_FIELD, field="verdict"
            )
        parse_rule(gate_rule)
        if evaluation_run_id:
            check_reference(evaluation_run_id, "evaluation_run_id")
    elif evaluation_run_id:
        raise Invalid("evaluation_run_id needs a gate_rule", reason=Reason.INVALID_FIELD, field="evaluation_run_id")
    else:
        given = (verdict or {}).get("reason")
        if not isinstance(given, str) or not given.strip():
            raise Invalid(
                "an asserted verdict needs a reason: who checked what",
                reason=Reason.MISSING_FIELD,
                field="verdict.reason",
            )


def asserted(verdict: dict[str, Any]) -> dict[str, Any]:
    """A verdict as the caller asserts it, marked as asserted."""
    return {**verdict, "mode": ASSERTED}


def _position(position_of: Callable[[UUID, int], int], run: Run, version: int) -> int:
    try:
        return position_of(run.id, version)
    except LookupError:
        raise Unavailable("the scores' event is not durable yet: send the promotion again") from None


def checkpoint_scores(
    entry: dict[str, Any], find_run: Callable[[str], Run | None], position_of: Callable[[UUID, int], int]
) -> dict[str, Score]:
    """The scores of a version's source checkpoint (the one it names, else the checkpoint at its
    source step of a known source run); GATE_EVIDENCE_MISSING when it has none."""
    source = entry.get("source_checkpoint")
    run_id = source["run_id"] if source else entry.get("source_run_id", "")
    step = int(source["step"]) if source else int(entry.get("source_step", 0))
    run = find_run(run_id) if run_id else None
    try:
        if run is None:
            raise NotFound("no source run", reason=Reason.RUN_NOT_FOUND)
        checkpoint = run_checkpoints.checkpoint_at(run, step, int(source["attempt"]) if source else 0)
    except NotFound:
        raise Refused(
            f"version {entry['version']} names no source checkpoint of a known run to evaluate a gate rule on",
            reason=Reason.GATE_EVIDENCE_MISSING,
            version=entry["version"],
        ) from None
    run.check_not_retracted()  # A retracted run's scores are no evidence (RUN_RETRACTED).
    position = _position(position_of, run, int(checkpoint["version"]))
    return {
        name: Score(float(value), "checkpoint", str(run.id), step, position)
        for name, value in (checkpoint.get("scores") or {}).items()
    }


def summary_scores(run: Run, position_of: Callable[[UUID, int], int]) -> dict[str, Score]:
    """The numbers of an evaluation run's summary, at the position of the run's latest event; a
    retracted run's are no evidence (RUN_RETRACTED)."""
    run.check_not_retracted()
    position = _position(position_of, run, run.version)
    return {
        name: Score(float(value), "summary", str(run.id), 0, position)
        for name, value in run.summary.items()
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    }
