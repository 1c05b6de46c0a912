"""A hypothesis state machine for the reconciliation of bills with the ledger's estimates: trainers
reserve, commit, release and charge on a capped parent account and a few capped runs under it,
time passes by hours, providers' bills arrive (new lines, lines sent again, restated lines;
attributed by run id, by a session linked or not, by account, or to no one; with or without a
cost_data_through), sessions are linked to runs, and the bill is adjusted to.

A reference model written here, in plain Python, from the rules of ledger.views.bills' docstring
(attribution precedence; estimated, billed, covered time, pending, provisional, drift, flagged,
adjusted, unadjusted; roll-up to the parent; tokens by class), computes every run's and the
parent's BillTotals and every provider's totals. After every step:

- ledger.reconcile() equals the model: each run's row, the parent's row, each provider's
  totals and the unattributed groups; the runs come largest drift first; a run's RunState and
  the parent's Account carry the same totals;
- every account's spend (aggregate and view) equals the model's, and committed + pending -
  overrun <= cap for every capped account;
and after adjust_to_bill, every billed run's unadjusted drift is 0.

Holds are taken for a week, longer than any sequence runs, so none expires: expiry is
tests/ledger/test_property.py's business.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ledger import CapExceeded, Ledger
from ledger.domain.entries import AccountTotals
from ledger.views.models import BillTotals, ProviderBill, Reconciliation, TokenClassDrift
from tests.ledger.conftest import START, FakeClock, summary_of

HOUR = 3_600
PROVIDERS = ("tinker", "modal")
SESSIONS = ("s0", "s1", "s2", "s3")
CAPS = st.sampled_from([None, 0, 400, 1_500, 6_000])
TEAM_CAPS = st.sampled_from([None, 1_500, 6_000, 20_000])
AMOUNTS = st.integers(min_value=0, max_value=600)
BILLED = st.one_of(st.none(), st.integers(min_value=0, max_value=900))
THRESHOLD = 5.0  # percent, the default
HOLD_TTL = timedelta(days=7)
TOKENS_PER_MICRO = 10


def text_of(amount: int) -> str:
    return f"{amount // 1_000_000}.{amount % 1_000_000:06d}"


def basis_of(amount: int) -> dict[str, Any]:
    """The cost basis of a commit or a charge: train tokens, TOKENS_PER_MICRO per micro-dollar."""
    return {
        "price_sheet": "sheet",
        "tokens": [
            {"token_class": "train", "tokens": amount * TOKENS_PER_MICRO, "usd_micro_per_million_tokens": 100_000}
        ],
    }


# The reference model.


@dataclass
class Holder:
    """An account's spend as the model expects it."""

    name: str
    parent: str
    cap: int | None
    committed: int = 0
    pending: int = 0
    overrun: int = 0
    adjusted: int = 0
    holds: dict[str, int] = field(default_factory=dict)
    hours: dict[int, int] = field(default_factory=dict)  # hour (epoch) -> committed and charged
    tokens: dict[int, int] = field(default_factory=dict)  # hour (epoch) -> train tokens committed and charged

    @property
    def remaining(self) -> int | None:
        return None if self.cap is None else max(0, self.cap - self.committed - self.pending)

    def excess(self, amount: int) -> int:
        remaining = self.remaining
        return 0 if remaining is None else max(0, amount - remaining)

    def totals(self) -> AccountTotals:
        return AccountTotals(
            account=self.name,
            parent=self.parent,
            cap_usd_micro=self.cap,
            committed_usd_micro=self.committed,
            presumed_usd_micro=0,  # No hold is abandoned here: none expires, no attempt is fenced.
            pending_usd_micro=self.pending,
            remaining_usd_micro=self.remaining,
            overrun_usd_micro=self.overrun,
        )


@dataclass(frozen=True)
class Line:
    provider: str
    line_id: str
    start: float
    end: float
    amount: int | None
    train: int | None  # train tokens billed, when the line says
    run_id: str = ""
    account: str = ""
    session_id: str = ""
    description: str = ""

    @property
    def key(self) -> tuple[str, str, float, float]:
        return (self.provider, self.line_id, self.start, self.end)

    def request(self) -> dict[str, Any]:
        return {
            "line_id": self.line_id,
            "interval_start": datetime.fromtimestamp(self.start, START.tzinfo),
            "interval_end": datetime.fromtimestamp(self.end, START.tzinfo),
            "amount_usd_micro": self.amount,
            "amount_text": "" if self.amount is None else text_of(self.amount),
            "quantities": {} if self.train is None else {"train": float(self.train)},
            "run_id": self.run_id,
            "account": self.account,
            "session_id": self.session_id,
            "description": self.description,
        }


