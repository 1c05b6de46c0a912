"""The wire fuzzer's parts: hypothesis strategies for every request of trainledger.v1, made from the
message descriptors (extreme integers, huge and unusual text, NaN and infinities, repeated fields at
and past their limits, deep and wide documents, out-of-range times), raw bytes, and a judge that
sends each request through a generic channel with identity serializers and holds every answer to
the contract:

- OK, with an answer that parses as the method's response; or a clear refusal: never UNKNOWN or
  INTERNAL, and always exactly one google.rpc.ErrorInfo with domain "trainledger";
- a refusal records nothing (no event carries the refused call's request id; a refused
  reservation's SpendRefused audit event is the one exception the design makes);
- the server stays up: health answers SERVING after every call.

A read asked to wait for a position the log has not reached may end at its deadline: the fuzzer
gives such reads a short one and accepts DEADLINE_EXCEEDED for them alone. Requests stay below the
server's message size limit (services.server.MESSAGE_SIZE_MAX): gRPC refuses a larger one itself,
RESOURCE_EXHAUSTED without ErrorInfo, before any code of the ledger sees it.
"""

from __future__ import annotations

import functools
import math
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import duration_pb2, message_factory, struct_pb2, timestamp_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from hypothesis import strategies as st

from trainledger.v1 import common_pb2, events_pb2, registry_pb2, runs_pb2, spend_pb2

__all__ = [
    "METHODS",
    "Method",
    "Known",
    "Judge",
    "requests",
    "raw_requests",
    "seed",
    "explore",
    "frames",
    "message_payloads",
    "raw_payloads",
]

MESSAGE_SIZE_MAX = 64 * 1024 * 1024
CALL_TIMEOUT_S = 20.0
# A read that waits for a position beyond the head answers UNAVAILABLE just before its deadline.
WAITING_TIMEOUT_S = 0.5
# A live tail (WatchRun) from a position is read until this deadline: its state, then the events.
LIVE_TIMEOUT_S = 0.2
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT64 = (0, 2**64 - 1)
# The ledger's limits (ledger.domain.limits) and either side of them, and the types' own extremes.
EDGE_INTS = [
    0,
    1,
    -1,
    2,
    7,
    8,
    9,
    255,
    256,
    257,
    1_000,
    4_096,
    4_097,
    9_999,
    10_000,
    10_001,
    2**31 - 1,
    -(2**31),
    2**32,
    2**53,
    2**53 + 1,
    -(2**53) - 1,
    10**13,
    10**13 + 1,
    2**62,
    2**63 - 1,
    -(2**63),
]
NASTY_TEXT = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\x1f",
    "\x7f",
    "\u202e",
    "\ufeff",
    "\U0001f600",
    "é",
    "../../etc/passwd",
    "%s%n",
    "null",
    "NaN",
    "-0",
    "0x10",
    "1e309",
    "run-",
    "\u0000" * 3,
    "a" * 255,
    "a" * 256,
    "a" * 257,
    "\U0001f600" * 256,
    "x" * 4_096,
    "x" * 4_097,
    "é" * 2_049,
    "\u4e00" * 5_000,
]


def ints(bounds: tuple[int, int]) -> st.SearchStrategy[int]:
    low, high = bounds
    return st.one_of(st.sampled_from([n for n in EDGE_INTS if low <= n <= high] + [low, high]), st.integers(low, high))


def text(*, huge: bool = True) -> st.SearchStrategy[str]:
    """Short, unusual and (unless `huge` is False) huge text: valid UTF-8, as protobuf requires."""
    short = st.one_of(st.sampled_from(NASTY_TEXT), st.text(max_size=24))
    if not huge:
        return short
    return st.one_of(
        short,
        st.builds(
            lambda piece, times: piece * times, st.text(min_size=1, max_size=3), st.sampled_from([256, 4_096, 100_000])
        ),
    )


def doubles() -> st.SearchStrategy[float]:
    return st.one_of(
        st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308]),
        st.floats(allow_nan=True, allow_infinity=True),
    )


# Documents (google.protobuf.Struct): nested, wide, and with values JSON has no words for.


