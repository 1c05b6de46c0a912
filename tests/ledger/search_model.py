"""A reference model for run search tests: random runs recorded through the Ledger, each kept
beside it as plain values, and a brute-force evaluator of a query tree over them (written from
the language's documented rules, sharing no code with ledger.views.search)."""

from __future__ import annotations

import operator
import random
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ledger import Ledger
from tests.ledger.conftest import FakeClock

COMPARE = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
NAMES = ("sft-a", "sft-b", "dpo", "DPO-x", "eval_y")
PARENTS = ("", "team-a", "team-b")


@dataclass
class ModelRun:
    run_id: str
    name: str
    started: float
    spec: dict[str, Any]
    parent: str
    cap: int | None
    status: str = "running"
    attempts: int = 0
    finished: float | None = None
    committed: int = 0
    retracted: bool = False
    summary: dict[str, Any] = field(default_factory=dict)
    # metric -> [(attempt, step, value)]
    values: dict[str, list[tuple[int, int, float]]] = field(default_factory=dict)


def _spec(rng: random.Random) -> dict[str, Any]:
    choices: dict[str, Any] = {
        "lr": rng.choice([1e-4, 3e-4, 1e-3]),
        "lora": {"r": rng.choice([8, 16, 32]), "alpha": rng.choice([16, 32])},
        "opt": rng.choice(["adam", "AdamW", "sgd"]),
        "flag": rng.choice([True, False]),
        "mixed": rng.choice([1, "one", 2.5, None, [1, 2]]),
        "notes": rng.choice(["a_b", "a%b", "plain"]),
    }
    return {key: value for key, value in choices.items() if rng.random() < 0.8}


def _steps(ledger: Ledger, model: ModelRun, attempt: int, rng: random.Random) -> int:
    count = rng.randint(1, 6)
    steps = list(range(1, count + 1))
    metrics: dict[str, list[float]] = {}
    for name in ("loss", "acc"):
        if rng.random() < 0.7:
            metrics[name] = [rng.choice([0.5, 1.0, 1.5, 2.0, 2.5]) for _ in steps]
            model.values.setdefault(name, []).extend((attempt, s, v) for s, v in zip(steps, metrics[name], strict=True))
    return ledger.append_steps(run_id=model.run_id, attempt=attempt, steps=steps, metrics=metrics).position


def _finish(ledger: Ledger, clock: FakeClock, model: ModelRun, rng: random.Random) -> int:
    summary = {"eval": rng.choice([0.1, 0.2]), "tag": rng.choice(["x", "y"]), "nested": {"k": rng.choice([1, 2])}}
    model.status = rng.choice(["done", "failed", "stopped"])
    clock.advance(minutes=rng.randint(1, 120))
    position = ledger.finish_run(
        run_id=model.run_id, attempt=model.attempts, status=model.status, summary=summary
    ).position
    model.finished, model.summary = clock.now.timestamp(), dict(summary)
    if rng.random() < 0.5:
        # A noted key replaces the one before, a nested one with its leaves.
        notes = {"eval": 0.3, "nested": rng.choice([5, {"j": 1}])}
        position = ledger.note_summary(run_id=model.run_id, summary=notes).position
        model.summary.update(notes)
    return position


def record_runs(ledger: Ledger, clock: FakeClock, seed: int, count: int) -> tuple[list[ModelRun], int]:
    """`count` random runs recorded through `ledger`, and the position of the last event."""
    rng, runs, position = random.Random(seed), [], 0
    for parent in PARENTS[1:]:
        ledger.open_account(account=parent)
    for index in range(count):
        clock.advance(minutes=rng.randint(1, 30))
        spec, parent, cap = _spec(rng), rng.choice(PARENTS), rng.choice([None, 1_000_000, 5_000_000])
        name = f"{rng.choice(NAMES)}-{index}"
        receipt = ledger.open_run(
            run_key=f"run-{seed}-{index}", name=name, spec=spec, cap_usd_micro=cap, parent_account=parent
        )
        model = ModelRun(receipt.run_id, name, clock.now.timestamp(), spec, parent, cap)
        position = receipt.position
        for attempt in range(1, rng.randint(0, 2) + 1):
            ledger.start_attempt(run_id=model.run_id)
            model.attempts = attempt
            position = _steps(ledger, model, attempt, rng)
        if rng.random() < 0.5:
            amount = rng.choice([100, 500, 900])
            ledger.reserve(account=model.run_id, reservation_id="r", amount_usd_micro=amount)
            position = ledger.commit(account=model.run_id, reservation_id="r", actual_usd_micro=amount).position
            model.committed = amount
        if model.attempts and rng.random() < 0.6:
            position = _finish(ledger, clock, model, rng)
        if index == 3:
            position = ledger.retract_run(run_id=model.run_id, reason="leaked eval data").position
            model.retracted = True
        runs.append(model)
    return runs, position


