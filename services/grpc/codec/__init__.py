"""The one codec between trainledger.v1 messages and the ledger's values: `values` decodes
requests and encodes small values, `pages` handles page sizes and tokens, `messages` encodes the
ledger's read models (ledger.views.models) and events, `changes` WatchRun's state messages."""

from services.grpc.codec import messages
from services.grpc.codec.values import (
    Document,
    basis,
    basis_message,
    batch_kwargs,
    batch_message,
    billed_lines,
    dataset_kwargs,
    dataset_role_enum,
    document,
    duration,
    moment,
    objective,
    objective_message,
    optional,
    status_enum,
    status_name,
    struct,
    timestamp,
)
from services.runtime.paging import (
    decode_token,
    encode_token,
    page_size,
    position_after,
    position_token,
    runs_after,
    runs_token,
)

__all__ = [
    "messages",
    "Document",
    "basis",
    "basis_message",
    "batch_kwargs",
    "batch_message",
    "billed_lines",
    "dataset_kwargs",
    "dataset_role_enum",
    "decode_token",
    "document",
    "duration",
    "encode_token",
    "moment",
    "objective",
    "objective_message",
    "optional",
    "page_size",
    "position_after",
    "position_token",
    "runs_after",
    "runs_token",
    "status_enum",
    "status_name",
    "struct",
    "timestamp",
]