def _nested(depth: int, leaf: Any, as_list: bool) -> dict[str, Any]:
    value = leaf
    for level in range(depth):
        value = [value] if as_list and level % 2 else {"k": value}
    return value if isinstance(value, dict) else {"k": value}


def documents() -> st.SearchStrategy[struct_pb2.Struct]:
    leaf = st.one_of(st.none(), st.booleans(), doubles(), text(huge=False))
    tree = st.recursive(
        leaf,
        lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
        max_leaves=12,
    )
    shaped = st.one_of(
        st.dictionaries(st.one_of(st.text(max_size=8), st.sampled_from(NASTY_TEXT)), tree, max_size=5),
        st.builds(_nested, st.sampled_from([7, 8, 9, 10, 16, 30, 40]), st.one_of(leaf, text()), st.booleans()),
        st.builds(
            lambda width, value: {f"key-{i}": value for i in range(width)},
            st.sampled_from([255, 256, 257, 2_000]),
            st.one_of(st.none(), doubles(), st.text(max_size=8)),
        ),
    )

    def struct(document: dict[str, Any]) -> struct_pb2.Struct:
        message = struct_pb2.Struct()
        message.update(document)
        return message

    return shaped.map(struct)


def timestamps() -> st.SearchStrategy[timestamp_pb2.Timestamp]:
    seconds = st.one_of(
        st.sampled_from(
            [
                0,
                -1,
                1,
                -62_135_596_800,
                -62_135_596_801,
                253_402_300_799,
                253_402_300_800,
                1_700_000_000,
                4_102_444_800,
                *INT64,
            ]
        ),
        st.integers(*INT64),
    )
    nanos = st.one_of(st.sampled_from([0, 1, 999_999_999, 1_000_000_000, -1, *INT32]), st.integers(*INT32))
    return st.builds(timestamp_pb2.Timestamp, seconds=seconds, nanos=nanos)


def durations() -> st.SearchStrategy[duration_pb2.Duration]:
    seconds = st.one_of(
        st.sampled_from([0, 1, -1, 600, 86_400 * 366, 315_576_000_000, 315_576_000_001, *INT64]), st.integers(*INT64)
    )
    nanos = st.one_of(st.sampled_from([0, 1, -1, 999_999_999, 1_000_000_000, *INT32]), st.integers(*INT32))
    return st.builds(duration_pb2.Duration, seconds=seconds, nanos=nanos)


# What the server already holds, so that requests reach past "not found".


@dataclass
class Known:
    run_ids: list[str] = field(default_factory=list)
    run_keys: list[str] = field(default_factory=list)
    accounts: list[str] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    reservations: list[str] = field(default_factory=list)
    head: int = 0

    @functools.cached_property
    def pool(self) -> dict[str, st.SearchStrategy[Any]]:
        return self.pools()

    def pools(self) -> dict[str, st.SearchStrategy[Any]]:
        """Values for fields by name: known ids often, anything else otherwise."""

        def of(values: list[Any]) -> st.SearchStrategy[Any]:
            return st.sampled_from(values)

        small = st.integers(0, 3)
        # Mostly positions the log has reached (a read beyond the head waits for its deadline).
        positions = st.integers(0, 24).flatmap(lambda k: ints(INT64) if k == 0 else st.integers(0, max(1, self.head)))
        steps = st.one_of(st.integers(0, 200), ints(INT64))
        return {
            "run_id": of(self.run_ids),
            "source_run_id": of(self.run_ids),
            "run_key": of(self.run_keys),
            "account": of(self.accounts),
            "parent": of(self.accounts),
            "parent_account": of(self.accounts),
            "family": of(self.families),
            "reservation_id": of(self.reservations),
            "charge_id": of(self.reservations),
            "attempt": small,
            "version": small,
            "expected_current": small,
            "min_position": positions,
            "from_position": positions,
            "step": steps,
            "from_step": steps,
            "resume_from_step": steps,
            "source_step": steps,
            "page_size": st.sampled_from([0, 1, 2, 100, 10_000, 10_001, -1]),
            "backend": st.sampled_from(["s3", "local", "tinker", "modal-volume"]),
            "fidelity": st.sampled_from(["weights", "weights+optimizer", "optimizer"]),
            "uri": st.sampled_from(["s3://bucket/ckpt", "file:///tmp/ckpt"]),
            "metrics": st.lists(st.sampled_from(["loss", "eval_loss"]), max_size=2),
            "types": st.lists(st.sampled_from(["StepsRecorded", "SpendReserved", "Run.Opened"]), max_size=2),
            "amount_usd_micro": st.integers(0, 5_000),
            "actual_usd_micro": st.integers(0, 5_000),
            "cap_usd_micro": st.integers(0, 10**9),
        }


