"""Requests as bytes: their size limit, and decoding them into messages with a refusal the client
can read (gRPC's own deserializer turns a decoding failure into UNKNOWN, without ErrorInfo).

A request that carries a document (a google.protobuf.Struct anywhere inside it) is held to
DOCUMENT_REQUEST_BYTES_MAX, every other one to REQUEST_BYTES_MAX, by its length before it is
decoded at all: protobuf decodes a Struct's maps in time that grows faster than their size.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import message as protobuf_message
from google.protobuf import struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from ledger.domain.errors import Invalid
from ledger.domain.limits import DOCUMENT_REQUEST_BYTES_MAX, REQUEST_BYTES_MAX
from ledger.domain.reasons import Reason
from trainledger.v1 import common_pb2

__all__ = ["request_limit", "check_request_size", "decode"]

_STRUCT = struct_pb2.Struct.DESCRIPTOR.full_name
_STEP_BATCH = common_pb2.StepBatch.DESCRIPTOR.full_name

# Deeper than any document the ledger accepts (Struct, map entry and Value are three levels of
# messages per level of a document), and below protobuf's own limit of 100.
_NESTING_MAX = 64
_FIELDS_READ_MAX = 4_096


def _carries(descriptor: Descriptor, wanted: str, seen: set[str]) -> bool:
    if descriptor.full_name == wanted:
        return True
    seen.add(descriptor.full_name)
    return any(
        field.message_type is not None
        and field.message_type.full_name not in seen
        and _carries(field.message_type, wanted, seen)
        for field in descriptor.fields
    )


def request_limit(descriptor: Descriptor | None) -> tuple[int, Reason]:
    """The size limit of a request of this type on the wire, and the reason of its refusal: what
    makes such a request large (a document, a step batch) names it, as the ledger's own limits do."""
    if descriptor is not None and _carries(descriptor, _STRUCT, set()):
        return DOCUMENT_REQUEST_BYTES_MAX, Reason.DOCUMENT_TOO_LARGE
    if descriptor is not None and _carries(descriptor, _STEP_BATCH, set()):
        return REQUEST_BYTES_MAX, Reason.BATCH_TOO_LARGE
    return REQUEST_BYTES_MAX, Reason.REQUEST_TOO_LARGE


def check_request_size(size: int, limit: tuple[int, Reason]) -> None:
    """Raises Invalid when a request of `size` bytes is above its limit."""
    bytes_max, reason = limit
    if size > bytes_max:
        raise Invalid(f"the request is larger than {bytes_max} bytes", reason=reason, limit=bytes_max, size=size)


def decode(data: bytes, parse: Callable[[bytes], Any], descriptor: Descriptor | None) -> Any:
    """The message `parse` makes of `data`. Raises Invalid: DOCUMENT_TOO_DEEP when the
    bytes nest messages past what any document may, else MALFORMED_REQUEST when they are not a
    message of this type."""
    try:
        return parse(data)
    except protobuf_message.DecodeError:
        pass
    if descriptor is not None and _Nesting(memoryview(data)).too_deep(descriptor):
        raise Invalid("a document in the request is nested too deeply", reason=Reason.DOCUMENT_TOO_DEEP)
    raise Invalid("the request is not a valid protobuf message of its type", reason=Reason.MALFORMED_REQUEST)


class _Malformed(Exception):
    pass


class _Nesting:
    """How deep the messages in bytes that failed to decode are nested, read along the request's
    descriptor; it reads at most _FIELDS_READ_MAX fields and stops at the first it cannot read."""

    def __init__(self, data: memoryview) -> None:
        self.data, self.fields_left = data, _FIELDS_READ_MAX

    def too_deep(self, descriptor: Descriptor) -> bool:
        try:
            return self._too_deep(0, len(self.data), descriptor, 0)
        except _Malformed:
            return False

    def _varint(self, position: int, end: int) -> tuple[int, int]:
        value = shift = 0
        while position < end and shift <= 63:
            byte = self.data[position]
            value |= (byte & 0x7F) << shift
            position, shift = position + 1, shift + 7
            if byte < 0x80:
                return value, position
        raise _Malformed

    def _too_deep(self, position: int, end: int, descriptor: Descriptor, depth: int) -> bool:
        if depth > _NESTING_MAX:
            return True
        while position < end:
            self.fields_left -= 1
            if self.fields_left < 0:
                raise _Malformed
            key, position = self._varint(position, end)
            wire_type = key & 7
            if wire_type == 0:
                _, position = self._varint(position, end)
            elif wire_type in (1, 5):
                position += 8 if wire_type == 1 else 4
            elif wire_type == 2:
                size, position = self._varint(position, end)
                inner_end = position + size
                if inner_end > end:
                    raise _Malformed
                field = descriptor.fields_by_number.get(key >> 3)
                inner = field.message_type if field is not None and field.type == FieldDescriptor.TYPE_MESSAGE else None
                if inner is not None and self._too_deep(position, inner_end, inner, depth + 1):
                    return True
                position = inner_end
            else:
                raise _Malformed
        return False
