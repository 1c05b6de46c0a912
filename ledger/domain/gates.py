"""Gate rules: what a promotion may ask the ledger to check on recorded scores, and the verdict.

A rule is comparisons of a score's name with a decimal number joined by "and":

    rule       := comparison ("and" comparison)*
    comparison := NAME OPERATOR NUMBER
    OPERATOR   := "<" | "<=" | ">" | ">=" | "=="
    NUMBER     := ["-"] DIGITS ["." DIGITS] [("e" | "E") ["+" | "-"] DIGITS]   (ASCII digits, finite)
    NAME       := a letter or "_", then letters, digits, "_", ".", "/" or "-" (ASCII, 128 at most)

A rule is at most RULE_LENGTH_MAX characters and RULE_COMPARISONS_MAX comparisons. A rule that
does not parse is INVALID_GATE_RULE, with the position (0-based character offset) where it went
wrong. A verdict the ledger evaluates is "evaluated" and carries its evidence: each named score,
where it was recorded and at which log position; a score that was never recorded fails its
comparison. A verdict the caller only asserts is "asserted".
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

from ledger.domain.errors import Invalid
from ledger.domain.reasons import Reason

__all__ = [
    "ASSERTED",
    "EVALUATED",
    "RULE_COMPARISONS_MAX",
    "RULE_LENGTH_MAX",
    "Comparison",
    "Score",
    "evaluate",
    "parse_rule",
]

RULE_LENGTH_MAX = 1_024
RULE_COMPARISONS_MAX = 16
ASSERTED = "asserted"
EVALUATED = "evaluated"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_./\-]{0,127}(?![A-Za-z0-9_./\-])")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![A-Za-z0-9_.])")
_OPERATOR = re.compile(r"<=|>=|==|<|>")
_AND = re.compile(r"and(?![A-Za-z0-9_./\-])")
_SPACE = re.compile(r"[ \t]*")
_HOLDS = {
    "<": lambda value, bound: value < bound,
    "<=": lambda value, bound: value <= bound,
    ">": lambda value, bound: value > bound,
    ">=": lambda value, bound: value >= bound,
    "==": lambda value, bound: value == bound,
}


class Comparison(NamedTuple):
    name: str
    operator: str
    bound: float


class Score(NamedTuple):
    """A recorded score: its value, where it was recorded (checkpoint | summary), the run, the
    checkpoint's step (0 for a summary) and the log position of the event that recorded it."""

    value: float
    source: str
    run_id: str
    step: int
    position: int


def _invalid(message: str, position: int) -> Invalid:
    return Invalid(f"gate rule: {message} at position {position}", reason=Reason.INVALID_GATE_RULE, position=position)


def _take(pattern: re.Pattern[str], rule: str, at: int, expected: str) -> tuple[str, int]:
    """The token `pattern` matches at `at` (after spaces), and the offset after it."""
    at = _SPACE.match(rule, at).end()  # type: ignore[union-attr]
    found = pattern.match(rule, at)
    if found is None:
        raise _invalid(f"expected {expected}", at)
    return found.group(), found.end()


def parse_rule(rule: str) -> list[Comparison]:
    """The comparisons of `rule`; INVALID_GATE_RULE (with its position) when it does not parse
    or crosses a limit."""
    if len(rule) > RULE_LENGTH_MAX:
        raise _invalid(f"longer than {RULE_LENGTH_MAX} characters", RULE_LENGTH_MAX)
    if not rule.strip():
        raise _invalid("the rule is empty", 0)
    comparisons: list[Comparison] = []
    at = 0
    while True:
        start = _SPACE.match(rule, at).end()  # type: ignore[union-attr]
        if len(comparisons) == RULE_COMPARISONS_MAX:
            raise _invalid(f"more than {RULE_COMPARISONS_MAX} comparisons", start)
        name, at = _take(_NAME, rule, at, "a score's name")
        operator, at = _take(_OPERATOR, rule, at, "one of < <= > >= ==")
        number_at = _SPACE.match(rule, at).end()  # type: ignore[union-attr]
        text, at = _take(_NUMBER, rule, at, "an ASCII decimal number")
        bound = float(text)
        if not math.isfinite(bound):
            raise _invalid("the number is out of range", number_at)
        comparisons.append(Comparison(name, operator, bound))
        at = _SPACE.match(rule, at).end()  # type: ignore[union-attr]
        if at == len(rule):
            return comparisons
        _, at = _take(_AND, rule, at, '"and" or the end of the rule')


def evaluate(rule: str, scores: dict[str, Score]) -> dict[str, Any]:
    """The evaluated verdict of `rule` on `scores`: {passed, reason, stats, mode, rule, evidence},
    with one evidence entry per name the rule uses (its value None when it was never recorded)."""
    comparisons = parse_rule(rule)
    failed: list[str] = []
    evidence: dict[str, dict[str, Any]] = {}
    for comparison in comparisons:
        score = scores.get(comparison.name)
        if comparison.name not in evidence:
            evidence[comparison.name] = (
                {"name": comparison.name, "value": None, "source": "", "run_id": "", "step": 0, "position": 0}
                if score is None
                else {"name": comparison.name, **score._asdict()}
            )
        described = f"{comparison.name} {comparison.operator} {comparison.bound:g}"
        if score is None:
            failed.append(f"{described} (no {comparison.name} recorded)")
        elif not _HOLDS[comparison.operator](score.value, comparison.bound):
            failed.append(f"{described} (it is {score.value:g})")
    # Why: the comparisons that failed, or the rule that held.
    reason = "; ".join(failed) if failed else " ".join(rule.split())
    return {
        "passed": not failed,
        "reason": reason,
        "stats": {name: entry["value"] for name, entry in evidence.items() if entry["value"] is not None},
        "mode": EVALUATED,
        "rule": rule,
        "evidence": list(evidence.values()),
    }