@dataclass
class Figures:
    lines: int = 0
    unpriced: int = 0
    billed: int = 0
    provisional: int = 0
    estimated: int = 0
    covered_estimate: int = 0
    adjusted: int = 0
    providers: set[str] = field(default_factory=set)
    billed_train: int | None = None
    ledger_train: int = 0

    def plus(self, other: Figures) -> Figures:
        billed_train = (
            None
            if self.billed_train is None and other.billed_train is None
            else (self.billed_train or 0) + (other.billed_train or 0)
        )
        return Figures(
            lines=self.lines + other.lines,
            unpriced=self.unpriced + other.unpriced,
            billed=self.billed + other.billed,
            provisional=self.provisional + other.provisional,
            estimated=self.estimated + other.estimated,
            covered_estimate=self.covered_estimate + other.covered_estimate,
            adjusted=self.adjusted + other.adjusted,
            providers=self.providers | other.providers,
            billed_train=billed_train,
            ledger_train=self.ledger_train + other.ledger_train,
        )

    @property
    def empty(self) -> bool:
        return not (self.lines or self.estimated or self.adjusted)

    def totals(self) -> BillTotals:
        if self.lines:
            drift = self.billed - self.provisional - self.covered_estimate
            percent = drift * 100 / self.covered_estimate if self.covered_estimate else None
            flagged = abs(drift) * 100 > THRESHOLD * self.covered_estimate if self.covered_estimate else drift != 0
            unadjusted = drift - self.adjusted
        else:
            # Nothing billed: nothing drifts, and an adjustment left without lines (they went to a
            # run since) is to be taken back.
            drift, percent, flagged, unadjusted = 0, None, False, -self.adjusted
        return BillTotals(
            estimated_usd_micro=self.estimated,
            billed_usd_micro=self.billed,
            drift_usd_micro=drift,
            drift_percent=percent,
            adjusted_usd_micro=self.adjusted,
            pending_bill_usd_micro=self.estimated - self.covered_estimate,
            provisional_usd_micro=self.provisional,
            lines=self.lines,
            unpriced_lines=self.unpriced,
            flagged=flagged,
            unadjusted_usd_micro=unadjusted,
        )

    def token_classes(self) -> tuple[TokenClassDrift, ...]:
        if self.billed_train is None:
            return ()
        return (
            TokenClassDrift(
                token_class="train",
                ledger_tokens=self.ledger_train,
                billed_tokens=self.billed_train,
                drift_tokens=self.billed_train - self.ledger_train,
            ),
        )


class BillMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="ledger-bills-"))
        self.clock = FakeClock()
        self.ledger = Ledger.open(str(self.directory / "ledger.db"), clock=self.clock)
        self.holders: dict[str, Holder] = {}
        self.runs: list[str] = []
        self.names: dict[str, str] = {}  # run id -> the run's name (its key, none being given)
        self.lines: dict[tuple[str, str, float, float], Line] = {}
        self.bills: dict[str, datetime | None] = {}  # provider -> cost_data_through (None: not given)
        self.restatements: dict[str, int] = {}
        self.sessions: dict[tuple[str, str], str] = {}  # (provider, session) -> the first run linked
        self.links: set[tuple[str, str, str]] = set()  # (run, provider, session)
        self.counter = 0

    def teardown(self) -> None:
        try:
            self.ledger.close()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def chain(self, name: str) -> list[Holder]:
        found = []
        while name:
            found.append(self.holders[name])
            name = self.holders[name].parent
        return found

    def hour_now(self) -> int:
        return int(self.clock.now.timestamp()) // HOUR * HOUR

    def hours_elapsed(self) -> int:
        return int((self.clock.now - START).total_seconds()) // HOUR

    # The model's reconciliation.

    def target(self, line: Line) -> str:
        """Whom a line belongs to: a known run by id, else a linked session's run, else a known
        account, else no one."""
        if line.run_id in self.runs:
            return line.run_id
        if line.session_id and (line.provider, line.session_id) in self.sessions:
            return self.sessions[(line.provider, line.session_id)]
        if line.account in self.holders:
            return line.account
        return ""

    def coverage(self) -> dict[str, float | None]:
        """Each provider's covered time: its cost_data_through, else its last billed end."""
        covered: dict[str, float | None] = {}
        for provider, through in self.bills.items():
            ends = [line.end for line in self.lines.values() if line.provider == provider]
            covered[provider] = through.timestamp() if through is not None else max(ends, default=None)
        return covered

    def own_figures(self) -> dict[str, Figures]:
        """Figures per account, of what belongs to it directly (not empty ones)."""
        coverage = self.coverage()
        figures = {name: Figures() for name in self.holders}
        through: dict[str, float] = {}
        for line in self.lines.values():
            target = self.target(line)
            if not target:
                continue
            entry = figures[target]
            covered = coverage[line.provider]
            entry.lines += 1
            entry.providers.add(line.provider)
            if line.amount is None:
                entry.unpriced += 1
            else:
                entry.billed += line.amount
                if covered is not None and line.end > covered:
                    entry.provisional += line.amount
            if covered is not None:
                through[target] = min(through.get(target, covered), covered)
            if line.train is not None:
                # Billed tokens are compared over the covered time: a provisional line's count none.
                provisional = covered is not None and line.end > covered
                entry.billed_train = (entry.billed_train or 0) + (0 if provisional else line.train)
        for name, holder in self.holders.items():
            entry = figures[name]
            entry.estimated = sum(holder.hours.values())
            entry.adjusted = holder.adjusted
            if name in through:
                entry.covered_estimate = sum(
                    amount for hour, amount in holder.hours.items() if hour + HOUR <= through[name]
                )
                entry.ledger_train = sum(
                    tokens for hour, tokens in holder.tokens.items() if hour + HOUR <= through[name]
                )
        return {name: entry for name, entry in figures.items() if not entry.empty}

    def team_figures(self, own: dict[str, Figures]) -> Figures | None:
        """The parent's own figures and those of every run under it, or None when there are none."""
        parts = [entry for name, entry in own.items() if name == "team" or self.holders[name].parent == "team"]
        if not parts:
            return None
        whole = Figures()
        for part in parts:
            whole = whole.plus(part)
        return whole

    def providers(self) -> tuple[ProviderBill, ...]:
        bills = []
        for provider in sorted(self.bills):
            mine = [line for line in self.lines.values() if line.provider == provider]
            lost = [line for line in mine if not self.target(line)]
            through = self.bills[provider]
            bills.append(
                ProviderBill(
                    provider=provider,
                    billed_usd_micro=sum(line.amount or 0 for line in mine),
                    unattributed_usd_micro=sum(line.amount or 0 for line in lost),
                    lines=len(mine),
                    unattributed_lines=len(lost),
                    restatements=self.restatements[provider],
                    cost_data_through=through,
                    first_interval_start=min((self.moment(line.start) for line in mine), default=None),
                    last_interval_end=max((self.moment(line.end) for line in mine), default=None),
                )
            )
        return tuple(bills)

    @staticmethod
    def moment(epoch: float) -> datetime:
        return datetime.fromtimestamp(epoch, START.tzinfo)

    def unattributed(self) -> dict[tuple[str, str], tuple[int, int]]:
        groups: dict[tuple[str, str], tuple[int, int]] = {}
        for line in self.lines.values():
            if self.target(line):
                continue
            if line.session_id:
                source = f"session {line.session_id}"
            elif line.run_id:
                source = f"run {line.run_id}"
            elif line.account:
                source = f"account {line.account}"
            else:
                source = line.description or line.line_id
            amount, count = groups.get((line.provider, source), (0, 0))
            groups[(line.provider, source)] = (amount + (line.amount or 0), count + 1)
        return groups

    # Setup: a capped parent and three capped runs under it.

    @initialize(team_cap=TEAM_CAPS, run_caps=st.lists(CAPS, min_size=3, max_size=3))
    def open_accounts(self, team_cap: int | None, run_caps: list[int | None]) -> None:
        self.ledger.open_account(account="team", cap_usd_micro=team_cap)
        self.holders["team"] = Holder("team", "", team_cap)
        for index, cap in enumerate(run_caps):
            run_id = self.ledger.open_run(run_key=f"run-{index}", cap_usd_micro=cap, parent_account="team").run_id
            self.runs.append(run_id)
            self.names[run_id] = f"run-{index}"
            self.holders[run_id] = Holder(run_id, "team", cap)
        self.clock.advance(minutes=20)

    def pick_account(self, data: st.DataObject) -> Holder:
        return self.holders[data.draw(st.sampled_from(["team", *self.runs]), label="account")]

    # Spend.

    @rule(data=st.data(), amount=st.integers(min_value=1, max_value=600))
    def reserve(self, data: st.DataObject, amount: int) -> None:
        """A hold on a run or the parent, refused by the first account of its chain that cannot
        hold it; most are settled at once, as a trainer does after its call."""
        holder = self.pick_account(data)
        rid = self.fresh("r")
        arguments: dict[str, Any] = {
            "account": holder.name,
            "reservation_id": rid,
            "amount_usd_micro": amount,
            "ttl": HOLD_TTL,
        }
        if any(h.remaining is not None and amount > h.remaining for h in self.chain(holder.name)):
            try:
                self.ledger.reserve(**arguments)
            except CapExceeded:
                event("reserve refused")
                return
            raise AssertionError(f"a hold of {amount} beyond a cap was granted")
        self.ledger.reserve(**arguments)
        holder.holds[rid] = amount
        for each in self.chain(holder.name):
            each.pending += amount
        then = data.draw(st.sampled_from(["commit", "commit", "release", "hold"]), label="then")
        if then != "hold":
            delta = data.draw(st.sampled_from([-50, 0, 0, 30, 200]), label="delta")
            self.settle_hold(holder.name, rid, release=then == "release", delta=delta)

    @precondition(lambda self: any(holder.holds for holder in self.holders.values()))
    @rule(data=st.data(), release=st.booleans(), delta=st.sampled_from([-50, -1, 0, 0, 1, 40, 300]))
    def settle(self, data: st.DataObject, release: bool, delta: int) -> None:
        """Commit (with a cost basis of train tokens) or release a pending hold."""
        held = sorted((name, rid) for name, holder in self.holders.items() for rid in holder.holds)
        name, rid = held[data.draw(st.integers(0, len(held) - 1), label="hold")]
        self.settle_hold(name, rid, release=release, delta=delta)

    def settle_hold(self, name: str, rid: str, *, release: bool, delta: int) -> None:
        holder = self.holders[name]
        amount = holder.holds.pop(rid)
        if release:
            self.ledger.release(account=name, reservation_id=rid, reason="call not made")
            for each in self.chain(name):
                each.pending -= amount
            return
        actual = max(0, amount + delta)
        event("commit")
        receipt = self.ledger.commit(account=name, reservation_id=rid, actual_usd_micro=actual, basis=basis_of(actual))
        assert receipt.overrun_usd_micro == max(0, actual - amount)
        for each in self.chain(name):
            each.pending -= amount
            each.committed += actual
            each.overrun += max(0, actual - amount)
        hour = self.hour_now()
        holder.hours[hour] = holder.hours.get(hour, 0) + actual
        holder.tokens[hour] = holder.tokens.get(hour, 0) + actual * TOKENS_PER_MICRO

    @rule(data=st.data(), amount=AMOUNTS)
    def charge(self, data: st.DataObject, amount: int) -> None:
        holder = self.pick_account(data)
        chain = self.chain(holder.name)
        overruns = [each.excess(amount) for each in chain]
        receipt = self.ledger.charge(
            account=holder.name, charge_id=self.fresh("c"), amount_usd_micro=amount, basis=basis_of(amount)
        )
        assert receipt.overrun_usd_micro == overruns[0]
        for each, overrun in zip(chain, overruns, strict=True):
            each.committed += amount
            each.overrun += overrun
        hour = self.hour_now()
        holder.hours[hour] = holder.hours.get(hour, 0) + amount
        holder.tokens[hour] = holder.tokens.get(hour, 0) + amount * TOKENS_PER_MICRO

    @rule(hours=st.integers(1, 3), minutes=st.sampled_from([0, 0, 15]))
    def advance(self, hours: int, minutes: int) -> None:
        self.clock.advance(hours=hours, minutes=minutes)

    # Bills.

    def draw_line(self, data: st.DataObject, provider: str) -> Line:
        """A new line: an hour (or two) up to the next hour, attributed one way or another."""
        first = data.draw(st.integers(0, self.hours_elapsed() + 1), label="hour")
        length = data.draw(st.sampled_from([1, 1, 1, 2]), label="hours")
        start = START.timestamp() + first * HOUR
        how = data.draw(st.sampled_from(["run", "session", "session", "account", "nobody"]), label="attribution")
        fields: dict[str, str] = {}
        if how == "run":
            fields["run_id"] = data.draw(st.sampled_from(self.runs), label="run")
        elif how == "session":
            fields["session_id"] = data.draw(st.sampled_from(SESSIONS), label="session")
            if data.draw(st.booleans(), label="with the account"):
                fields["account"] = "team"
        elif how == "account":
            fields["account"] = data.draw(st.sampled_from(["team", "ghost"]), label="account")
        else:
            fields["description"] = data.draw(st.sampled_from(["", "storage"]), label="description")
        event(f"line by {how}")
        return Line(
            provider=provider,
            line_id=self.fresh("L"),
            start=start,
            end=start + length * HOUR,
            amount=data.draw(BILLED, label="amount"),
            train=data.draw(st.one_of(st.none(), st.integers(0, 8_000)), label="train tokens"),
            **fields,
        )

    @rule(data=st.data(), provider=st.sampled_from(PROVIDERS), size=st.integers(1, 4), through=st.booleans())
    def record_bill(self, data: st.DataObject, provider: str, size: int, through: bool) -> None:
        """New lines, lines sent again and restated lines of one provider, in one request."""
        known = sorted(key for key in self.lines if key[0] == provider)
        sent: list[Line] = []
        for _ in range(size):
            kind = data.draw(st.sampled_from(["new", "again", "restate"]), label="kind") if known else "new"
            if kind == "new":
                sent.append(self.draw_line(data, provider))
                continue
            key = known.pop(data.draw(st.integers(0, len(known) - 1), label="line"))
            line = self.lines[key]
            if kind == "restate":
                line = replace(line, amount=data.draw(BILLED, label="restated amount"))
            sent.append(line)
        # Up to two hours ahead, on the hour or within one (which leaves that hour uncovered).
        cost_data_through = (
            START
            + timedelta(
                hours=data.draw(st.integers(0, self.hours_elapsed() + 2), label="through"),
                minutes=data.draw(st.sampled_from([0, 0, 30]), label="minutes"),
            )
            if through
            else None
        )
        new = [line for line in sent if line.key not in self.lines]
        restated = [line for line in sent if line.key in self.lines and self.lines[line.key] != line]
        unchanged = len(sent) - len(new) - len(restated)
        opened = provider not in self.bills
        moved = cost_data_through is not None and cost_data_through != self.bills.get(provider)
        head = self.ledger.head()
        receipt = self.ledger.record_billed_usage(
            provider=provider, lines=[line.request() for line in sent], cost_data_through=cost_data_through
        )
        assert (receipt.recorded, receipt.restated, receipt.unchanged) == (len(new), len(restated), unchanged)
        written = opened or bool(new or restated) or moved
        assert receipt.duplicate == (not written)
        if written:
            assert receipt.position == self.ledger.head() > head
        else:
            event("bill sent again")
            assert self.ledger.head() == head
            assert 0 < receipt.position <= head
        if restated:
            event("restatement")
        for line in sent:
            self.lines[line.key] = line
        if opened:
            self.bills[provider] = None
            self.restatements[provider] = 0
        if cost_data_through is not None:
            self.bills[provider] = cost_data_through
        self.restatements[provider] += len(restated)
        if data.draw(st.integers(0, 2), label="adjust to it") == 0:
            self.adjust_to_bill()

    @rule(data=st.data(), provider=st.sampled_from(PROVIDERS), session=st.sampled_from(SESSIONS))
    def link_session(self, data: st.DataObject, provider: str, session: str) -> None:
        run_id = data.draw(st.sampled_from(self.runs), label="run")
        head = self.ledger.head()
        receipt = self.ledger.link_session(run_id=run_id, provider=provider, session_id=session)
        if (run_id, provider, session) in self.links:
            assert receipt.duplicate and self.ledger.head() == head
        else:
            assert not receipt.duplicate and receipt.position == self.ledger.head()
            if (provider, session) in self.sessions:
                event("a session linked to a second run")
        self.links.add((run_id, provider, session))
        self.sessions.setdefault((provider, session), run_id)

    @rule()
    def adjust_to_bill(self) -> None:
        """Every account with unadjusted drift (in name order) records it; caps overrun as for a
        charge. Then no billed run is left with an unadjusted drift."""
        expected = []
        for name, entry in sorted(self.own_figures().items()):
            amount = entry.totals().unadjusted_usd_micro
            if not amount:
                continue
            chain = self.chain(name)
            overruns = [each.excess(amount) if amount > 0 else 0 for each in chain]
            expected.append((name, name if name in self.runs else "", amount, overruns[0]))
            for each, overrun in zip(chain, overruns, strict=True):
                each.committed += amount
                each.overrun += overrun
            self.holders[name].adjusted += amount
        receipts, highest = self.ledger.adjust_to_bill()
        assert [(r.account, r.run_id, r.amount_usd_micro, r.overrun_usd_micro) for r in receipts] == expected
        assert highest == (max(r.position for r in receipts) if receipts else 0)
        event("adjusted" if receipts else "nothing to adjust")
        if any(r.overrun_usd_micro for r in receipts):
            event("an adjustment overran a cap")
        if any(r.amount_usd_micro < 0 for r in receipts):
            event("a negative adjustment")
        report, _ = self.ledger.reconcile(min_position=self.ledger.head())
        for row in report.runs:
            if row.bill.lines:
                assert row.bill.unadjusted_usd_micro == 0, row

    # Invariants.

    @invariant()
    def reconciliation_agrees(self) -> None:
        own = self.own_figures()
        report, more = self.ledger.reconcile(min_position=self.ledger.head())
        assert not more
        runs = {
            name: Reconciliation(
                run_id=name,
                name=self.names[name],
                account=name,
                parent="team",
                bill=entry.totals(),
                providers=tuple(sorted(entry.providers)),
                token_classes=entry.token_classes(),
            )
            for name, entry in own.items()
            if name in self.runs
        }
        assert {row.run_id: row for row in report.runs} == runs
        for row in runs.values():
            if row.bill.lines and row.bill.pending_bill_usd_micro:
                event("a billed run with a pending bill")
            if row.bill.provisional_usd_micro:
                event("a provisional line")
            if any(t.ledger_tokens for t in row.token_classes):
                event("tokens compared")
        drifts = [abs(row.bill.drift_usd_micro) for row in report.runs]
        assert drifts == sorted(drifts, reverse=True)
        team = self.team_figures(own)
        assert report.accounts == (
            ()
            if team is None
            else (
                Reconciliation(
                    run_id="",
                    name="",
                    account="team",
                    parent="",
                    bill=team.totals(),
                    providers=tuple(sorted(team.providers)),
                    token_classes=team.token_classes(),
                ),
            )
        )
        assert report.providers == self.providers()
        assert {(g.provider, g.source): (g.billed_usd_micro, g.lines) for g in report.unattributed} == (
            self.unattributed()
        )
        amounts = [abs(g.billed_usd_micro) for g in report.unattributed]
        assert amounts == sorted(amounts, reverse=True)

    @invariant()
    def totals_carry_the_bill(self) -> None:
        own = self.own_figures()
        head = self.ledger.head()
        for run_id in self.runs:
            entry = own.get(run_id)
            expected = entry.totals() if entry is not None and (entry.lines or entry.adjusted) else None
            assert self.ledger.run_state(run_id, min_position=head).spend.bill == expected
        team = self.team_figures(own)
        expected = team.totals() if team is not None and (team.lines or team.adjusted) else None
        assert self.ledger.account("team", min_position=head).bill == expected

    @invariant()
    def spend_agrees_and_no_cap_is_crossed(self) -> None:
        head = self.ledger.head()
        for name, holder in self.holders.items():
            now = self.ledger.account_now(name)
            view = summary_of(self.ledger.account(name, min_position=head))
            assert now == holder.totals(), (name, now, holder.totals())
            assert view == holder.totals(), (name, view, holder.totals())
            if holder.cap is not None:
                assert holder.committed + holder.pending - holder.overrun <= holder.cap


BillMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestBillMachine = BillMachine.TestCase