# Requests made from the descriptors.

WELL_KNOWN: dict[str, Callable[[], st.SearchStrategy[Any]]] = {
    struct_pb2.Struct.DESCRIPTOR.full_name: documents,
    timestamp_pb2.Timestamp.DESCRIPTOR.full_name: timestamps,
    duration_pb2.Duration.DESCRIPTOR.full_name: durations,
}


def _scalar(field_descriptor: FieldDescriptor) -> st.SearchStrategy[Any]:
    kind = field_descriptor.type
    if kind in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32):
        return ints(INT32)
    if kind in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64):
        return ints(INT64)
    if kind in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return ints(UINT64)
    if kind in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return ints((0, 2**32 - 1))
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return doubles()
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind == FieldDescriptor.TYPE_STRING:
        return text()
    if kind == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=64)
    if kind == FieldDescriptor.TYPE_ENUM:  # Open enums: numbers no value is named for too.
        return st.one_of(st.sampled_from([value.number for value in field_descriptor.enum_type.values]), ints(INT32))
    raise TypeError(f"no strategy for {field_descriptor.full_name}")


def _repeated(
    element: st.SearchStrategy[Any],
    *,
    small: st.SearchStrategy[Any] | None = None,
) -> st.SearchStrategy[list[Any]]:
    """Short lists, and lists at and just past the ledger's limits (256 entries; BATCH_STEPS_MAX
    for numbers), of `small` elements where an element may be large (text, messages)."""
    sizes = [256, 257] if small is not None else [256, 257, 10_000, 10_001]
    return st.one_of(
        st.lists(element, max_size=4),
        st.builds(lambda value, times: [value] * times, element if small is None else small, st.sampled_from(sizes)),
    )


POSITIONS = frozenset({"min_position", "from_position"})


def _map(field_descriptor: FieldDescriptor) -> st.SearchStrategy[dict[Any, Any]]:
    """A map field (string keys, scalar values): a few entries of any value, or 256 and 257
    entries of short values (a map past the ledger's limits, without gigabytes of text)."""
    entry = field_descriptor.message_type
    value = entry.fields_by_name["value"]
    keys, values = _scalar(entry.fields_by_name["key"]), _scalar(value)
    short = text(huge=False) if value.type == FieldDescriptor.TYPE_STRING else values
    return st.one_of(
        st.dictionaries(keys, values, max_size=4),
        st.builds(
            lambda count, item: {f"k{index}": item for index in range(count)}, st.sampled_from([256, 257]), short
        ),
    )


def _value(field_descriptor: FieldDescriptor, known: Known, depth: int) -> st.SearchStrategy[Any]:
    pools = known.pool
    if field_descriptor.message_type is not None and field_descriptor.message_type.GetOptions().map_entry:
        return _map(field_descriptor)
    if field_descriptor.message_type is not None:
        element = messages(field_descriptor.message_type, known, depth + 1)
    else:
        element = _scalar(field_descriptor)
        if field_descriptor.name in POSITIONS:  # Their pool holds the extremes already.
            element = pools[field_descriptor.name]
        elif field_descriptor.name in pools and not field_descriptor.is_repeated:
            element = st.one_of(pools[field_descriptor.name], element)
    if field_descriptor.is_repeated:
        small = None
        if field_descriptor.message_type is not None:
            small = st.just(message_factory.GetMessageClass(field_descriptor.message_type)())
        elif field_descriptor.type == FieldDescriptor.TYPE_STRING:
            small = text(huge=False)
        if field_descriptor.name in pools and field_descriptor.message_type is None:
            return st.one_of(pools[field_descriptor.name], _repeated(element, small=small))
        return _repeated(element, small=small)
    return element


