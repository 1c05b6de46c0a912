"""Identifiers have one normal form and a documented character set, and free text cannot carry
control or bidi characters: names that look alike are refused instead of becoming distinct
accounts or families, and text cannot forge lines in a report."""

from __future__ import annotations

import unicodedata
import uuid

import pytest

from ledger import Invalid, Ledger
from ledger.domain.limits import check_id, check_text
from tests.ledger.conftest import DIGEST_A

# Identifiers the clients, integrations and tests use: each must stay valid.
VALID_IDS = [
    "team",
    "k",
    "run-1",
    "a1",
    "r549",
    "c-bill",
    "hold-0",
    "sha256:" + "0" * 64,
    str(uuid.uuid4()),
    str(uuid.uuid4()).upper(),
    "meta-llama/Llama-3.1-8B",
    "modal-volume",
    "tinker",
    "hf",
    "s3",
    "ta-01J9ZQ",
    "user@example.com",
    "a.b_c:d@e/f+g-h=i",
    "команда",
    "μοντέλο",
    "モデル-v2",
    "मॉडल",
    "v1.0..2",
    "x" * 256,
]

REFUSED_IDS = {
    "newline": ("a\nb", "INVALID_FIELD"),
    "escape": ("team\x1b[2J", "INVALID_FIELD"),
    "tab": ("a\tb", "INVALID_FIELD"),
    "delete": ("a\x7fb", "INVALID_FIELD"),
    "c1-control": ("team\x85", "INVALID_FIELD"),
    "c1-csi": ("team\x9b31m", "INVALID_FIELD"),
    "space": ("my team", "INVALID_FIELD"),
    "no-break-space": ("my\u00a0team", "INVALID_FIELD"),
    "zero-width-space": ("te\u200bam", "INVALID_FIELD"),
    "zero-width-joiner": ("te\u200dam", "INVALID_FIELD"),
    "byte-order-mark": ("\ufeffteam", "INVALID_FIELD"),
    "bidi-override": ("team\u202eexe.", "INVALID_FIELD"),
    "bidi-isolate": ("team\u2066x\u2069", "INVALID_FIELD"),
    "right-to-left-mark": ("team\u200f", "INVALID_FIELD"),
    "dot-dot": ("../team", "INVALID_FIELD"),
    "inner-dot-dot": ("a/../b", "INVALID_FIELD"),
    "trailing-dot-dot": ("a/..", "INVALID_FIELD"),
    "dot-segment": ("a/./b", "INVALID_FIELD"),
    "symbol": ("team$", "INVALID_FIELD"),
    "leading-mark": ("\u0301team", "INVALID_FIELD"),
    "nfd": (unicodedata.normalize("NFD", "équipe"), "NOT_NORMALIZED"),
    "nfd-hangul": (unicodedata.normalize("NFD", "팀"), "NOT_NORMALIZED"),
    "latin-with-cyrillic-a": ("te\u0430m", "CONFUSABLE_IDENTIFIER"),
    "latin-with-greek-omicron": ("pr\u03bfject", "CONFUSABLE_IDENTIFIER"),
    "cyrillic-lookalike-word": ("\u0440\u0430\u0443\u0440\u0430\u0441", "CONFUSABLE_IDENTIFIER"),
    "fullwidth": ("\uff54\uff45\uff41\uff4d", "CONFUSABLE_IDENTIFIER"),
    "mathematical-bold": ("\U0001d42d\U0001d41e\U0001d41a\U0001d426", "CONFUSABLE_IDENTIFIER"),
    "ligature": ("\ufb01nance", "CONFUSABLE_IDENTIFIER"),
}

VALID_TEXT = [
    "",
    "not made",
    "bill 2025-06: 3 × A100, ünïcødé ✓",
    "ошибка сети",
    "שגיאה",
    "s3://b/k?x=1&y=2",
    "RuntimeError: CUDA out of memory",
    "x" * 4_096,
]

REFUSED_TEXT = {
    "newline": "done\n2025-01-01  charge  $0.00",
    "carriage-return": "ok\rforged",
    "tab": "a\tb",
    "escape": "\x1b[2Jcleared",
    "nul": "a\x00b",
    "delete": "a\x7f",
    "c1-next-line": "a\x85forged",
    "c1-csi": "\x9b2J",
    "bidi-override": "invoice\u202etxt.exe",
    "bidi-embedding": "\u202bembedded",
    "bidi-isolate": "\u2067isolated\u2069",
    "line-separator": "a\u2028b",
}