# The evaluator. A query tree: ("and", a, b), ("or", a, b), ("not", a), or
# ("cmp", field, operator, literals) with literals (kind, value, text).


def _path(document: dict[str, Any], keys: list[str]) -> Any:
    value: Any = document
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else None


def like(text: str, pattern: str) -> bool:
    """SQL LIKE with a backslash escape, ignoring the case of ASCII letters."""
    out, escaped = [], False
    for character in pattern:
        if escaped:
            out.append(re.escape(character))
            escaped = False
        elif character == "\\":
            escaped = True
        else:
            out.append({"%": ".*", "_": "."}.get(character, re.escape(character)))
    return re.fullmatch("".join(out), text, re.DOTALL | re.IGNORECASE | re.ASCII) is not None


def _metric(run: ModelRun, name: str, stat: str) -> float | None:
    values = run.values.get(name)
    if not values:
        return None
    if stat == "last":
        return max(values, key=lambda point: (point[0], point[1]))[2]
    return (min if stat == "min" else max)(value for _, _, value in values)


def run_value(run: ModelRun, name: str, now: float) -> Any:
    """A run field's value (None: the run lacks it), in the units a query compares."""
    return {
        "status": run.status,
        "name": run.name,
        "account": run.parent or None,
        "attempts": run.attempts,
        "started": run.started,
        "finished": run.finished,
        "elapsed": (run.finished if run.finished is not None else now) - run.started,
        "spend_committed_usd_micro": run.committed,
        "spend_committed_usd": run.committed,
        "cap_usd_micro": run.cap,
        "cap_usd": run.cap,
    }[name]


def field_value(run: ModelRun, name: str, now: float) -> tuple[str, Any]:
    """("document", raw value) | ("metric", number) | ("run", value)."""
    parts = name.replace("`", "").split(".")
    if parts[0] in ("spec", "summary", "tags"):
        document = {"spec": run.spec, "summary": run.summary, "tags": {}}[parts[0]]
        return "document", _path(document, parts[1:])
    if parts[0] == "metrics":
        return "metric", _metric(run, ".".join(parts[1:-1]), parts[-1])
    return "run", run_value(run, name, now)


def _literal(kind: str, value: Any) -> Any:
    if kind == "time":
        return datetime.fromisoformat(value).timestamp()
    if kind == "usd":
        return round(value * 1_000_000)
    return value


def _comparable(source: str, raw: Any, kind: str) -> Any:
    if source != "document":
        return raw
    if kind == "number":
        return _number(raw)
    return _text(raw)


def holds(node: tuple[Any, ...], run: ModelRun, now: float) -> bool:
    if node[0] == "and":
        return holds(node[1], run, now) and holds(node[2], run, now)
    if node[0] == "or":
        return holds(node[1], run, now) or holds(node[2], run, now)
    if node[0] == "not":
        return not holds(node[1], run, now)
    _, name, op, literals = node
    source, raw = field_value(run, name, now)
    if op in ("is null", "is not null"):
        absent = raw is None if source != "document" else _number(raw) is None and _text(raw) is None
        return absent == (op == "is null")
    if op in ("like", "not like"):
        text = _text(raw) if source == "document" else raw
        return text is not None and like(text, literals[0][1]) == (op == "like")
    kind = literals[0][0]
    value = _comparable(source, raw, kind)
    if value is None:
        return False
    wanted = [_literal(k, "true" if v is True else "false" if v is False else v) for k, v, _ in literals]
    if op == "in":
        return value in wanted
    if op == "not in":
        return value not in wanted
    return bool(COMPARE[op](value, wanted[0]))


def order_key(run: ModelRun, name: str, now: float) -> tuple[int, Any]:
    """(group, value): numbers, then strings (spec, summary and tag keys), then runs lacking it."""
    source, raw = field_value(run, name, now)
    if source == "document":
        number, text = _number(raw), _text(raw)
        if number is not None:
            return 0, number
        return (1, text) if text is not None else (2, None)
    return (0, raw) if raw is not None else (2, None)


def expected(
    runs: list[ModelRun], query: tuple[Any, ...] | None, order: str, descending: bool, now: float
) -> list[str]:
    """The run ids a search answers, in its order (ties and no order: newest first)."""
    chosen = [run for run in runs if not run.retracted and (query is None or holds(query, run, now))]
    chosen.sort(key=lambda run: (run.started, run.run_id), reverse=True)
    if order:
        keys = {run.run_id: order_key(run, order, now) for run in chosen}
        groups: list[list[ModelRun]] = [[], [], []]
        for run in chosen:
            groups[keys[run.run_id][0]].append(run)
        for group in groups[:2]:
            # A stable sort: equal values stay newest first, in either direction.
            group.sort(key=lambda run: keys[run.run_id][1], reverse=descending)
        chosen = [run for group in groups for run in group]
    return [run.run_id for run in chosen]