def _build(message_class: type, values: dict[str, Any]) -> Any:
    message = message_class()
    for name, value in values.items():
        if value is None:
            continue
        target = getattr(message, name)
        if isinstance(value, list):
            target.extend(value)
        elif isinstance(value, dict):
            target.update(value)
        elif hasattr(value, "DESCRIPTOR"):
            target.CopyFrom(value)
        else:
            setattr(message, name, value)
    return message


def coherent_batches(known: Known) -> st.SearchStrategy[common_pb2.StepBatch]:
    """Step batches that are well formed apart from one twist: their size at or past the limit, a
    non-finite value, 256 or 257 metric columns, steps going backwards or beyond 2**53."""

    def batch(run_id: str, attempt: int, first: int, size: int, value: float, columns: int, backwards: bool) -> Any:
        steps = list(range(first, first + size))
        if backwards:
            steps.reverse()
        message = common_pb2.StepBatch(run_id=run_id, attempt=attempt, steps=steps, tokens=[64] * size)
        for number in range(columns):
            message.metrics.add(name=f"m{number}", values=[value] * size)
        return message

    # Many steps or many columns, not both: 10,000 steps of 256 columns is more than a message may be.
    shapes = st.one_of(
        st.tuples(st.sampled_from([1, 10, 1_000, 10_000, 10_001]), st.sampled_from([0, 1, 2])),
        st.tuples(st.sampled_from([1, 10]), st.sampled_from([255, 256, 257])),
    )
    return st.builds(
        lambda run_id, attempt, first, shape, value, backwards: batch(
            run_id, attempt, first, shape[0], value, shape[1], backwards
        ),
        st.sampled_from(known.run_ids),
        st.integers(0, 3),
        st.one_of(st.integers(0, 5_000), st.sampled_from([2**53 - 1, 2**53, 2**63 - 10_001])),
        shapes,
        st.one_of(st.just(0.5), doubles()),
        st.booleans(),
    )


def messages(descriptor: Descriptor, known: Known, depth: int = 0) -> st.SearchStrategy[Any]:
    if descriptor.full_name in WELL_KNOWN:
        return WELL_KNOWN[descriptor.full_name]()
    if depth > 3:
        return st.none()
    message_class = message_factory.GetMessageClass(descriptor)
    fields = {f.name: st.one_of(st.none(), _value(f, known, depth)) for f in descriptor.fields}
    built = st.fixed_dictionaries(fields).map(lambda values: _build(message_class, values))
    if descriptor.full_name == common_pb2.StepBatch.DESCRIPTOR.full_name:
        return st.one_of(built, coherent_batches(known))
    return built


def requests(method: Method, known: Known) -> st.SearchStrategy[bytes]:
    """Serialized requests of `method` made from its input descriptor."""
    return messages(method.descriptor.input_type, known).map(lambda message: message.SerializeToString())


def raw_requests(method: Method, known: Known) -> st.SearchStrategy[bytes]:
    """Bytes that are not a well-formed request: random, a valid request cut short or with garbage
    after it, invalid UTF-8 in a string field, a field with the wrong wire type, an endless varint."""
    valid = requests(method, known)
    return st.one_of(
        st.binary(max_size=256),
        st.builds(lambda data, cut: data[: cut % max(1, len(data))], valid, st.integers(0, 2**16)),
        st.builds(lambda data, junk: data + junk, valid, st.binary(min_size=1, max_size=32)),
        st.sampled_from(
            [
                b"\x0a\x02\xff\xfe",
                b"\x0a\x03\xed\xa0\x80",
                b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
                b"\x0a\xff\xff\xff\xff\x0f",
                b"\x0b\x0c",
                b"\x0f",
                b"\x12\x00" * 1_000,
                b"\x1a" * 3,
                b"\x0a\x05hello\x10",
                b"\x00",
                b"\xff" * 64,
            ]
        ),
    )


def message_payloads(method: Method, known: Known) -> st.SearchStrategy[bytes | list[bytes]]:
    """What one call of `method` sends: a request, or a few frames for a client stream."""
    strategy = requests(method, known)
    return st.lists(strategy, max_size=4) if method.client_streaming else strategy


