"""Gate rules as unit tests: the grammar, its limits and positions, and evaluation on scores."""

from __future__ import annotations

import pytest

from ledger.domain.errors import Invalid
from ledger.domain.gates import Comparison, Score, evaluate, parse_rule


def test_a_rule_is_comparisons_joined_by_and() -> None:
    assert parse_rule("eval_loss <= 0.5 and accuracy>=8e-1 and  rewards/mean > -2 and x == 3") == [
        Comparison("eval_loss", "<=", 0.5),
        Comparison("accuracy", ">=", 0.8),
        Comparison("rewards/mean", ">", -2.0),
        Comparison("x", "==", 3.0),
    ]


@pytest.mark.parametrize(
    "rule,position",
    [
        ("   ", 0),
        ("0.5 >= eval_loss", 0),
        ("eval_loss", 9),
        ("eval_loss < 1 and", 17),
        ("eval_loss < 1 andaccuracy > 1", 14),
        ("eval_loss < 1.", 12),
        ("eval_loss < 1 AND accuracy > 1", 14),
        ("eval_loss != 1", 10),
        ("eval_loss < 1e400", 12),
        ("eval_loss < １", 12),
        ("é < 1", 0),
    ],
)
def test_a_rule_that_does_not_parse_names_where(rule: str, position: int) -> None:
    with pytest.raises(Invalid) as caught:
        parse_rule(rule)
    assert caught.value.reason == "INVALID_GATE_RULE" and caught.value.metadata["position"] == str(position)


def test_a_rule_is_bounded() -> None:
    parse_rule(" and ".join(["a < 1"] * 16))
    with pytest.raises(Invalid):
        parse_rule(" and ".join(["a < 1"] * 17))
    with pytest.raises(Invalid) as caught:
        parse_rule("a < " + "1" * 1_021)
    assert caught.value.metadata["position"] == "1024"
    with pytest.raises(Invalid):
        parse_rule("a" * 129 + " < 1")


def test_evaluation_records_each_score_once_with_where_it_came_from() -> None:
    scores = {"eval_loss": Score(0.4, "checkpoint", "run-1", 30, 17)}
    verdict = evaluate("eval_loss <= 0.5 and eval_loss > 0.1", scores)
    assert (verdict["passed"], verdict["mode"], verdict["stats"]) == (True, "evaluated", {"eval_loss": 0.4})
    assert verdict["evidence"] == [
        {"name": "eval_loss", "value": 0.4, "source": "checkpoint", "run_id": "run-1", "step": 30, "position": 17}
    ]
    failed = evaluate("eval_loss < 0.3 and accuracy > 0.9", scores)
    assert not failed["passed"]
    assert failed["reason"] == "eval_loss < 0.3 (it is 0.4); accuracy > 0.9 (no accuracy recorded)"
    assert failed["evidence"][1] == {
        "name": "accuracy",
        "value": None,
        "source": "",
        "run_id": "",
        "step": 0,
        "position": 0,
    }
