"""Bearer tokens: who may call the ledger, in which role, over which accounts.

The token book (`Tokens`, one aggregate per ledger, id `ledger_id("tokens", "book")`) records
every token issued (TokenIssued: its id, the principal it names, its role, its optional account
scope and expiry, and the SHA-256 of its secret, never the secret) and every revocation
(TokenRevoked: why). Each event also carries, like every event, the principal who issued or
revoked it. A bearer token reads `tl_<token id>_<secret>`: the id finds the entry, the secret is
compared with the stored hash in constant time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
import secrets
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.domain.errors import Invalid, NotFound, Unauthenticated
from ledger.domain.reasons import Reason

__all__ = [
    "ROLES",
    "BOOK_ID",
    "Token",
    "Tokens",
    "make_secret",
    "secret_hash",
    "bearer",
    "parse_bearer",
    "parse_expiry",
    "check_role",
]

ROLES = ("trainer", "operator", "auditor", "admin")
BOOK_ID = ledger_id("tokens", "book")
PREFIX = "tl"
# 32 random bytes: 256 bits of entropy in the secret; the id (12 bytes) is not secret.
SECRET_BYTES = 32
ID_BYTES = 12
_BEARER = re.compile(r"^tl_([A-Za-z0-9]{8,64})_([A-Za-z0-9_-]{32,128})$")
_EXPIRY = re.compile(r"^([1-9][0-9]{0,5})([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def make_secret() -> tuple[str, str]:
    """A new token id and secret (both URL-safe; the id alphanumeric)."""
    return secrets.token_hex(ID_BYTES), secrets.token_urlsafe(SECRET_BYTES)


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def bearer(token_id: str, secret: str) -> str:
    """The bearer token a client sends: `tl_<id>_<secret>`."""
    return f"{PREFIX}_{token_id}_{secret}"


def parse_bearer(value: str) -> tuple[str, str]:
    """(token id, secret) of a bearer token. Raises Unauthenticated (TOKEN_INVALID)."""
    found = _BEARER.match(value)
    if found is None:
        raise Unauthenticated("the bearer token is malformed", reason=Reason.TOKEN_INVALID)
    return found.group(1), found.group(2)


def parse_expiry(text: str, now: datetime) -> datetime:
    """The moment `text` ("90d", "12h", "30m", "45s", "2w") after `now`. Raises Invalid."""
    found = _EXPIRY.match(text.strip())
    if found is None:
        raise Invalid(f"expiry {text!r} is not a number and a unit (s, m, h, d, w)", reason=Reason.INVALID_DURATION)
    return now + timedelta(seconds=int(found.group(1)) * _UNITS[found.group(2)])


def check_role(role: str) -> str:
    if role not in ROLES:
        raise Invalid(f"role {role!r} is not one of {', '.join(ROLES)}", reason=Reason.INVALID_FIELD, field="role")
    return role


@dataclasses.dataclass(frozen=True)
class Token:
    """One token as the book knows it (no secret: only its hash)."""

    token_id: str
    holder: str
    role: str
    account: str
    expires_at: datetime | None
    secret_sha256: str
    issued_by: str
    issued_at: datetime
    revoked_by: str = ""
    revoked_at: datetime | None = None
    revoke_reason: str = ""

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def active(self, now: datetime) -> bool:
        return not self.revoked and not self.expired(now)

    def check(self, secret: str, now: datetime) -> Token:
        """This token, if `secret` is its own and it may still be used. Raises Unauthenticated."""
        if not hmac.compare_digest(secret_hash(secret), self.secret_sha256):
            raise Unauthenticated("the bearer token is not valid", reason=Reason.TOKEN_INVALID)
        return self.check_usable(now)

    def check_usable(self, now: datetime) -> Token:
        """This token, if it is neither revoked nor expired at `now`. Raises Unauthenticated."""
        if self.revoked:
            raise Unauthenticated(f"token {self.token_id} was revoked", reason=Reason.TOKEN_REVOKED)
        if self.expired(now):
            raise Unauthenticated(f"token {self.token_id} has expired", reason=Reason.TOKEN_EXPIRED)
        return self


class Tokens(LedgerAggregate):
    """The token book: every token issued on this ledger and its revocation."""

    if TYPE_CHECKING:
        entries: dict[str, Token]

    def __init__(self) -> None:
        pass

    class Opened(LedgerAggregate.Created):
        def apply(self, book: Tokens) -> None:
            book.entries = {}

    class TokenIssued(LedgerAggregate.Event):
        token_id: str
        holder: str
        role: str
        account: str
        expires_at: datetime | None
        secret_sha256: str

        def apply(self, book: Tokens) -> None:
            book.entries[self.token_id] = Token(
                self.token_id,
                self.holder,
                self.role,
                self.account,
                self.expires_at,
                self.secret_sha256,
                self.principal,
                self.timestamp,
            )

    class TokenRevoked(LedgerAggregate.Event):
        token_id: str
        reason: str

        def apply(self, book: Tokens) -> None:
            entry = book.entries[self.token_id]
            book.entries[self.token_id] = dataclasses.replace(
                entry, revoked_by=self.principal, revoked_at=self.timestamp, revoke_reason=self.reason
            )

    @classmethod
    def open(cls, audit: Audit) -> Tokens:
        return cls._create(cls.Opened, id=BOOK_ID, **audit.fields())

    def issue(self, audit: Audit, *, token_id: str, secret: str, holder: str, role: str, account: str,
              expires_at: datetime | None) -> None:  # fmt: skip
        if expires_at is not None and expires_at <= audit.now:
            raise Invalid("a token's expiry must be in the future", reason=Reason.OUT_OF_RANGE, field="expires")
        self.record(
            self.TokenIssued,
            audit,
            token_id=token_id,
            holder=holder,
            role=check_role(role),
            account=account,
            expires_at=expires_at,
            secret_sha256=secret_hash(secret),
        )

    def revoke(self, audit: Audit, token_id: str, reason: str) -> bool:
        """Revoke `token_id`; False when it was revoked before (nothing recorded). Raises NotFound."""
        entry = self.entries.get(token_id)
        if entry is None:
            raise NotFound(f"no token {token_id}", reason=Reason.TOKEN_NOT_FOUND, token_id=token_id)
        if entry.revoked:
            return False
        self.record(self.TokenRevoked, audit, token_id=token_id, reason=reason)
        return True
