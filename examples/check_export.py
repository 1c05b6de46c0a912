"""Check an exported trainledger log without trainledger: recompute its hash chain from each event's
stored bytes and compare every digest. Python's standard library only.

    trainledger events export --db trainledger.db > log.jsonl
    python examples/check_export.py log.jsonl [--expect-head POSITION:DIGEST]

Each line of an export is one event, in position order, with (among its decoded fields) its
`position`, `originator_id` (a UUID), `originator_version`, the stored `topic`, the `stored` bytes
(base64) and its `digest` (64 lowercase hex characters). The chain (ledger/storage/chain.py):

    digest(0) = 32 zero bytes
    digest(n) = SHA-256(digest(n-1) || position (8 bytes, big-endian) || aggregate id (16 bytes)
                        || version (8) || len(topic) (8) || topic (UTF-8) || len(state) (8) || state)

where n-1 is the event before n in the log. A whole export (from position 1, every type) is
checked from the genesis; an export that starts later needs the digest before its first event
(`--previous DIGEST`). With --expect-head, the chain must also pass through a head written down
earlier (POSITION:DIGEST, as `trainledger verify` and GetHead print it).

Prints OK with the head (position:digest) and exits 0, or the first bad position and exits 1;
a file that cannot be read, or bad arguments, exit 2. What it proves: the stored bytes of each
event are the ones that were sealed, in that order. The decoded fields of a line (`data`,
`principal` ...) are a reading of those bytes (MessagePack); this script does not decode them.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import struct
import sys
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

GENESIS = bytes(32)
_FIXED = struct.Struct(">32sQ16sQQ")
_LENGTH = struct.Struct(">Q")


class Broken(Exception):
    """The first bad position of the export, and why."""

    def __init__(self, position: int | str, why: str) -> None:
        super().__init__(f"BROKEN at position {position}: {why}")


def link(previous: bytes, event: dict[str, Any]) -> bytes:
    """The digest of one event chained after `previous`."""
    topic = event["topic"].encode()
    state = base64.b64decode(event["stored"], validate=True)
    fixed = _FIXED.pack(
        previous, event["position"], uuid.UUID(event["originator_id"]).bytes, event["originator_version"], len(topic)
    )
    return hashlib.sha256(fixed + topic + _LENGTH.pack(len(state)) + state).digest()


def events(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The events of an export, one per non-empty line."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
            if not isinstance(event, dict) or not isinstance(event.get("position"), int):
                raise ValueError("no position")
        except ValueError as error:
            raise Broken(f"? (line {number})", f"not an exported event: {error}") from None
        yield event


def check(lines: Iterable[str], previous: bytes = GENESIS, expect: tuple[int, str] | None = None) -> tuple[int, str]:
    """Recompute the chain over the export; the head (position, digest hex). Raises Broken."""
    position, digest, passed = 0, previous, expect is None
    for event in events(lines):
        at = event["position"]
        if at <= position:
            raise Broken(at, f"out of order: after position {position}")
        try:
            digest = link(digest, event)
        except (KeyError, TypeError, ValueError, binascii.Error, struct.error) as error:
            raise Broken(at, f"missing or malformed field: {error!r}") from None
        if digest.hex() != event.get("digest"):
            raise Broken(at, "the digest recomputed from the stored bytes differs from the exported digest")
        position = at
        if expect is not None and at == expect[0]:
            if digest.hex() != expect[1]:
                raise Broken(at, f"the chain does not pass through the expected head {expect[0]}:{expect[1]}")
            passed = True
    if not passed and expect is not None:
        raise Broken(expect[0], "the export has no event at the expected head's position")
    return position, digest.hex()


def head_argument(text: str) -> tuple[int, str]:
    position, _, digest = text.partition(":")
    if not position.isdigit() or len(digest) != 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not POSITION:DIGEST")
    return int(position), digest.lower()


def digest_argument(text: str) -> bytes:
    try:
        digest = bytes.fromhex(text)
    except ValueError:
        digest = b""
    if len(digest) != len(GENESIS):
        raise argparse.ArgumentTypeError(f"{text!r} is not a digest (64 hex characters)")
    return digest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Recompute the hash chain of a trainledger export.")
    parser.add_argument("export", help="the JSON lines of `trainledger events export` ('-' for stdin)")
    parser.add_argument("--expect-head", type=head_argument, metavar="POSITION:DIGEST")
    parser.add_argument("--previous", type=digest_argument, default=GENESIS, metavar="DIGEST")
    args = parser.parse_args(argv)
    try:
        with sys.stdin if args.export == "-" else open(args.export, encoding="utf-8") as lines:
            position, digest = check(lines, args.previous, args.expect_head)
    except OSError as error:
        print(f"check_export: cannot read {args.export}: {error}", file=sys.stderr)
        return 2
    except Broken as broken:
        print(broken)
        return 1
    print(f"OK: head {position}:{digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