def raw_payloads(method: Method, known: Known) -> st.SearchStrategy[bytes | list[bytes]]:
    """Bytes that are no request; for a client stream, after a well-formed frame or two."""
    strategy = raw_requests(method, known)
    if not method.client_streaming:
        return strategy
    return st.tuples(st.lists(requests(method, known), max_size=2), strategy).map(lambda parts: [*parts[0], parts[1]])


# The methods of trainledger.v1 and how each is called.


@dataclass(frozen=True)
class Method:
    descriptor: MethodDescriptor

    @property
    def path(self) -> str:
        return f"/{self.descriptor.containing_service.full_name}/{self.descriptor.name}"

    @property
    def name(self) -> str:
        return f"{self.descriptor.containing_service.name}.{self.descriptor.name}"

    @property
    def response_class(self) -> type:
        return message_factory.GetMessageClass(self.descriptor.output_type)

    @property
    def client_streaming(self) -> bool:
        return self.descriptor.client_streaming

    @property
    def server_streaming(self) -> bool:
        return self.descriptor.server_streaming

    @property
    def live(self) -> bool:
        """A stream that never ends by itself (a live tail)."""
        return self.name == "Runs.WatchRun"


METHODS = tuple(
    Method(method)
    for module in (runs_pb2, spend_pb2, registry_pb2, events_pb2)
    for service in module.DESCRIPTOR.services_by_name.values()
    for method in service.methods
)


# The judge.


@dataclass
class Answer:
    code: grpc.StatusCode
    details: str = ""
    problem: str = ""  # Why the answer is not clear, or "".
    acks: int = 0  # Streamed answers read before the end (RecordSteps: acks of new batches).


