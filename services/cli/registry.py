"""`trainledger registry`: the model registry's reads (through a server here, or on a database
file in services.cli.local) and the writes operators make by hand, through a server.

    trainledger registry list | show FAMILY | register FAMILY URI --digest D [--from-checkpoint RUN:STEP]
    trainledger registry promote FAMILY VERSION --gate-rule RULE|--passed|--failed | rollback FAMILY [VERSION]
    trainledger registry alias FAMILY ALIAS VERSION [--expect N]   # VERSION 0 removes the alias
    trainledger registry retire FAMILY --reason TEXT

Promote and rollback are compare-and-set on the current version (--expected-current; by default
the current version as read just before); an alias moves by compare-and-set on the version it
names now (--expect; by default the one read just before, 0 for none); a retired family takes no
more registrations, promotions, rollbacks or alias moves, and still reads.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from services.cli.connection import talking
from services.cli.options import add_reading, add_server_options, add_writing, expected_current, positive
from services.cli.output import Failure, emit
from services.cli.remote import resolve_run
from services.render.registry import (
    alias_text,
    families_table,
    family_text,
    move_text,
    register_text,
    retire_text,
    verdict_text,
)

if TYPE_CHECKING:
    from clients import LedgerClient

__all__ = [
    "add_parser",
    "registry_alias",
    "registry_list",
    "registry_promote",
    "registry_register",
    "registry_retire",
    "registry_rollback",
    "registry_show",
    "verdict_of",
]


def add_parser(commands: Any) -> None:
    """Add `registry` and its commands to the CLI's (the `add_subparsers` of services.cli.commands.parser)."""
    group = commands.add_parser("registry", help="model registry").add_subparsers(dest="action", required=True)
    add_reading(group, "list", registry_list, "families and their current versions")
    add_reading(group, "show", registry_show, "a family's versions and promotion history").add_argument(
        "family", metavar="FAMILY"
    )
    _add_register(group)
    _add_promote(group)
    _add_rollback(group)
    _add_alias(group)
    _add_retire(group)


def _add_register(group: Any) -> None:
    registered = add_writing(group, "register", registry_register, "register a version of a family")
    registered.add_argument("family", metavar="FAMILY")
    registered.add_argument("artifact_uri", metavar="ARTIFACT_URI", help="where the model's files are")
    registered.add_argument(
        "--digest", required=True, help="the artifact's digest (sha256:...); the version's identity"
    )
    source = registered.add_mutually_exclusive_group()
    source.add_argument(
        "--from-checkpoint",
        default="",
        metavar="RUN:STEP",
        help="the run's checkpoint it was made from (checked, and kept from retention)",
    )
    source.add_argument("--source-run", default="", metavar="RUN", help="the run it came from (not checked)")
    registered.add_argument("--source-step", type=int, default=0, metavar="STEP", help="with --source-run")
    registered.add_argument(
        "--checkpoint-digest",
        default="",
        metavar="DIGEST",
        help="with --from-checkpoint: the digest the checkpoint must have (default: the one it was saved with)",
    )
    registered.add_argument("--metadata", default="", metavar="JSON", help="a JSON object kept with the version")


def _add_promote(group: Any) -> None:
    promoted = add_writing(group, "promote", registry_promote, "make a version current through its gate")
    promoted.add_argument("family", metavar="FAMILY")
    promoted.add_argument("version", metavar="VERSION", type=positive)
    gate = promoted.add_mutually_exclusive_group(required=True)
    gate.add_argument(
        "--gate-rule",
        default="",
        metavar="RULE",
        help='a rule the ledger evaluates on recorded scores, e.g. "eval_loss <= 0.5 and accuracy >= 0.8"',
    )
    gate.add_argument(
        "--gate-json", default="", metavar="FILE", help='an asserted verdict: {"passed", "reason", "stats"}'
    )
    gate.add_argument("--passed", action="store_true", default=None, help="assert that the gate passed")
    gate.add_argument(
        "--failed", dest="passed", action="store_false", help="assert that the gate failed (refused, recorded)"
    )
    promoted.add_argument(
        "--eval-run",
        default="",
        metavar="RUN",
        help="with --gate-rule: evaluate on this run's summary, not the version's source checkpoint's scores",
    )
    promoted.add_argument(
        "--reason", default="", help="the gate's reason (an asserted verdict needs one: who checked what)"
    )
    promoted.add_argument("--stat", action="append", default=[], metavar="KEY=VALUE", help="a statistic of the gate")
    expected_current(promoted)


def _add_rollback(group: Any) -> None:
    rolled = add_writing(group, "rollback", registry_rollback, "make a version current again that was current before")
    rolled.add_argument("family", metavar="FAMILY")
    rolled.add_argument(
        "version", metavar="VERSION", type=positive, nargs="?", default=None, help="(default: the previous current)"
    )
    rolled.add_argument("--reason", required=True, help="why (recorded)")
    expected_current(rolled)


