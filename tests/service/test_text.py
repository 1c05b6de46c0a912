"""Text that could spoof, over the wire and in the CLI's tables: lookalike identifiers and text
with control or bidi characters are refused with INVALID_ARGUMENT and a stable reason, and a
table escapes whatever is not printable, so even data written before these rules cannot forge a
row."""

from __future__ import annotations

import unicodedata

import grpc
import pytest

from services.render.tables import fields, table
from tests.service.support import Stubs, error_info, open_run
from trainledger.v1 import spend_pb2


@pytest.mark.parametrize(
    "account,reason",
    [
        ("te\u0430m-wire", "CONFUSABLE_IDENTIFIER"),
        (unicodedata.normalize("NFD", "équipe-wire"), "NOT_NORMALIZED"),
        ("team\u200b-wire", "INVALID_FIELD"),
        ("../team-wire", "INVALID_FIELD"),
    ],
)
def test_lookalike_account_names_are_refused(stubs: Stubs, account: str, reason: str) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account=account), timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    info = error_info(caught.value)
    assert info.reason == reason and info.metadata["field"] == "account"


def test_a_charge_reason_with_a_line_break_is_refused(stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    with pytest.raises(grpc.RpcError) as caught:
        stubs.spend.Charge(
            spend_pb2.ChargeRequest(
                account=run_id, charge_id="c1", amount_usd_micro=5, reason="bill\nc2  charge  charged  $0.000000"
            ),
            timeout=10,
        )
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(caught.value).reason == "INVALID_TEXT"


def test_tables_escape_what_is_not_printable() -> None:
    rows = [
        ("c1", "bill\nc2  charge  charged  $0.000000"),
        ("c3", "\x1b[2J\x9b31m\u202etxt.exe\u2028x"),
        ("c4", "back\\slash, ünïcødé ✓"),
    ]
    text = table(["id", "reason"], rows)
    lines = text.splitlines()
    assert len(lines) == 2 + len(rows)
    assert "bill\\nc2  charge" in lines[2]
    assert "\\x1b[2J\\x9b31m\\u202etxt.exe\\u2028x" in lines[3]
    assert "back\\\\slash, ünïcødé ✓" in lines[4]
    assert all(character.isprintable() for character in text.replace("\n", ""))
    shown = fields([("reason", "a\rb"), ("name", "ok")])
    assert shown.splitlines() == ["reason: a\\rb", "name:   ok"]