class Judge:
    """Sends requests over one channel and holds every answer to the contract (module docstring).
    `unclear` lists every answer that broke it; `requests` counts the calls sent."""

    def __init__(self, address: str, known: Known | None = None) -> None:
        self.known = known or Known()
        self.channel = grpc.insecure_channel(
            address,
            options=[
                ("grpc.max_receive_message_length", MESSAGE_SIZE_MAX),
                ("grpc.max_send_message_length", MESSAGE_SIZE_MAX),
            ],
        )
        self.health = health_pb2_grpc.HealthStub(self.channel)
        self.events = self.channel.unary_stream("/trainledger.v1.Events/ReadEvents")
        self.requests = 0
        self.unclear: list[str] = []
        self.head = self.known.head = self._read_head(0)

    def close(self) -> None:
        self.channel.close()

    def _read_head(self, after: int) -> int:
        head = after
        for event in self.events_after(after):
            head = event.position
        return head

    def events_after(self, position: int) -> Iterator[events_pb2.Event]:
        """The log after `position`, read in pages."""
        while True:
            request = events_pb2.ReadEventsRequest(from_position=position + 1, limit=1_000)
            page = [
                events_pb2.Event.FromString(data)
                for data in self.events(request.SerializeToString(), timeout=CALL_TIMEOUT_S)
            ]
            yield from page
            if len(page) < 1_000:
                return
            position = page[-1].position

    def send(self, method: Method, payload: bytes | list[bytes], *, cancel_after: int | None = None) -> Answer:
        """One call of `method` with `payload` (a list of frames for a client stream); judged."""
        self.requests += 1
        request_id = f"fuzz-{uuid.uuid4()}"
        waits = self._waits(method, payload)
        if method.live and not waits:  # A tail from the current state: its first answer will do.
            cancel_after = 1 if cancel_after is None else cancel_after
        timeout_s = (LIVE_TIMEOUT_S if method.live else WAITING_TIMEOUT_S) if waits else CALL_TIMEOUT_S
        metadata = (("x-request-id", request_id), ("x-principal", "fuzz"))
        answer = self._call(method, payload, timeout_s, metadata, cancel_after)
        if answer.code == grpc.StatusCode.DEADLINE_EXCEEDED and waits:
            # The read waited, as asked, for a position the log has not reached (or a live tail
            # from a position, for the run's next event).
            answer.problem = ""
        self._judge_log(method, request_id, answer)
        self.check_health(method)
        if answer.problem:
            shown = payload if isinstance(payload, bytes) else b"|".join(payload)
            self.unclear.append(
                f"{method.name}: {answer.problem} ({answer.code.name}: {answer.details[:300]!r}); "
                f"request {shown[:200]!r}{'...' if len(shown) > 200 else ''} ({len(shown)} bytes)"
            )
        return answer

    def _waits(self, method: Method, payload: bytes | list[bytes]) -> bool:
        if not isinstance(payload, bytes):
            return False
        try:
            request = message_factory.GetMessageClass(method.descriptor.input_type).FromString(payload)
        except Exception:  # Not a request at all: it waits for nothing.
            return False
        if method.live:
            return request.from_position != 0
        return "min_position" in request.DESCRIPTOR.fields_by_name and request.min_position > self.head

    def _call(
        self,
        method: Method,
        payload: bytes | list[bytes],
        timeout_s: float,
        metadata: tuple[tuple[str, str], ...],
        cancel_after: int | None,
    ) -> Answer:
        parse = method.response_class.FromString
        try:
            if method.client_streaming:
                frames = [payload] if isinstance(payload, bytes) else payload
                call = self.channel.stream_stream(method.path)(iter(frames), timeout=timeout_s, metadata=metadata)
                return self._read_stream(call, parse, cancel_after, new_only=True)
            if method.server_streaming:
                call = self.channel.unary_stream(method.path)(payload, timeout=timeout_s, metadata=metadata)
                return self._read_stream(call, parse, cancel_after, new_only=False)
            data = self.channel.unary_unary(method.path)(payload, timeout=timeout_s, metadata=metadata)
        except grpc.RpcError as error:
            return self._refusal(error)
        return Answer(grpc.StatusCode.OK, problem=_unparsable(parse, data))

    def _read_stream(
        self, call: Any, parse: Callable[[bytes], Any], cancel_after: int | None, new_only: bool
    ) -> Answer:
        acks, problem = 0, ""
        try:
            for data in call:
                problem = problem or _unparsable(parse, data)
                if not problem and not (new_only and parse(data).duplicate):
                    acks += 1
                if cancel_after is not None and acks >= cancel_after:
                    call.cancel()
                    return Answer(grpc.StatusCode.CANCELLED, problem=problem, acks=acks)
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.CANCELLED and cancel_after is not None:
                return Answer(grpc.StatusCode.CANCELLED, problem=problem, acks=acks)
            answer = self._refusal(error)
            answer.acks, answer.problem = acks, problem or answer.problem
            return answer
        return Answer(grpc.StatusCode.OK, problem=problem, acks=acks)

    @staticmethod
    def _refusal(error: grpc.RpcError) -> Answer:
        code, details = error.code(), error.details() or ""
        answer = Answer(code, details)
        if code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL):
            answer.problem = f"{code.name} is not a clear answer"
            return answer
        try:
            status = rpc_status.from_call(error)
        except ValueError as mismatch:
            answer.problem = f"its google.rpc.Status does not match the call's status: {mismatch}"
            return answer
        infos = []
        for detail in status.details if status is not None else ():
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                infos.append(info)
        if len(infos) != 1 or infos[0].domain != "trainledger" or not infos[0].reason:
            answer.problem = f"a refusal must carry one ErrorInfo of domain trainledger, not {infos}"
        else:
            answer.details = f"{infos[0].reason}: {details}"
        return answer

    def _judge_log(self, method: Method, request_id: str, answer: Answer) -> None:
        """A refusal records nothing but its own audit record; a stream records one event per new
        batch it acked."""
        head = self.head
        mine = []
        for event in self.events_after(head):
            self.head = self.known.head = event.position
            if event.request_id == request_id:
                mine.append(event)
        if method.client_streaming:
            if len(mine) != answer.acks and answer.code != grpc.StatusCode.CANCELLED:
                answer.problem = answer.problem or f"{len(mine)} events recorded for {answer.acks} new acks"
            return
        if answer.code == grpc.StatusCode.OK:
            return
        # Refusals recorded for audit: a reservation at its cap, a promotion refused by its gate
        # or by a lost compare-and-set.
        audit = [
            e
            for e in mine
            if (e.type.endswith("SpendRefused") and answer.details.startswith("SPEND_CAP_EXCEEDED"))
            or (
                e.type.endswith("PromotionRefused")
                and answer.details.startswith(("GATE_NOT_PASSED", "CURRENT_VERSION_MOVED"))
            )
        ]
        if len(mine) != len(audit):
            answer.problem = answer.problem or f"a refusal recorded {[e.type for e in mine]}"

    def check_health(self, method: Method) -> None:
        """Health must answer SERVING (after a call of `method`); raises AssertionError when the
        server is gone."""
        try:
            status = self.health.Check(health_pb2.HealthCheckRequest(), timeout=CALL_TIMEOUT_S).status
        except grpc.RpcError as error:
            self.unclear.append(f"after {method.name} health did not answer: {error.code().name}")
            raise AssertionError(f"the server went away after a call of {method.name}") from None
        if status != health_pb2.HealthCheckResponse.SERVING:
            name = health_pb2.HealthCheckResponse.ServingStatus.Name(status)
            self.unclear.append(f"after {method.name} health is {name}")


