"""Every command refuses bad input with the error hierarchy, before anything is recorded: the
log is unchanged (head before == head after). On each backend."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from ledger import (
    Conflict,
    Invalid,
    Ledger,
    LedgerError,
    NotFound,
    Refused,
)
from ledger.domain.limits import BATCH_STEPS_MAX, MAP_ENTRIES_MAX, METRICS_PER_BATCH_MAX, STEP_MAX, USD_MICRO_MAX
from tests.ledger.conftest import DIGEST_A, FakeClock

UNKNOWN_RUN = "00000000-0000-5000-8000-000000000000"
LONG_ID = "x" * 257
LONG_TEXT = "x" * 4097
BIG_MAP = {f"k{i}": i for i in range(MAP_ENTRIES_MAX + 1)}
DEEP: dict[str, Any] = {}
_node = DEEP
for _ in range(12):
    _node["d"] = {}
    _node = _node["d"]


@dataclass
class World:
    ledger: Ledger
    run_id: str
    clock: FakeClock


@pytest.fixture
def world(ledger: Ledger, clock: FakeClock) -> Iterator[World]:
    """A run (attempt 1 with steps 1..3), its account under "team" with a pending reservation
    r1, and a family f with version 1 promoted."""
    ledger.open_account(account="team", cap_usd_micro=1_000_000)
    run_id = ledger.open_run(run_key="k", cap_usd_micro=100_000, parent_account="team").run_id
    ledger.start_attempt(run_id=run_id)
    ledger.append_steps(run_id=run_id, attempt=1, steps=[1, 2, 3], metrics={"loss": [1.0, 0.9, 0.8]})
    ledger.reserve(account=run_id, reservation_id="r1", amount_usd_micro=10)
    ledger.register(family="f", artifact_uri="s3://m/1", digest=DIGEST_A)
    ledger.promote(family="f", version=1, expected_current=0, verdict={"passed": True, "reason": "checked"})
    yield World(ledger, run_id, clock)


def valid(command: str, w: World) -> dict[str, Any]:
    """Arguments that the command would accept (or answer as a retry) in `world`."""
    run_id = w.run_id
    return {
        "open_run": {"run_key": "new", "name": "n", "spec": {"lr": 0.1}, "cap_usd_micro": 5, "parent_account": "team"},
        "start_attempt": {"run_id": run_id, "label": "host"},
        "append_steps": {
            "run_id": run_id,
            "attempt": 1,
            "steps": [4, 5],
            "tokens": [1, 2],
            "usd_micro": [0, 0],
            "metrics": {"loss": [0.7, 0.6]},
        },
        "save_checkpoint": {
            "run_id": run_id,
            "attempt": 1,
            "step": 3,
            "backend": "hf",
            "uri": "file:///c/3",
            "expires_at": w.clock.now + timedelta(days=1),
        },
        "finish_run": {"run_id": run_id, "attempt": 1, "status": "done", "summary": {"loss": 0.8}},
        "note_summary": {"run_id": run_id, "summary": {"note": "x"}},
        "open_account": {"account": "new", "parent": "team", "cap_usd_micro": 5},
        "set_cap": {"account": run_id, "cap_usd_micro": 200_000},
        "reserve": {
            "account": run_id,
            "reservation_id": "r2",
            "amount_usd_micro": 5,
            "basis": {"price_sheet": "p"},
            "ttl": timedelta(minutes=1),
            "attempt": 1,
        },
        "commit": {"account": run_id, "reservation_id": "r1", "actual_usd_micro": 10},
        "release": {"account": run_id, "reservation_id": "r1", "reason": "not made"},
        "charge": {"account": run_id, "charge_id": "c1", "amount_usd_micro": 5, "basis": {}, "reason": "bill"},
        "register": {
            "family": "f",
            "artifact_uri": "s3://m/2",
            "digest": "b" * 64,
            "source_run_id": run_id,
            "source_step": 3,
            "metadata": {"eval": 1.0},
        },
        "promote": {
            "family": "f",
            "version": 1,
            "expected_current": 0,
            "verdict": {"passed": True, "reason": "checked"},
        },
        "rollback": {"family": "f", "version": 1, "expected_current": 1, "reason": "r"},
    }[command]


Case = tuple[str, dict[str, Any] | Callable[[World], dict[str, Any]], type[LedgerError], str]

CASES: dict[str, Case] = {
    # Unknown ids.
    "open_run-unknown-parent": ("open_run", {"parent_account": "nobody"}, NotFound, "ACCOUNT_NOT_FOUND"),
    "start_attempt-unknown-run": ("start_attempt", {"run_id": UNKNOWN_RUN}, NotFound, "RUN_NOT_FOUND"),
    "start_attempt-malformed-run": ("start_attempt", {"run_id": "not-a-uuid"}, NotFound, "RUN_NOT_FOUND"),
    "append_steps-unknown-run": ("append_steps", {"run_id": UNKNOWN_RUN}, NotFound, "RUN_NOT_FOUND"),
    "save_checkpoint-unknown-run": ("save_checkpoint", {"run_id": UNKNOWN_RUN}, NotFound, "RUN_NOT_FOUND"),
    "finish_run-unknown-run": ("finish_run", {"run_id": UNKNOWN_RUN}, NotFound, "RUN_NOT_FOUND"),
    "note_summary-unknown-run": ("note_summary", {"run_id": UNKNOWN_RUN}, NotFound, "RUN_NOT_FOUND"),
    "open_account-unknown-parent": ("open_account", {"parent": "nobody"}, NotFound, "ACCOUNT_NOT_FOUND"),
    "set_cap-unknown-account": ("set_cap", {"account": "nobody"}, NotFound, "ACCOUNT_NOT_FOUND"),
    "reserve-unknown-account": ("reserve", {"account": "nobody"}, NotFound, "ACCOUNT_NOT_FOUND"),
    "commit-unknown-account": ("commit", {"account": "nobody"}, NotFound, "ACCOUNT_NOT_FOUND"),
    "commit-unknown-reservation": ("commit", {"reservation_id": "nope"}, NotFound, "RESERVATION_NOT_FOUND"),
    "release-unknown-reservation": ("release", {"reservation_id": "nope"}, NotFound, "RESERVATION_NOT_FOUND"),
    "release-unknown-account": ("release", {"account": "nobody"}, NotFound, "ACCOUNT_NOT_FOUND"),
    "charge-unknown-account": ("charge", {"account": "nobody"}, NotFound, "ACCOUNT_NOT_FOUND"),
    "promote-unknown-family": ("promote", {"family": "nobody"}, NotFound, "FAMILY_NOT_FOUND"),
    "promote-unknown-version": ("promote", {"version": 9}, NotFound, "VERSION_NOT_FOUND"),
    "rollback-unknown-family": ("rollback", {"family": "nobody"}, NotFound, "FAMILY_NOT_FOUND"),
    "rollback-unknown-version": ("rollback", {"version": 9}, NotFound, "VERSION_NOT_FOUND"),
    "start_attempt-unknown-checkpoint": ("start_attempt", {"resume_from_step": 2}, NotFound, "CHECKPOINT_NOT_FOUND"),
    # A checkpoint (or steps, or a finish) for an attempt never started.
    "save_checkpoint-unknown-attempt": ("save_checkpoint", {"attempt": 2}, NotFound, "ATTEMPT_NOT_FOUND"),
    "append_steps-unknown-attempt": ("append_steps", {"attempt": 5}, NotFound, "ATTEMPT_NOT_FOUND"),
    "finish_run-unknown-attempt": ("finish_run", {"attempt": 3}, NotFound, "ATTEMPT_NOT_FOUND"),
    # Money: integer micro-dollars, never negative, never a float or a bool, bounded.
    "open_run-negative-cap": ("open_run", {"cap_usd_micro": -1}, Invalid, "NEGATIVE_AMOUNT"),
    "open_run-float-cap": ("open_run", {"cap_usd_micro": 1.0}, Invalid, "INVALID_AMOUNT"),
    "open_run-bool-cap": ("open_run", {"cap_usd_micro": True}, Invalid, "INVALID_AMOUNT"),
    "open_account-negative-cap": ("open_account", {"cap_usd_micro": -5}, Invalid, "NEGATIVE_AMOUNT"),
    "open_account-float-cap": ("open_account", {"cap_usd_micro": 2.5}, Invalid, "INVALID_AMOUNT"),
    "set_cap-negative": ("set_cap", {"cap_usd_micro": -1}, Invalid, "NEGATIVE_AMOUNT"),
    "set_cap-bool": ("set_cap", {"cap_usd_micro": False}, Invalid, "INVALID_AMOUNT"),
    "reserve-negative": ("reserve", {"amount_usd_micro": -1}, Invalid, "NEGATIVE_AMOUNT"),
    "reserve-float": ("reserve", {"amount_usd_micro": 5.0}, Invalid, "INVALID_AMOUNT"),
    "reserve-bool": ("reserve", {"amount_usd_micro": True}, Invalid, "INVALID_AMOUNT"),
    "reserve-string": ("reserve", {"amount_usd_micro": "5"}, Invalid, "INVALID_AMOUNT"),
    "reserve-too-large": ("reserve", {"amount_usd_micro": USD_MICRO_MAX + 1}, Invalid, "AMOUNT_TOO_LARGE"),
    "commit-negative": ("commit", {"actual_usd_micro": -1}, Invalid, "NEGATIVE_AMOUNT"),
    "commit-float": ("commit", {"actual_usd_micro": 10.0}, Invalid, "INVALID_AMOUNT"),
    "commit-bool": ("commit", {"actual_usd_micro": True}, Invalid, "INVALID_AMOUNT"),
    "charge-negative": ("charge", {"amount_usd_micro": -7}, Invalid, "NEGATIVE_AMOUNT"),
    "charge-float": ("charge", {"amount_usd_micro": 0.5}, Invalid, "INVALID_AMOUNT"),
    "charge-bool": ("charge", {"amount_usd_micro": False}, Invalid, "INVALID_AMOUNT"),
    "append_steps-float-usd": ("append_steps", {"usd_micro": [1.0, 2.0]}, Invalid, "INVALID_FIELD"),
    "append_steps-negative-usd": ("append_steps", {"usd_micro": [1, -2]}, Invalid, "OUT_OF_RANGE"),
    "reserve-basis-float-price": (
        "reserve",
        {"basis": {"tokens": [{"token_class": "train", "tokens": 1, "usd_micro_per_million_tokens": 0.5}]}},
        Invalid,
        "INVALID_AMOUNT",
    ),
    "reserve-basis-unknown-field": ("reserve", {"basis": {"usd": 5}}, Invalid, "INVALID_BASIS"),
    "charge-basis-bare-number": ("charge", {"basis": 5}, Invalid, "INVALID_BASIS"),
    # A basis that states usage works out (trainledger.pricing) to its amount exactly: 5 here.
    "reserve-basis-not-its-amount": (
        "reserve",
        {"basis": {"tokens": [{"token_class": "train", "tokens": 6, "usd_micro_per_million_tokens": 1_000_000}]}},
        Invalid,
        "BASIS_AMOUNT_MISMATCH",
    ),
    "charge-basis-not-its-amount": (
        "charge",
        {"basis": {"gpu": {"gpu_milliseconds": 4, "usd_micro_per_gpu_hour": 3_600_000}}},
        Invalid,
        "BASIS_AMOUNT_MISMATCH",
    ),
    # Metrics must be finite.
    "append_steps-nan": ("append_steps", {"metrics": {"loss": [0.5, math.nan]}}, Invalid, "NON_FINITE_METRIC"),
    "append_steps-inf": ("append_steps", {"metrics": {"loss": [math.inf, 0.5]}}, Invalid, "NON_FINITE_METRIC"),
    "append_steps-minus-inf": ("append_steps", {"metrics": {"loss": [-math.inf, 0.5]}}, Invalid, "NON_FINITE_METRIC"),
    "append_steps-sparse-nan": (
        "append_steps",
        {"metrics": {"eval": {"values": [math.nan], "index": [1]}}},
        Invalid,
        "NON_FINITE_METRIC",
    ),
    "append_steps-nan-and-inf": (
        "append_steps",
        {"metrics": {"a": [math.inf, -math.inf]}},
        Invalid,
        "NON_FINITE_METRIC",
    ),
    "append_steps-string-metric": ("append_steps", {"metrics": {"loss": ["a", "b"]}}, Invalid, "INVALID_FIELD"),
    "append_steps-bool-metric": ("append_steps", {"metrics": {"loss": [True, 0.6]}}, Invalid, "INVALID_FIELD"),
    "append_steps-bool-step": ("append_steps", {"steps": [4, True]}, Invalid, "INVALID_FIELD"),
    "append_steps-bool-tokens": ("append_steps", {"tokens": [False, 2]}, Invalid, "INVALID_FIELD"),
    "append_steps-step-above-max": ("append_steps", {"steps": [4, STEP_MAX + 1]}, Invalid, "OUT_OF_RANGE"),
    "append_steps-usd-above-max": ("append_steps", {"usd_micro": [0, USD_MICRO_MAX + 1]}, Invalid, "OUT_OF_RANGE"),
    "finish_run-nan-summary": ("finish_run", {"summary": {"loss": math.nan}}, Invalid, "NON_FINITE_VALUE"),
    "promote-inf-verdict": (
        "promote",
        {"verdict": {"passed": True, "reason": "checked", "stats": {"a": math.inf}}},
        Invalid,
        "NON_FINITE_VALUE",
    ),
    # Steps.
    "append_steps-not-increasing": (
        "append_steps",
        {"steps": [5, 4], "tokens": None, "usd_micro": None, "metrics": None},
        Invalid,
        "STEPS_NOT_INCREASING",
    ),
    "append_steps-repeated": (
        "append_steps",
        {"steps": [4, 4], "tokens": None, "usd_micro": None, "metrics": None},
        Invalid,
        "STEPS_NOT_INCREASING",
    ),
    "append_steps-below-recorded": (
        "append_steps",
        {"steps": [0], "tokens": None, "usd_micro": None, "metrics": None},
        Invalid,
        "STEPS_NOT_INCREASING",
    ),
    "append_steps-empty": (
        "append_steps",
        {"steps": [], "tokens": None, "usd_micro": None, "metrics": None},
        Invalid,
        "EMPTY_BATCH",
    ),
    "append_steps-negative-step": (
        "append_steps",
        {"steps": [-1], "tokens": None, "usd_micro": None, "metrics": None},
        Invalid,
        "OUT_OF_RANGE",
    ),
    "append_steps-float-step": (
        "append_steps",
        {"steps": [4.0], "tokens": None, "usd_micro": None, "metrics": None},
        Invalid,
        "INVALID_FIELD",
    ),
    "append_steps-bool-attempt": ("append_steps", {"attempt": True}, Invalid, "INVALID_FIELD"),
    "append_steps-column-mismatch": ("append_steps", {"tokens": [1]}, Invalid, "COLUMN_LENGTH_MISMATCH"),
    "append_steps-other-payload": (
        "append_steps",
        {"steps": [1, 2, 3], "tokens": None, "usd_micro": None, "metrics": {"loss": [1.0, 0.9, 0.7]}},
        Conflict,
        "EXISTS_WITH_DIFFERENT_PAYLOAD",
    ),
    "start_attempt-negative-resume": ("start_attempt", {"resume_from_step": -1}, Invalid, "OUT_OF_RANGE"),
    "start_attempt-float-resume": ("start_attempt", {"resume_from_step": 3.0}, Invalid, "INVALID_FIELD"),
    "save_checkpoint-negative-step": ("save_checkpoint", {"step": -1}, Invalid, "OUT_OF_RANGE"),
    # Oversized batches.
    "append_steps-batch-too-large": (
        "append_steps",
        {"steps": list(range(4, BATCH_STEPS_MAX + 5)), "tokens": None, "usd_micro": None, "metrics": None},
        Invalid,
        "BATCH_TOO_LARGE",
    ),
    "append_steps-too-many-metrics": (
        "append_steps",
        {"metrics": {f"m{i}": [0.0, 0.0] for i in range(METRICS_PER_BATCH_MAX + 1)}},
        Invalid,
        "TOO_MANY_METRICS",
    ),
    # Oversized strings.
    "open_run-long-key": ("open_run", {"run_key": LONG_ID}, Invalid, "STRING_TOO_LONG"),
    "open_run-long-name": ("open_run", {"name": "x" * 257}, Invalid, "STRING_TOO_LONG"),
    "open_run-long-principal": ("open_run", {"principal": "x" * 257}, Invalid, "STRING_TOO_LONG"),
    "open_run-long-request-id": ("open_run", {"request_id": "x" * 257}, Invalid, "STRING_TOO_LONG"),
    "start_attempt-long-label": ("start_attempt", {"label": "x" * 257}, Invalid, "STRING_TOO_LONG"),
    "start_attempt-long-attempt-id": ("start_attempt", {"attempt_id": LONG_ID}, Invalid, "STRING_TOO_LONG"),
    "append_steps-long-metric-name": ("append_steps", {"metrics": {LONG_ID: [0.0, 0.0]}}, Invalid, "STRING_TOO_LONG"),
    "save_checkpoint-long-uri": ("save_checkpoint", {"uri": LONG_TEXT}, Invalid, "STRING_TOO_LONG"),
    "open_account-long-name": ("open_account", {"account": LONG_ID}, Invalid, "STRING_TOO_LONG"),
    "reserve-long-id": ("reserve", {"reservation_id": LONG_ID}, Invalid, "STRING_TOO_LONG"),
    "release-long-reason": ("release", {"reason": LONG_TEXT}, Invalid, "STRING_TOO_LONG"),
    "charge-long-reason": ("charge", {"reason": LONG_TEXT}, Invalid, "STRING_TOO_LONG"),
    "charge-long-id": ("charge", {"charge_id": LONG_ID}, Invalid, "STRING_TOO_LONG"),
    "register-long-uri": ("register", {"artifact_uri": LONG_TEXT}, Invalid, "STRING_TOO_LONG"),
    "rollback-long-reason": ("rollback", {"reason": LONG_TEXT}, Invalid, "STRING_TOO_LONG"),
    "open_run-long-spec-string": ("open_run", {"spec": {"a": LONG_TEXT}}, Invalid, "STRING_TOO_LONG"),
    "note_summary-long-string": ("note_summary", {"summary": {"a": [LONG_TEXT]}}, Invalid, "STRING_TOO_LONG"),
    # Oversized and malformed maps.
    "open_run-big-spec": ("open_run", {"spec": BIG_MAP}, Invalid, "MAP_TOO_LARGE"),
    "open_run-deep-spec": ("open_run", {"spec": DEEP}, Invalid, "DOCUMENT_TOO_DEEP"),
    "open_run-spec-not-a-map": ("open_run", {"spec": [1, 2]}, Invalid, "INVALID_FIELD"),
    "finish_run-big-summary": ("finish_run", {"summary": BIG_MAP}, Invalid, "MAP_TOO_LARGE"),
    "note_summary-big-list": (
        "note_summary",
        {"summary": {"a": list(range(MAP_ENTRIES_MAX + 1))}},
        Invalid,
        "MAP_TOO_LARGE",
    ),
    "note_summary-bad-key": ("note_summary", {"summary": {"": 1}}, Invalid, "INVALID_FIELD"),
    "register-big-metadata": ("register", {"metadata": BIG_MAP}, Invalid, "MAP_TOO_LARGE"),
    "promote-big-verdict": (
        "promote",
        {"verdict": {"passed": True, "reason": "checked", "stats": BIG_MAP}},
        Invalid,
        "MAP_TOO_LARGE",
    ),
    "reserve-big-basis": (
        "reserve",
        {"basis": {"tokens": [{"token_class": "t", "tokens": 1}] * 257}},
        Invalid,
        "INVALID_BASIS",
    ),
    "note_summary-object-value": ("note_summary", {"summary": {"a": object()}}, Invalid, "INVALID_FIELD"),
    # Other malformed fields.
    "open_run-empty-key": ("open_run", {"run_key": ""}, Invalid, "MISSING_FIELD"),
    "open_run-int-key": ("open_run", {"run_key": 5}, Invalid, "INVALID_FIELD"),
    "open_run-control-chars": ("open_run", {"run_key": "a\nb"}, Invalid, "INVALID_FIELD"),
    # Identifiers: one normal form, letters, digits and . _ : @ / + - =, no lookalikes.
    "open_run-nfd-key": ("open_run", {"run_key": "e\u0301"}, Invalid, "NOT_NORMALIZED"),
    "open_run-zero-width-key": ("open_run", {"run_key": "k\u200b"}, Invalid, "INVALID_FIELD"),
    "open_account-mixed-script": ("open_account", {"account": "te\u0430m"}, Invalid, "CONFUSABLE_IDENTIFIER"),
    "open_account-dot-dot": ("open_account", {"account": "../team"}, Invalid, "INVALID_FIELD"),
    "open_account-bidi": ("open_account", {"account": "new\u202e"}, Invalid, "INVALID_FIELD"),
    "reserve-c1-id": ("reserve", {"reservation_id": "r\x9b2"}, Invalid, "INVALID_FIELD"),
    "charge-space-id": ("charge", {"charge_id": "c 1"}, Invalid, "INVALID_FIELD"),
    "register-fullwidth-family": ("register", {"family": "\uff46"}, Invalid, "CONFUSABLE_IDENTIFIER"),
    "save_checkpoint-backend-escape": ("save_checkpoint", {"backend": "hf\x1b[0m"}, Invalid, "INVALID_FIELD"),
    "start_attempt-nfd-attempt-id": ("start_attempt", {"attempt_id": "a\u0308"}, Invalid, "NOT_NORMALIZED"),
    # Free text: no controls, line separators or bidi overrides.
    "charge-newline-reason": ("charge", {"reason": "bill\nc2 charge"}, Invalid, "INVALID_TEXT"),
    "release-escape-reason": ("release", {"reason": "\x1b[2J"}, Invalid, "INVALID_TEXT"),
    "rollback-bidi-reason": ("rollback", {"reason": "r\u202e"}, Invalid, "INVALID_TEXT"),
    "start_attempt-newline-label": ("start_attempt", {"label": "host\n1"}, Invalid, "INVALID_TEXT"),
    "open_run-c1-name": ("open_run", {"name": "n\x85"}, Invalid, "INVALID_TEXT"),
    "save_checkpoint-newline-uri": ("save_checkpoint", {"uri": "file:///c/3\n"}, Invalid, "INVALID_TEXT"),
    "register-bidi-uri": ("register", {"artifact_uri": "s3://m/\u2066"}, Invalid, "INVALID_TEXT"),
    "promote-newline-verdict-reason": (
        "promote",
        {"verdict": {"passed": True, "reason": "ok\nforged"}},
        Invalid,
        "INVALID_TEXT",
    ),
    "append_steps-newline-metric-name": ("append_steps", {"metrics": {"loss\n": [0.7, 0.6]}}, Invalid, "INVALID_TEXT"),
    # What accumulates is bounded in bytes, so every accepted write can be read back.
    "note_summary-document-too-large": (
        "note_summary",
        {"summary": {f"k{i}": "x" * 4_000 for i in range(17)}},
        Invalid,
        "DOCUMENT_TOO_LARGE",
    ),
    "promote-verdict-too-large": (
        "promote",
        {"verdict": {"passed": True, "reason": "checked", "stats": {"a": ["x" * 4_000] * 20}}},
        Invalid,
        "DOCUMENT_TOO_LARGE",
    ),
    "register-metadata-too-large": ("register", {"metadata": {"a": ["x" * 4_000] * 20}}, Invalid, "DOCUMENT_TOO_LARGE"),
    "append_steps-batch-bytes": (
        "append_steps",
        {
            "steps": list(range(4, 10_004)),
            "tokens": None,
            "usd_micro": None,
            "metrics": {f"m{i}": [0.5] * 10_000 for i in range(40)},
        },
        Invalid,
        "BATCH_TOO_LARGE",
    ),
    "save_checkpoint-empty-uri": ("save_checkpoint", {"uri": ""}, Invalid, "MISSING_FIELD"),
    "save_checkpoint-fidelity": ("save_checkpoint", {"fidelity": "half"}, Invalid, "INVALID_FIELD"),
    "save_checkpoint-naive-expiry": ("save_checkpoint", {"expires_at": datetime(2030, 1, 1)}, Invalid, "INVALID_FIELD"),
    "finish_run-status": ("finish_run", {"status": "crashed"}, Invalid, "INVALID_STATUS"),
    "finish_run-error-not-text": ("finish_run", {"error": 5}, Invalid, "INVALID_FIELD"),
    "reserve-negative-ttl": ("reserve", {"ttl": timedelta(seconds=-1)}, Invalid, "INVALID_TTL"),
    "reserve-long-ttl": ("reserve", {"ttl": timedelta(days=8)}, Invalid, "INVALID_TTL"),
    "reserve-empty-id": ("reserve", {"reservation_id": ""}, Invalid, "MISSING_FIELD"),
    "reserve-negative-attempt": ("reserve", {"attempt": -1}, Invalid, "OUT_OF_RANGE"),
    "register-bad-digest": ("register", {"digest": "ABC"}, Invalid, "INVALID_DIGEST"),
    "register-empty-uri": ("register", {"artifact_uri": ""}, Invalid, "MISSING_FIELD"),
    "register-negative-step": ("register", {"source_step": -1}, Invalid, "OUT_OF_RANGE"),
    "promote-version-zero": ("promote", {"version": 0}, Invalid, "OUT_OF_RANGE"),
    "promote-bool-expected": ("promote", {"expected_current": True}, Invalid, "INVALID_FIELD"),
    # Refusals by state are refusals too: nothing recorded.
    "finish_run-superseded": (
        "finish_run",
        lambda w: {"attempt": 1} if w.ledger.start_attempt(run_id=w.run_id) else {},
        Refused,
        "ATTEMPT_SUPERSEDED",
    ),
    "set_cap-below-spend": ("set_cap", {"cap_usd_micro": 5}, Refused, "CAP_BELOW_SPEND"),
    "open_account-run-account": (
        "open_account",
        lambda w: {"account": w.run_id, "parent": "", "cap_usd_micro": 100_000},
        Invalid,
        "ACCOUNT_NAME_RESERVED",
    ),
    "open_account-other-cap": (
        "open_account",
        {"account": "team", "parent": "", "cap_usd_micro": 5},
        Conflict,
        "EXISTS_WITH_DIFFERENT_PAYLOAD",
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_input_is_refused_and_nothing_is_recorded(world: World, case: str) -> None:
    command, change, error, reason = CASES[case]
    ledger = world.ledger
    arguments = valid(command, world)
    arguments.update(change(world) if callable(change) else change)
    arguments = {key: value for key, value in arguments.items() if value is not None or key in ("cap_usd_micro",)}
    head = ledger.head()
    account = ledger.account_now(world.run_id)
    with pytest.raises(error) as caught:
        getattr(ledger, command)(**arguments)
    assert isinstance(caught.value, LedgerError)
    assert caught.value.reason == reason, caught.value.message
    assert ledger.head() == head
    assert ledger.account_now(world.run_id) == account


@pytest.mark.parametrize(
    "command",
    [
        "open_run",
        "start_attempt",
        "append_steps",
        "save_checkpoint",
        "finish_run",
        "note_summary",
        "open_account",
        "set_cap",
        "reserve",
        "commit",
        "release",
        "charge",
        "register",
        "rollback",
    ],
)
def test_the_valid_arguments_of_the_table_are_accepted(world: World, command: str) -> None:
    """The cases above differ from these arguments in one field only, so each refusal is about
    that field."""
    if command == "rollback":
        world.ledger.register(family="f", artifact_uri="s3://m/2", digest="b" * 64)
        world.ledger.promote(family="f", version=2, expected_current=1, verdict={"passed": True, "reason": "checked"})
        arguments = {**valid(command, world), "expected_current": 2}
    else:
        arguments = valid(command, world)
    head = world.ledger.head()
    assert getattr(world.ledger, command)(**arguments).position > head


def test_huge_finite_metrics_are_accepted(world: World) -> None:
    """A sum that overflows to inf is not a non-finite metric: each value is finite."""
    receipt = world.ledger.append_steps(run_id=world.run_id, attempt=1, steps=[4, 5], metrics={"x": [1e308, 1e308]})
    assert not receipt.duplicate


def test_integer_metric_values_are_kept_as_floats_and_counts_at_their_maximum_pass(world: World) -> None:
    receipt = world.ledger.append_steps(
        run_id=world.run_id,
        attempt=1,
        steps=[4, STEP_MAX],
        tokens=[0, STEP_MAX],
        usd_micro=[USD_MICRO_MAX, 0],
        metrics={"loss": [1, 0.5], "sparse": {"values": [2], "index": [1]}},
    )
    page = world.ledger.series(world.run_id, from_step=4, min_position=receipt.position)
    assert page.steps == (4, STEP_MAX) and page.tokens == (0, STEP_MAX) and page.usd_micro == (USD_MICRO_MAX, 0)
    loss, sparse = page.metric("loss"), page.metric("sparse")
    assert loss is not None and loss.values == (1.0, 0.5) and type(loss.values[0]) is float
    assert sparse is not None and (sparse.values, sparse.index) == ((2.0,), (1,))
