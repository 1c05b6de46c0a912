"""Tokens and scopes: issuing and revoking bearer tokens (events in the token book,
ledger.domain.tokens), reading the book as storage holds it now, and the scope questions the edge
asks before a scoped token acts (is this account, or this run's account, under the scope?).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from eventsourcing.application import AggregateNotFoundError

from ledger.application.context import Context
from ledger.application.outcomes import Receipt, storage_read
from ledger.domain.accounts import Account
from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.domain.errors import Invalid, LedgerError
from ledger.domain.limits import PARENT_DEPTH_MAX, check_reference, check_text
from ledger.domain.reasons import Reason
from ledger.domain.tokens import BOOK_ID, Token, Tokens, bearer, check_role, make_secret

__all__ = ["Issued", "TokenCommands"]


@dataclass(frozen=True)
class Issued:
    """A token just issued: its bearer value (shown once, never stored) and where it was recorded."""

    token: Token
    bearer: str
    position: int


class TokenCommands(Context):
    """Issue and revoke tokens; read the token book; answer scope questions."""

    def issue_token(
        self,
        *,
        holder: str,
        role: str,
        account: str = "",
        expires_at: datetime | None = None,
        principal: str = "",
        request_id: str = "",
    ) -> Issued:
        """Issue a token naming `holder` in `role`, scoped to `account` when given (which must
        exist). Raises Invalid, NotFound (ACCOUNT_NOT_FOUND)."""
        holder = check_text(holder, "principal", limit=256)
        if not holder:
            raise Invalid("a token names a principal", reason=Reason.MISSING_FIELD, field="principal")
        check_role(role)
        if account:
            self.aggregates.account(account)
        audit = self.writer.audit(principal, request_id)
        token_id, secret = make_secret()

        def decide(touched: list[LedgerAggregate]) -> None:
            book = self._book_for_write(audit)
            touched.append(book)
            book.issue(
                audit,
                token_id=token_id,
                secret=secret,
                holder=holder,
                role=role,
                account=account,
                expires_at=expires_at,
            )

        _, position = self.writer.write(decide)
        assert position is not None
        return Issued(self.token_book()[token_id], bearer(token_id, secret), position)

    def revoke_token(self, *, token_id: str, reason: str = "", principal: str = "", request_id: str = "") -> Receipt:
        """Revoke a token (a second revocation records nothing). Raises NotFound (TOKEN_NOT_FOUND)."""
        reason = check_text(reason, "reason")
        audit = self.writer.audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> bool:
            book = self._book_for_write(audit)
            touched.append(book)
            return book.revoke(audit, token_id, reason)

        _, position = self.writer.write(decide)
        return Receipt(position or 0, duplicate=position is None)

    def _book_for_write(self, audit: Audit) -> Tokens:
        try:
            book: Tokens = self.aggregates.repository.get(BOOK_ID)
            return book
        except AggregateNotFoundError:
            return Tokens.open(audit)

    @storage_read
    def token_book(self) -> dict[str, Token]:
        """Every token, as storage holds it now (read past the aggregate cache, so a revocation
        written by another process is seen): token id -> Token."""
        book = Tokens.__new__(Tokens)
        found = False
        for stored in self.aggregates.recorder.select_events(BOOK_ID):
            event: Any = self.aggregates.mapper.to_domain_event(stored)
            event.apply(book)
            found = True
        return book.entries if found else {}

    # Scope questions: is a thing under a token's account?

    @storage_read
    def account_within(self, account: str, scope: str) -> bool:
        """Whether `account` is `scope` or under it (an unknown account is not)."""
        try:
            name = check_reference(account, "account")
        except LedgerError:
            return False
        for _ in range(PARENT_DEPTH_MAX + 1):
            if name == scope:
                return True
            try:
                found: object = self.aggregates.repository.get(ledger_id("account", name))
            except AggregateNotFoundError:
                return False
            if not isinstance(found, Account) or not found.parent:
                return False
            name = found.parent
        return False

    def run_within(self, run_id: str, scope: str) -> bool:
        """Whether the run's account is under `scope` (an unknown run is not): a run's account is
        named by its run id."""
        return self.account_within(run_id, scope)

    @storage_read
    def opening_within(self, kind: str, name: str, scope: str) -> bool:
        """Whether opening `name` (kind "run": a run key; "account": an account's name) keeps to
        `scope`: nothing of that name exists yet, or what exists is under `scope`. Opening an
        existing thing acts on it, so a scoped token may open only its own: told otherwise, it
        would learn where another scope's run or account lives."""
        try:
            if kind == "run":
                found = ledger_id("run", name)
                subject = str(found)
            else:
                subject = check_reference(name, "account")
                found = ledger_id("account", subject)
        except LedgerError:
            return True  # Nothing of a name the ledger refuses exists: the command says why.
        try:
            self.aggregates.repository.get(found)
        except AggregateNotFoundError:
            return True
        return self.account_within(subject, scope)