def _add_alias(group: Any) -> None:
    aliased = group.add_parser("alias", help="point an alias (staging, production ...) at a version")
    aliased.add_argument("family", metavar="FAMILY")
    aliased.add_argument("alias", metavar="ALIAS", help="a lowercase letter, then letters, digits, - or _")
    aliased.add_argument("version", metavar="VERSION", type=int, help="the version it names (0: remove it)")
    aliased.add_argument(
        "--expect",
        type=int,
        default=None,
        metavar="N",
        help="refuse unless the alias names version N now (compare-and-set; 0: none; default: as read now)",
    )
    add_server_options(aliased)
    aliased.set_defaults(handler=registry_alias)


def _add_retire(group: Any) -> None:
    retired = group.add_parser("retire", help="retire a family: no further promotions; reads still work")
    retired.add_argument("family", metavar="FAMILY")
    retired.add_argument("--reason", required=True, help="why (recorded; retiring again takes the same reason)")
    add_server_options(retired)
    retired.set_defaults(handler=registry_retire)


def registry_list(args: argparse.Namespace) -> None:
    families: list[Any] = []
    with talking(args) as client:
        token = ""
        while True:
            page = client.list_families(page_token=token)
            families += page.families
            token = page.next_page_token
            if not token:
                break
    emit(args, families, lambda: families_table(families) if families else "(no family)")


def _family(client: LedgerClient, family: str) -> tuple[int, list[Any], list[Any], Any]:
    """(current, versions, history, last page: its aliases and retirement) of a family, every page."""
    versions: list[Any] = []
    history: list[Any] = []
    token = ""
    while True:
        page = client.list_versions(family=family, page_token=token)
        versions += page.versions
        history += page.history
        token = page.next_page_token
        if not token:
            return page.current, versions, history, page


def registry_show(args: argparse.Namespace) -> None:
    with talking(args) as client:
        current, versions, history, page = _family(client, args.family)
    if not versions:
        raise Failure(f"no family {args.family}", status=1)
    value = {
        "family": args.family,
        "current": current,
        "versions": versions,
        "history": history,
        "aliases": page.aliases,
        "retired": page.retired,
    }
    emit(
        args,
        value,
        lambda: family_text(args.family, current, versions, history, page.aliases, page.retired),
    )


def registry_register(args: argparse.Namespace) -> None:
    """Register a version of a family: from a run's checkpoint (--from-checkpoint RUN:STEP or RUN@STEP, its
    digest checked by the ledger), from a run and step (--source-run, not checked) or alone."""
    from clients.models import SourceCheckpoint

    metadata = _metadata_of(args.metadata)
    with talking(args) as client:
        source: SourceCheckpoint | None = None
        run_id, step, described = "", 0, ""
        if args.from_checkpoint:
            ref, step = _run_at_step(args.from_checkpoint)
            run_id = resolve_run(client, ref)
            digest = args.checkpoint_digest or _checkpoint_digest(client, run_id, step)
            source = SourceCheckpoint(run_id=run_id, step=step, checkpoint_digest=digest)
            run_id, step, described = "", 0, f"run {ref}'s checkpoint at step {step}"
        elif args.source_run:
            run_id, step = resolve_run(client, args.source_run), args.source_step
            described = f"run {args.source_run} at step {step}"
        receipt = client.register(
            family=args.family,
            artifact_uri=args.artifact_uri,
            digest=args.digest,
            source_run_id=run_id,
            source_step=step,
            metadata=metadata,
            source_checkpoint=source,
        )
    emit(
        args,
        receipt,
        register_text(args.family, receipt.version, receipt.position, receipt.duplicate, described),
    )


