"""Limits on everything that comes in, and the validators that enforce them.

Every command checks its input here before anything is recorded, so a refused command leaves the
log unchanged. The numbers are deliberately generous for real trainers and small enough that no
single request can hurt the server, and what accumulates (a run's merged summary) is capped too, so
that every write accepted can be read back in one answer.

Identifiers (run keys, run ids, account names, families, reservation, charge and attempt ids,
backends, token classes) have one form, checked by check_id and refused, never rewritten:
- at most ID_LENGTH_MAX characters: letters, digits (of any script), combining marks after a
  letter, and `. _ : @ / + - =` (INVALID_FIELD otherwise: no spaces, controls, zero-width, bidi or
  other format characters, no symbols);
- no `.` or `..` segment between slashes (INVALID_FIELD);
- Unicode NFC (NOT_NORMALIZED: the client normalises, the ledger never changes an id);
- no lookalikes (CONFUSABLE_IDENTIFIER): no compatibility characters (fullwidth, ligatures,
  mathematical letters: the NFKC form must be the same), no mix of letters from two of the Latin,
  Cyrillic, Greek, Armenian, Cherokee and Coptic scripts, and no word spelled only with Cyrillic or
  Greek letters that look Latin.
Free text (names, labels, reasons, URIs, principals) is checked by check_text: no C0 or C1 control
characters (line breaks and tabs included), no Unicode line or paragraph separators and no bidi
embeddings, overrides or isolates (INVALID_TEXT). Documents (spec, summary, metadata, gate stats)
are data, checked by check_document: bounded in entries, depth and bytes; their strings may hold
any character but NUL.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ledger.domain.errors import Invalid
from ledger.domain.reasons import Reason
from trainledger.pricing import USD_MICRO_MAX
from trainledger.text import usd_text

__all__ = [
    "BATCH_STEPS_MAX",
    "METRICS_PER_BATCH_MAX",
    "STRING_LENGTH_MAX",
    "ID_LENGTH_MAX",
    "MAP_ENTRIES_MAX",
    "ERROR_LENGTH_MAX",
    "USD_MICRO_MAX",
    "PAGE_SIZE_MAX",
    "PARENT_DEPTH_MAX",
    "DOCUMENT_DEPTH_MAX",
    "REQUEST_BYTES_MAX",
    "DOCUMENT_REQUEST_BYTES_MAX",
    "REQUEST_BYTES_IN_FLIGHT_MAX",
    "DOCUMENT_BYTES_MAX",
    "SUMMARY_BYTES_MAX",
    "BATCH_BYTES_MAX",
    "PAGE_BYTES_MAX",
    "EXPIRED_CHECKPOINTS_LISTED",
    "check_id",
    "check_reference",
    "check_text",
    "texts_pass",
    "check_name",
    "document_bytes",
    "check_document_bytes",
    "check_usd_micro",
    "check_int",
    "check_document",
]

BATCH_STEPS_MAX = 10_000
METRICS_PER_BATCH_MAX = 256
STRING_LENGTH_MAX = 4_096
ID_LENGTH_MAX = 256
MAP_ENTRIES_MAX = 256
DOCUMENT_DEPTH_MAX = 8
ERROR_LENGTH_MAX = 2_000
# USD_MICRO_MAX (ten million dollars in one amount: far above any single training call, far below
# int64) is the cost rule's own limit, trainledger.pricing's, so an amount and its recomputation agree.
STEP_MAX = 2**53
PAGE_SIZE_MAX = 10_000
PARENT_DEPTH_MAX = 8
# One request on the wire: a batch of 1,000 steps with 256 metrics is about 2 MiB.
REQUEST_BYTES_MAX = 8 * 1024 * 1024
# A request that carries a document (spec, summary, metadata, gate stats): protobuf decodes a
# Struct's maps in time that grows faster than their size, so these are held far lower.
DOCUMENT_REQUEST_BYTES_MAX = 256 * 1024
# All requests the server holds at once: decoding and recording one costs about ten times its
# bytes on the wire in memory.
REQUEST_BYTES_IN_FLIGHT_MAX = 64 * 1024 * 1024
# One document (a spec, a summary note, metadata, a gate verdict) as JSON.
DOCUMENT_BYTES_MAX = 64 * 1024
# A run's summary as its notes merge into it, as JSON: RunState carries it whole.
SUMMARY_BYTES_MAX = 256 * 1024
# A step batch's columns at 8 bytes a number (steps, tokens, usd_micro, metric values and
# indexes) plus its metric names: the batch's event as JSON then takes at most about 10 MiB, under
# the 16 MiB that one answer may carry (a number is at most 25 characters of JSON).
BATCH_BYTES_MAX = 3 * 1024 * 1024
# A page that can hold many or large items (a series page, a page of registry versions) ends
# once it would pass this many bytes, under the 4 MiB that gRPC clients accept by default.
PAGE_BYTES_MAX = 3 * 1024 * 1024
# RunState lists the checkpoints that expired most recently, and counts them all.
EXPIRED_CHECKPOINTS_LISTED = 16

_encode_json = msgspec.json.Encoder().encode
_ID_ASCII = re.compile(r"[A-Za-z0-9._:@/+=\-]+")
_ID_PUNCTUATION = frozenset("._:@/+=-")
_ID_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nd"})
_MARK_CATEGORIES = frozenset({"Mn", "Mc"})
# Text never holds these: C0 and C1 controls, DEL, line and paragraph separators, the bidi
# embeddings, overrides and isolates that reorder what a terminal shows, and lone surrogates
# (which no UTF-8 store can hold).
_TEXT_REFUSED = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# Scripts whose letters pass for one another; an identifier takes its letters from one of them.
_LOOKALIKE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC"})
# Cyrillic and Greek letters drawn like Latin ones: a word of these alone reads as a Latin word.
_LATIN_LOOKALIKES = frozenset("аеорсухіјѕһԁԛԝӏүАВЕКМНОРСТХІЈЅУҮԚԜӀοϲϳΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹ")


def check_id(value: Any, field: str, *, required: bool = True) -> str:
    """An identifier (see the module's docstring): returned unchanged, else Invalid
    with reason MISSING_FIELD, STRING_TOO_LONG, INVALID_FIELD, NOT_NORMALIZED or
    CONFUSABLE_IDENTIFIER."""
    text = check_reference(value, field, required=required)
    if not text:
        return text
    if _ID_ASCII.fullmatch(text) is None:
        # Only identifiers beyond plain ASCII letters, digits and punctuation pay for the rest.
        _check_id_characters(text, field)
    if "." in text and any(segment in (".", "..") for segment in text.split("/")):
        raise Invalid(f"{field} has a . or .. segment", reason=Reason.INVALID_FIELD, field=field)
    if not text.isascii():
        _check_id_unicode(text, field)
    return text


def check_reference(value: Any, field: str, *, required: bool = True) -> str:
    """An identifier that names something which may already exist (an account, a family, a run,
    a reservation to settle): bounded like any identifier and free of control characters, but
    not held to the character rules of check_id, so that what was named before those rules stays
    reachable. Whatever is created under a new name goes through check_id."""
    if not isinstance(value, str):
        raise Invalid(f"{field} must be a string", reason=Reason.INVALID_FIELD, field=field)
    if not value:
        if required:
            raise Invalid(f"{field} is required", reason=Reason.MISSING_FIELD, field=field)
        return ""
    if len(value) > ID_LENGTH_MAX:
        raise Invalid(
            f"{field} is longer than {ID_LENGTH_MAX} characters",
            reason=Reason.STRING_TOO_LONG,
            field=field,
            limit=ID_LENGTH_MAX,
        )
    if not value.isprintable():
        raise Invalid(f"{field} contains characters that are not printable", reason=Reason.INVALID_FIELD, field=field)
    return value


def _check_id_characters(value: str, field: str) -> None:
    previous = ""
    for character in value:
        if character.isascii():
            allowed = character.isalnum() or character in _ID_PUNCTUATION
        elif unicodedata.category(character) in _MARK_CATEGORIES:
            # A combining mark belongs on a letter (or on the marks already on it).
            allowed = bool(previous) and (previous.isalpha() or unicodedata.category(previous) in _MARK_CATEGORIES)
        else:
            allowed = unicodedata.category(character) in _ID_CATEGORIES
        if not allowed:
            raise Invalid(
                f"{field} holds {_name(character)}: identifiers take letters, digits and . _ : @ / + - =",
                reason=Reason.INVALID_FIELD,
                field=field,
                character=f"U+{ord(character):04X}",
            )
        previous = character


def _check_id_unicode(value: str, field: str) -> None:
    if not unicodedata.is_normalized("NFC", value):
        raise Invalid(f"{field} is not in Unicode NFC form", reason=Reason.NOT_NORMALIZED, field=field)
    if not unicodedata.is_normalized("NFKC", value):
        raise Invalid(
            f"{field} holds compatibility characters that look like others",
            reason=Reason.CONFUSABLE_IDENTIFIER,
            field=field,
        )
    letters = [character for character in value if character.isalpha()]
    scripts = {unicodedata.name(character, "").split(" ", 1)[0] for character in letters} & _LOOKALIKE_SCRIPTS
    if len(scripts) > 1:
        raise Invalid(
            f"{field} mixes letters of the {' and '.join(sorted(scripts))} scripts",
            reason=Reason.CONFUSABLE_IDENTIFIER,
            field=field,
        )
    if letters and scripts <= {"CYRILLIC", "GREEK"} and all(c in _LATIN_LOOKALIKES for c in letters):
        raise Invalid(
            f"{field} is spelled with letters that look Latin", reason=Reason.CONFUSABLE_IDENTIFIER, field=field
        )


def _name(character: str) -> str:
    return f"U+{ord(character):04X} {unicodedata.name(character, '')}".rstrip()


def check_text(value: Any, field: str, *, limit: int = STRING_LENGTH_MAX) -> str:
    """Free text of at most `limit` characters (may be empty), without control characters, line
    separators or bidi embeddings, overrides and isolates (INVALID_TEXT)."""
    if not isinstance(value, str):
        raise Invalid(f"{field} must be a string", reason=Reason.INVALID_FIELD, field=field)
    if len(value) > limit:
        raise Invalid(
            f"{field} is longer than {limit} characters",
            reason=Reason.STRING_TOO_LONG,
            field=field,
            limit=limit,
        )
    refused = _TEXT_REFUSED.search(value)
    if refused is not None:
        raise Invalid(
            f"{field} holds {_name(refused.group())}: text takes no control, line separator or bidi characters",
            reason=Reason.INVALID_TEXT,
            field=field,
            character=f"U+{ord(refused.group()):04X}",
        )
    return value


def texts_pass(values: list[Any], limit: int) -> bool:
    """Whether every value would pass check_text with `limit`, settled for a whole column at once;
    False says only that one of them may not (check_text then names it)."""
    if not all(type(value) is str for value in values):
        return False
    if max(map(len, values), default=0) > limit:
        return False
    return _TEXT_REFUSED.search(" ".join(values)) is None


def check_name(value: Any, field: str) -> str:
    """A name that is not an identifier (a metric's): non-empty text of at most ID_LENGTH_MAX
    characters, under check_text's rules."""
    check_text(value, field, limit=ID_LENGTH_MAX)
    if not value:
        raise Invalid(f"{field} is required", reason=Reason.MISSING_FIELD, field=field)
    return value  # type: ignore[no-any-return]


def check_int(value: Any, field: str, *, minimum: int = 0, maximum: int = STEP_MAX) -> int:
    """An integer within [minimum, maximum]; bools and floats are refused."""
    if type(value) is not int:
        raise Invalid(f"{field} must be an integer", reason=Reason.INVALID_FIELD, field=field)
    if value < minimum or value > maximum:
        raise Invalid(
            f"{field} must be between {minimum} and {maximum}",
            reason=Reason.OUT_OF_RANGE,
            field=field,
        )
    return value


def check_usd_micro(value: Any, field: str) -> int:
    """Money: integer micro-dollars, never negative, never a float."""
    if type(value) is not int:
        raise Invalid(f"{field} must be integer micro-dollars", reason=Reason.INVALID_AMOUNT, field=field)
    if value < 0:
        raise Invalid(f"{field} must not be negative", reason=Reason.NEGATIVE_AMOUNT, field=field)
    if value > USD_MICRO_MAX:
        raise Invalid(
            f"{field} is above the limit of {usd_text(USD_MICRO_MAX)}",
            reason=Reason.AMOUNT_TOO_LARGE,
            field=field,
        )
    return value


def check_document(value: Any, field: str) -> dict[str, Any]:
    """A free-form JSON-like document (spec, summary, metadata): string keys; values None,
    bool, int, finite float, string, or lists and documents of those, bounded in entries, depth
    and bytes (DOCUMENT_BYTES_MAX as JSON: DOCUMENT_TOO_LARGE)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Invalid(f"{field} must be a mapping", reason=Reason.INVALID_FIELD, field=field)
    document: dict[str, Any] = _check_node(value, field, 0)
    check_document_bytes(document, field, DOCUMENT_BYTES_MAX, Reason.DOCUMENT_TOO_LARGE)
    return document


def document_bytes(value: Any) -> int:
    """The size of a checked document as JSON."""
    return len(_encode_json(value))


def check_document_bytes(value: Any, field: str, limit: int, reason: Reason) -> None:
    """Refuses (Invalid with `reason`) a document larger than `limit` bytes as JSON."""
    size = document_bytes(value)
    if size > limit:
        raise Invalid(
            f"{field} takes {size} bytes as JSON, above the limit of {limit}",
            reason=reason,
            field=field,
            limit=limit,
            size=size,
        )


def _check_node(value: Any, field: str, depth: int) -> Any:
    if depth > DOCUMENT_DEPTH_MAX:
        raise Invalid(f"{field} is nested too deeply", reason=Reason.DOCUMENT_TOO_DEEP, field=field)
    if value is None or isinstance(value, bool | int | str):
        if isinstance(value, str) and len(value) > STRING_LENGTH_MAX:
            raise Invalid(f"a string in {field} is too long", reason=Reason.STRING_TOO_LONG, field=field)
        if isinstance(value, str) and "\x00" in value:
            raise Invalid(f"a string in {field} contains a NUL character", reason=Reason.INVALID_FIELD, field=field)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
            raise Invalid(f"an integer in {field} is out of range", reason=Reason.OUT_OF_RANGE, field=field)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Invalid(f"{field} holds a non-finite number", reason=Reason.NON_FINITE_VALUE, field=field)
        return value
    if isinstance(value, Mapping):
        if len(value) > MAP_ENTRIES_MAX:
            raise Invalid(
                f"{field} has more than {MAP_ENTRIES_MAX} entries",
                reason=Reason.MAP_TOO_LARGE,
                field=field,
                limit=MAP_ENTRIES_MAX,
            )
        result = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key or len(key) > ID_LENGTH_MAX or "\x00" in key:
                raise Invalid(f"{field} has an invalid key", reason=Reason.INVALID_FIELD, field=field)
            result[key] = _check_node(item, field, depth + 1)
        return result
    if isinstance(value, Sequence):
        if len(value) > MAP_ENTRIES_MAX:
            raise Invalid(
                f"a list in {field} has more than {MAP_ENTRIES_MAX} items",
                reason=Reason.MAP_TOO_LARGE,
                field=field,
            )
        return [_check_node(item, field, depth + 1) for item in value]
    raise Invalid(f"{field} holds a value of type {type(value).__name__}", reason=Reason.INVALID_FIELD, field=field)