def _unparsable(parse: Callable[[bytes], Any], data: bytes) -> str:
    try:
        parse(data)
    except Exception as error:
        return f"an OK answer that is not the method's response: {error}"
    return ""


def seed(address: str) -> Known:
    """A run with steps, a checkpoint and a pending hold, a capped parent account, a finished run,
    and a family with a promoted version: what fuzzed requests name, so they reach past NOT_FOUND."""
    from tests.service.support import Stubs, batch

    known = Known()
    with grpc.insecure_channel(address) as channel:
        stubs = Stubs(channel)
        stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account="team", cap_usd_micro=50_000), timeout=10)
        for name, cap in (("fuzz-live", 10_000), ("fuzz-done", None)):
            opened = stubs.runs.OpenRun(
                runs_pb2.OpenRunRequest(run_key=name, name=name, cap_usd_micro=cap, parent_account="team"), timeout=10
            )
            run_id = opened.state.run.run_id
            stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), timeout=10)
            stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(100))), timeout=10)
            stubs.runs.SaveCheckpoint(
                runs_pb2.SaveCheckpointRequest(
                    run_id=run_id, attempt=1, step=50, handle=common_pb2.StateHandle(backend="s3", uri="s3://b/50")
                ),
                timeout=10,
            )
            known.run_ids.append(run_id)
            known.run_keys.append(name)
            known.accounts.append(run_id)
        stubs.spend.Reserve(
            spend_pb2.ReserveRequest(account=known.run_ids[0], reservation_id="held", amount_usd_micro=1_000),
            timeout=10,
        )
        stubs.runs.FinishRun(
            runs_pb2.FinishRunRequest(run_id=known.run_ids[1], attempt=1, status=common_pb2.RUN_STATUS_DONE), timeout=10
        )
        for number in (1, 2):
            stubs.registry.Register(
                registry_pb2.RegisterRequest(
                    family="fuzz-family", artifact_uri=f"s3://m/{number}", digest=f"sha256:{number:064d}"
                ),
                timeout=10,
            )
        stubs.registry.Promote(
            registry_pb2.PromoteRequest(
                family="fuzz-family",
                version=1,
                expected_current=0,
                verdict=registry_pb2.GateVerdict(passed=True, reason="checked"),
            ),
            timeout=10,
        )
    known.accounts += ["team", "nobody"]
    known.families += ["fuzz-family", "no-family"]
    known.reservations += ["held", "fresh"]
    known.run_ids.append(str(uuid.uuid4()))
    return known


def explore(judge: Judge, method: Method, strategy: st.SearchStrategy[Any], examples: int) -> None:
    """Send `examples` requests drawn from `strategy` without stopping at an unclear answer (they
    collect in judge.unclear): for runs that count rather than shrink."""
    from hypothesis import HealthCheck, Phase, given, settings

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(payload=strategy)
    def send(payload: Any) -> None:
        judge.send(method, payload)

    send()


def frames(batches: Iterable[common_pb2.StepBatch]) -> list[bytes]:
    return [
        runs_pb2.RecordStepsRequest(sequence=number, batch=batch).SerializeToString()
        for number, batch in enumerate(batches, start=1)
    ]
