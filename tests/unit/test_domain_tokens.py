"""The token book as a domain: issuing and revoking, checking a secret, parsing a bearer token and
an expiry. No I/O."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ledger.domain.base import Audit
from ledger.domain.errors import Invalid, NotFound, Unauthenticated
from ledger.domain.tokens import Tokens, bearer, parse_bearer, parse_expiry

NOW = datetime(2026, 1, 1, tzinfo=UTC)
AUDIT = Audit("local:ops", "", NOW)
SECRET = "s" * 43


def book_with_one() -> Tokens:
    book = Tokens.open(AUDIT)
    book.issue(AUDIT, token_id="abcdef0123456789", secret=SECRET, holder="alice", role="trainer", account="team-a",
               expires_at=NOW + timedelta(days=1))  # fmt: skip
    return book


def test_issuing_stores_the_hash_not_the_secret_and_names_who_issued_it() -> None:
    token = book_with_one().entries["abcdef0123456789"]
    assert (token.holder, token.role, token.account, token.issued_by) == ("alice", "trainer", "team-a", "local:ops")
    assert SECRET not in repr(token) and len(token.secret_sha256) == 64


def test_a_token_checks_its_secret_then_revocation_then_expiry() -> None:
    book = book_with_one()
    token = book.entries["abcdef0123456789"]
    assert token.check(SECRET, NOW) is token
    with pytest.raises(Unauthenticated) as wrong:
        token.check("t" * 43, NOW)
    assert wrong.value.reason == "TOKEN_INVALID"
    with pytest.raises(Unauthenticated) as expired:
        token.check(SECRET, NOW + timedelta(days=2))
    assert expired.value.reason == "TOKEN_EXPIRED"
    assert book.revoke(AUDIT, "abcdef0123456789", "left") is True
    assert book.revoke(AUDIT, "abcdef0123456789", "again") is False
    assert len(book.collect_events()) == 3
    with pytest.raises(Unauthenticated) as revoked:
        book.entries["abcdef0123456789"].check(SECRET, NOW)
    assert revoked.value.reason == "TOKEN_REVOKED"


def test_refusals_of_the_book() -> None:
    book = book_with_one()
    with pytest.raises(NotFound):
        book.revoke(AUDIT, "0000000000000000", "")
    with pytest.raises(Invalid):
        book.issue(AUDIT, token_id="1234567890abcdef", secret=SECRET, holder="bob", role="root", account="",
                   expires_at=None)  # fmt: skip
    with pytest.raises(Invalid):
        book.issue(AUDIT, token_id="1234567890abcdef", secret=SECRET, holder="bob", role="admin", account="",
                   expires_at=NOW)  # fmt: skip


def test_bearer_tokens_and_expiries_parse() -> None:
    assert parse_bearer(bearer("abcdef0123456789", SECRET)) == ("abcdef0123456789", SECRET)
    for malformed in (
        "",
        "tl_",
        "Bearer x",
        f"xx_abcdef0123456789_{SECRET}",
        f"tl_abc_{SECRET}",
        "tl_abcdef0123456789_short",
    ):
        with pytest.raises(Unauthenticated):
            parse_bearer(malformed)
    assert parse_expiry("90d", NOW) == NOW + timedelta(days=90)
    assert parse_expiry("12h", NOW) == NOW + timedelta(hours=12)
    assert parse_expiry("2w", NOW) == NOW + timedelta(weeks=2)
    for bad in ("", "0d", "d", "90", "1y", "-1d"):
        with pytest.raises(Invalid):
            parse_expiry(bad, NOW)