@pytest.mark.parametrize("value", VALID_IDS)
def test_identifiers_in_use_stay_valid(value: str) -> None:
    assert check_id(value, "account") == value


@pytest.mark.parametrize("case", list(REFUSED_IDS), ids=list(REFUSED_IDS))
def test_identifiers_that_spoof_are_refused(case: str) -> None:
    value, reason = REFUSED_IDS[case]
    with pytest.raises(Invalid) as caught:
        check_id(value, "account")
    assert caught.value.reason == reason, caught.value.message
    assert caught.value.metadata["field"] == "account"


@pytest.mark.parametrize("value", VALID_TEXT)
def test_free_text_in_use_stays_valid(value: str) -> None:
    assert check_text(value, "reason") == value


@pytest.mark.parametrize("case", list(REFUSED_TEXT), ids=list(REFUSED_TEXT))
def test_free_text_with_controls_or_bidi_overrides_is_refused(case: str) -> None:
    with pytest.raises(Invalid) as caught:
        check_text(REFUSED_TEXT[case], "reason")
    assert caught.value.reason == "INVALID_TEXT", caught.value.message
    assert caught.value.metadata["field"] == "reason"


def test_lookalike_accounts_and_families_are_not_created(ledger: Ledger) -> None:
    ledger.open_account(account="team", cap_usd_micro=100)
    ledger.register(family="llama", artifact_uri="s3://m/1", digest=DIGEST_A)
    head = ledger.head()
    for account, reason in [
        ("te\u0430m", "CONFUSABLE_IDENTIFIER"),
        (unicodedata.normalize("NFD", "tëam"), "NOT_NORMALIZED"),
        ("te\u200bam", "INVALID_FIELD"),
        ("../team", "INVALID_FIELD"),
    ]:
        with pytest.raises(Invalid) as caught:
            ledger.open_account(account=account, cap_usd_micro=100)
        assert caught.value.reason == reason
    for family in ["ll\u0430ma", "llama\u202e", "../llama", "llama\x85"]:
        with pytest.raises(Invalid):
            ledger.register(family=family, artifact_uri="s3://m/1", digest=DIGEST_A)
    assert ledger.head() == head
    assert [f.family for f in ledger.families(min_position=head)] == ["llama"]


def test_a_charge_reason_cannot_forge_an_audit_row(ledger: Ledger) -> None:
    run_id = ledger.open_run(run_key="k").run_id
    head = ledger.head()
    with pytest.raises(Invalid) as caught:
        ledger.charge(
            account=run_id, charge_id="c1", amount_usd_micro=5, reason="bill\nc2        charge   charged  $0.000000"
        )
    assert caught.value.reason == "INVALID_TEXT" and ledger.head() == head
    with pytest.raises(Invalid):
        ledger.start_attempt(run_id=run_id, label="host\u202e1")
    with pytest.raises(Invalid):
        ledger.save_checkpoint(run_id=run_id, attempt=1, step=1, backend="hf", uri="file:///a\x1b]8;;")
    assert ledger.head() == head


def test_names_made_before_the_identifier_rules_stay_reachable(ledger: Ledger) -> None:
    """An account, a family and a run named before these rules (a space, say) were accepted then:
    they stay readable and usable; only new names are held to the rules."""
    from ledger.domain.accounts import Account
    from ledger.domain.base import Audit, ledger_id
    from ledger.domain.registry import Family

    audit = Audit("earlier-version", "", ledger.clock())
    ledger.save(
        Account._create(
            Account.Opened, id=ledger_id("account", "team a"), name="team a", parent="", cap=1_000, **audit.fields()
        ),
        Family._create(Family.Created, id=ledger_id("family", "my model"), name="my model", **audit.fields()),
    )
    with pytest.raises(Invalid):
        ledger.open_account(account="team b")
    assert ledger.open_account(account="team a", cap_usd_micro=1_000).duplicate
    held = ledger.reserve(account="team a", reservation_id="r1", amount_usd_micro=400)
    ledger.commit(account="team a", reservation_id="r1", actual_usd_micro=300)
    assert ledger.account("team a", min_position=held.position + 1).committed_usd_micro == 300
    run = ledger.open_run(run_key="run-under-team-a", parent_account="team a")
    assert ledger.account_now(run.run_id).parent == "team a"
    registered = ledger.register(family="my model", artifact_uri="s3://m/1", digest=DIGEST_A)
    assert ledger.family("my model", min_position=registered.position).versions[0].version == 1
    with pytest.raises(Invalid):
        ledger.register(family="my other model", artifact_uri="s3://m/1", digest=DIGEST_A)