def _metadata_of(text: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        metadata = json.loads(text)
    except ValueError as error:
        raise Failure(f"--metadata is not JSON: {error}") from None
    if not isinstance(metadata, dict):
        raise Failure("--metadata takes a JSON object")
    return metadata


def _run_at_step(text: str) -> tuple[str, int]:
    """RUN@STEP (or RUN:STEP) as (RUN, STEP)."""
    cut = max(text.rfind("@"), text.rfind(":"))
    ref, step = text[: max(cut, 0)], text[cut + 1 :]
    if cut < 0 or not ref or not step.isdigit():
        raise Failure(f"--from-checkpoint takes RUN@STEP or RUN:STEP, not {text!r}")
    return ref, int(step)


def _checkpoint_digest(client: LedgerClient, run_id: str, step: int) -> str:
    """The digest the usable checkpoint at `step` was saved with (the one a resume would take)."""
    token, found = "", []
    while True:
        page = client.list_checkpoints(run_id=run_id, page_token=token)
        found += [c for c in page.checkpoints if c.step == step]
        token = page.next_page_token
        if not token:
            break
    usable = [c for c in found if not c.superseded and c.deleted_at is None]
    if not usable:
        raise Failure(f"run {run_id} has no usable checkpoint at step {step}", status=1)
    if not usable[-1].digest:
        raise Failure(f"the checkpoint at step {step} was saved without a digest: pass --checkpoint-digest", status=1)
    return str(usable[-1].digest)


def verdict_of(args: argparse.Namespace) -> dict[str, Any] | None:
    """The gate verdict a promotion asserts: --gate-json FILE, or --passed/--failed, --reason and
    --stat KEY=VALUE (values read as JSON when they are JSON: 0.91, true, "text"); None with
    --gate-rule, which the ledger evaluates itself."""
    if getattr(args, "gate_rule", ""):
        return None
    if args.gate_json:
        try:
            with open(args.gate_json, encoding="utf-8") as file:
                verdict = json.load(file)
        except (OSError, ValueError) as error:
            raise Failure(f"cannot read the gate verdict {args.gate_json}: {error}") from None
        if not isinstance(verdict, dict) or not isinstance(verdict.get("passed"), bool):
            raise Failure(f'{args.gate_json}: a gate verdict is {{"passed": true|false, "reason": ..., "stats": {{}}}}')
        return verdict
    stats: dict[str, Any] = {}
    for pair in args.stat:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise Failure(f"--stat takes KEY=VALUE, not {pair!r}")
        try:
            stats[key] = json.loads(text)
        except ValueError:
            stats[key] = text
    return {"passed": bool(args.passed), "reason": args.reason, "stats": stats}


def registry_promote(args: argparse.Namespace) -> None:
    """Make a version current through its gate, by compare-and-set on the current version: a gate
    rule the ledger evaluates (--gate-rule, on the version's source checkpoint's scores or
    --eval-run's summary), or a verdict asserted here. A refusal is recorded by the ledger."""
    verdict = verdict_of(args)
    if getattr(args, "eval_run", "") and not getattr(args, "gate_rule", ""):
        raise Failure("--eval-run goes with --gate-rule")
    with talking(args) as client:
        expected = args.expected_current
        if expected is None:
            expected = client.list_versions(family=args.family, page_size=1).current
        evaluation_run_id = resolve_run(client, args.eval_run) if getattr(args, "eval_run", "") else ""
        receipt = client.promote(
            family=args.family,
            version=args.version,
            expected_current=expected,
            verdict=verdict,
            gate_rule=getattr(args, "gate_rule", ""),
            evaluation_run_id=evaluation_run_id,
        )
    moved = move_text("promoted", args.family, receipt.current, receipt.previous, receipt.position, receipt.duplicate)
    gate = verdict_text(receipt.verdict)
    emit(args, receipt, moved + (f"\ngate: {gate}" if gate else ""))


def registry_rollback(args: argparse.Namespace) -> None:
    """Make a version current again that was current before (default: the previous current)."""
    with talking(args) as client:
        current, _, history, _ = _family(client, args.family)
        expected = current if args.expected_current is None else args.expected_current
        version = args.version if args.version is not None else _previous(history, current)
        if version is None:
            raise Failure(f"{args.family}: no version was current before; name the version", status=1)
        receipt = client.rollback(family=args.family, version=version, expected_current=expected, reason=args.reason)
    emit(
        args,
        receipt,
        move_text("rolled back", args.family, receipt.current, receipt.previous, receipt.position, receipt.duplicate),
    )


def _previous(history: list[Any], current: int) -> int | None:
    """The version current before `current` (what the latest move replaced); refused promotions
    never made a version current."""
    moved = next((p for p in reversed(history) if p.kind != "refused"), None)
    return moved.previous if moved is not None and 0 < moved.previous != current else None


def registry_alias(args: argparse.Namespace) -> None:
    with talking(args) as client:
        expected = args.expect
        if expected is None:
            page = client.list_versions(family=args.family, page_size=1)
            expected = next((a.version for a in page.aliases if a.alias == args.alias), 0)
        receipt = client.move_alias(
            family=args.family, alias=args.alias, version=args.version, expected_version=expected
        )
    text = alias_text(args.family, args.alias, receipt.version, receipt.previous, receipt.position, receipt.duplicate)
    emit(args, receipt, text)


def registry_retire(args: argparse.Namespace) -> None:
    with talking(args) as client:
        receipt = client.retire_family(family=args.family, reason=args.reason)
    emit(args, receipt, retire_text(args.family, receipt.position, receipt.duplicate))
