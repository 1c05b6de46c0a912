"""The reason catalogue is one: the server's (ledger.domain.reasons.Reason) and the client's own
list (clients.reasons.REASONS) hold the same reasons, each reason says what it means, and no
reason is spelled as a string literal in ledger/ or services/ outside the catalogue, so a new
reason cannot be forgotten on either side of the wire."""

from __future__ import annotations

import ast
import pathlib

import grpc
import pytest

from clients import errors as client_errors
from clients import reasons as client_reasons
from ledger.domain.reasons import Reason

ROOT = pathlib.Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "ledger" / "domain" / "reasons.py"


def test_the_client_knows_every_reason_the_server_can_send_and_no_other() -> None:
    server = {reason.value for reason in Reason}
    assert client_reasons.REASONS - server == set(), "the client knows reasons the server never sends"
    assert server - client_reasons.REASONS == set(), "reasons missing from clients/reasons.py REASONS"


def test_every_reason_is_its_own_name_and_says_what_it_means() -> None:
    assert len(Reason) >= 70
    for reason in Reason:
        assert reason == reason.name and str(reason) == reason.name and reason.value == reason.name
        assert reason.meaning.strip() and reason.meaning.endswith("."), reason
    assert Reason["RUN_FINISHED"] is Reason.RUN_FINISHED and Reason("RUN_FINISHED") is Reason.RUN_FINISHED
    assert f"{Reason.SPEND_CAP_EXCEEDED}" == "SPEND_CAP_EXCEEDED"


def test_meanings_are_distinct() -> None:
    meanings = [reason.meaning for reason in Reason]
    assert len(set(meanings)) == len(meanings)


# The reasons the client gives a class of its own, that class, and the status code the server
# sends them with: written out here, not read from clients/errors.py.
BRANCHED = [
    ("SPEND_CAP_EXCEEDED", client_errors.SpendCapExceeded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    ("ATTEMPT_SUPERSEDED", client_errors.AttemptSuperseded, grpc.StatusCode.FAILED_PRECONDITION),
    ("RUN_FINISHED", client_errors.RunFinished, grpc.StatusCode.FAILED_PRECONDITION),
    ("GATE_NOT_PASSED", client_errors.GateNotPassed, grpc.StatusCode.FAILED_PRECONDITION),
    ("CURRENT_VERSION_MOVED", client_errors.CurrentVersionMoved, grpc.StatusCode.ABORTED),
    ("WATCHER_TOO_SLOW", client_errors.WatcherTooSlow, grpc.StatusCode.RESOURCE_EXHAUSTED),
    ("RUN_RETRACTED", client_errors.RunRetracted, grpc.StatusCode.FAILED_PRECONDITION),
    ("CHECKPOINT_PROTECTED", client_errors.CheckpointProtected, grpc.StatusCode.FAILED_PRECONDITION),
]
STATUS_CLASS = {
    grpc.StatusCode.RESOURCE_EXHAUSTED: client_errors.ResourceExhausted,
    grpc.StatusCode.FAILED_PRECONDITION: client_errors.FailedPrecondition,
    grpc.StatusCode.ABORTED: client_errors.Aborted,
}


@pytest.mark.parametrize("reason,cls,code", BRANCHED, ids=lambda v: v if isinstance(v, str) else None)
def test_the_client_classes_of_reasons_are_in_the_catalogue_under_their_status(reason, cls, code) -> None:
    assert reason in {member.value for member in Reason}
    assert client_errors.BY_REASON[reason] is cls
    assert issubclass(cls, STATUS_CLASS[code])


def test_the_client_branches_on_no_other_reason() -> None:
    assert set(client_errors.BY_REASON) == {reason for reason, _, _ in BRANCHED}


def _sources() -> list[pathlib.Path]:
    files = sorted([*(ROOT / "ledger").rglob("*.py"), *(ROOT / "services").rglob("*.py")])
    return [path for path in files if path != CATALOGUE]


def _spelled_reasons(tree: ast.AST) -> list[tuple[int, str]]:
    """String literals that are catalogue names, and reasons built with f-strings."""
    names = {reason.value for reason in Reason}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.keyword) and node.arg == "reason" and isinstance(node.value, ast.JoinedStr):
            found.append((node.value.lineno, ast.unparse(node.value)))
    return found


def test_the_scan_finds_spelled_reasons() -> None:
    tree = ast.parse(
        'raise Refused("no", reason="RUN_FINISHED")\n'
        'rich_status(code, "m", "INTERNAL")\n'
        'raise Refused("no", reason=f"RESERVATION_{state}")\n'
        'raise Refused("no", reason=Reason.RUN_FINISHED)\n'
        'release(reason="")\n'
    )
    assert sorted(line for line, _ in _spelled_reasons(tree)) == [1, 2, 3]


def test_no_reason_is_spelled_outside_the_catalogue() -> None:
    spelled = [
        f"{path.relative_to(ROOT)}:{line}: {text}"
        for path in _sources()
        for line, text in _spelled_reasons(ast.parse(path.read_text()))
    ]
    assert spelled == [], "use ledger.domain.reasons.Reason members:\n" + "\n".join(spelled)
