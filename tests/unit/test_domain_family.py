"""Registry families, as unit tests: given events, when a command, then new events or an error."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ledger.domain.base import Audit, ledger_id
from ledger.domain.errors import Conflict, Contended, NotFound, Refused
from ledger.domain.registry import Family

NOW = datetime(2025, 1, 1, tzinfo=UTC)
PASSED = {"passed": True, "reason": "eval ok", "stats": {"accuracy": 0.9}}
FAILED = {"passed": False, "reason": "regressed", "stats": {"accuracy": 0.1}}


def audit() -> Audit:
    return Audit("tester", "request-1", NOW)


def fields(n: int, **change: Any) -> dict[str, Any]:
    return {
        "artifact_uri": f"s3://models/{n}",
        "digest": f"{n:x}" * 64 if n < 16 else "",
        "source_run_id": "run",
        "source_step": 100 * n,
        "metadata": {"n": n},
        **change,
    }


def family(versions: int = 0, *, promote: tuple[int, ...] = ()) -> Family:
    """Given: a family with `versions` registered versions, then `promote`d in that order."""
    aggregate = Family._create(Family.Created, id=ledger_id("family", "llama"), name="llama", **audit().fields())
    for n in range(1, versions + 1):
        aggregate.register(audit(), version_fields=fields(n))
    for version in promote:
        aggregate.promote(audit(), version=version, expected_current=aggregate.current, verdict=PASSED)
    aggregate.collect_events()
    return aggregate


def refused(error: type[Exception], reason: str, aggregate: Family, act: Any) -> None:
    version = aggregate.version
    with pytest.raises(error) as caught:
        act()
    assert caught.value.reason == reason
    assert aggregate.collect_events() == []
    assert aggregate.version == version


def recorded_refusal(error: type[Exception], reason: str, aggregate: Family, act: Any) -> Family.PromotionRefused:
    """The refusal is raised and recorded: one PromotionRefused, the current version unchanged."""
    current = aggregate.current
    with pytest.raises(error) as caught:
        act()
    assert caught.value.reason == reason
    [event] = aggregate.collect_events()
    assert isinstance(event, Family.PromotionRefused) and event.refusal == reason
    assert aggregate.current == current
    return event


class TestRegister:
    def test_register_never_promotes(self) -> None:
        aggregate = family()
        assert aggregate.register(audit(), version_fields=fields(1)) == (1, None)
        assert aggregate.register(audit(), version_fields=fields(2)) == (2, None)
        registered = aggregate.collect_events()
        assert [type(e) for e in registered] == [Family.VersionRegistered] * 2
        assert [(e.version, e.artifact_uri, e.source_step, e.metadata) for e in registered] == [
            (1, "s3://models/1", 100, {"n": 1}),
            (2, "s3://models/2", 200, {"n": 2}),
        ]
        assert aggregate.current == 0
        assert aggregate.promotions == []

    def test_register_retry_is_a_no_op_and_the_same_digest_otherwise_is_refused(self) -> None:
        aggregate = family(2)
        assert aggregate.register(audit(), version_fields=fields(1)) == (1, 2)
        assert aggregate.collect_events() == []
        refused(
            Conflict,
            "EXISTS_WITH_DIFFERENT_PAYLOAD",
            aggregate,
            lambda: aggregate.register(audit(), version_fields=fields(1, artifact_uri="s3://elsewhere")),
        )


class TestPromote:
    def test_promote_is_compare_and_set_through_a_passing_gate(self) -> None:
        aggregate = family(2)
        assert aggregate.promote(audit(), version=1, expected_current=0, verdict=PASSED) is None
        [event] = aggregate.collect_events()
        assert isinstance(event, Family.VersionPromoted)
        assert (event.version, event.previous, event.kind, event.verdict, event.reason) == (1, 0, "promote", PASSED, "")
        assert aggregate.current == 1

    def test_promote_retry_is_a_no_op(self) -> None:
        aggregate = family(2, promote=(1,))
        first = aggregate.version
        assert aggregate.promote(audit(), version=1, expected_current=0, verdict=PASSED) == first
        assert aggregate.collect_events() == []

    def test_a_gate_that_did_not_pass_is_refused(self) -> None:
        aggregate = family(2)
        event = recorded_refusal(
            Refused,
            "GATE_NOT_PASSED",
            aggregate,
            lambda: aggregate.promote(audit(), version=1, expected_current=0, verdict=FAILED),
        )
        assert (event.version, event.expected_current, event.current, event.verdict) == (1, 0, 0, FAILED)
        recorded_refusal(
            Refused,
            "GATE_NOT_PASSED",
            aggregate,
            lambda: aggregate.promote(audit(), version=1, expected_current=0, verdict={}),
        )

    def test_a_moved_current_version_aborts(self) -> None:
        aggregate = family(3, promote=(1,))
        recorded_refusal(
            Contended,
            "CURRENT_VERSION_MOVED",
            aggregate,
            lambda: aggregate.promote(audit(), version=3, expected_current=0, verdict=PASSED),
        )
        event = recorded_refusal(
            Contended,
            "CURRENT_VERSION_MOVED",
            aggregate,
            lambda: aggregate.promote(audit(), version=3, expected_current=2, verdict=PASSED),
        )
        assert (event.version, event.expected_current, event.current) == (3, 2, 1)
        assert aggregate.current == 1

    def test_unknown_version_and_already_current(self) -> None:
        aggregate = family(2, promote=(1,))
        refused(
            NotFound,
            "VERSION_NOT_FOUND",
            aggregate,
            lambda: aggregate.promote(audit(), version=3, expected_current=1, verdict=PASSED),
        )
        refused(
            Refused,
            "ALREADY_CURRENT",
            aggregate,
            lambda: aggregate.promote(audit(), version=1, expected_current=1, verdict=PASSED),
        )


class TestRollback:
    def test_rollback_promotes_an_earlier_version_with_a_reason_and_history_is_kept(self) -> None:
        aggregate = family(3, promote=(1, 3))
        assert aggregate.rollback(audit(), version=1, expected_current=3, reason="v3 hallucinates") is None
        [event] = aggregate.collect_events()
        assert (event.version, event.previous, event.kind, event.verdict, event.reason) == (
            1,
            3,
            "rollback",
            None,
            "v3 hallucinates",
        )
        assert aggregate.current == 1
        assert [(p["version"], p["previous"], p["kind"]) for p in aggregate.promotions] == [
            (1, 0, "promote"),
            (3, 1, "promote"),
            (1, 3, "rollback"),
        ]
        assert len(aggregate.versions) == 3
        # A retry answers the rollback's version.
        assert aggregate.rollback(audit(), version=1, expected_current=3, reason="v3 hallucinates") == aggregate.version

    def test_rollback_needs_an_earlier_once_promoted_version_and_the_current_one_expected(self) -> None:
        aggregate = family(3, promote=(1, 3))
        refused(
            Refused,
            "NEVER_PROMOTED",
            aggregate,
            lambda: aggregate.rollback(audit(), version=2, expected_current=3, reason="r"),
        )
        refused(
            Refused,
            "ROLLBACK_NOT_EARLIER",
            aggregate,
            lambda: aggregate.rollback(audit(), version=3, expected_current=3, reason="r"),
        )
        refused(
            Contended,
            "CURRENT_VERSION_MOVED",
            aggregate,
            lambda: aggregate.rollback(audit(), version=1, expected_current=2, reason="r"),
        )
