"""The forward_backward bodies in the SDK's own protobuf types: decoding a request, summarising
it for the record, and making the output with a made-up loss."""

from __future__ import annotations

from typing import Any


def decode_body(raw: bytes, headers: dict[str, str]) -> bytes:
    if headers.get("content-encoding") == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    return raw


def decode_fwdbwd(raw: bytes) -> Any:
    from tinker.proto import tinker_public_pb2 as pb

    msg = pb.ForwardBackwardRequest()
    msg.ParseFromString(raw)
    return msg


def _datum_tokens(datum: Any) -> int:
    n = 0
    for chunk in datum.model_input:
        if chunk.WhichOneof("chunk") == "encoded_text":
            n += len(chunk.encoded_text.tokens) // 4  # int32
    return n


def _target_count(datum: Any) -> int:
    import numpy as np

    if "target_tokens" in datum.loss_fn_inputs:
        t = datum.loss_fn_inputs["target_tokens"]
        if t.shape:
            return int(np.prod(list(t.shape)))
        return len(t.dense) // 8
    return _datum_tokens(datum)


def summarize_fwdbwd(req: Any) -> dict[str, Any]:
    if isinstance(req, (bytes, bytearray)):
        req = decode_fwdbwd(bytes(req))
    return {
        "model_id": req.model_id,
        "seq_id": req.seq_id,
        "loss_fn": req.loss_fn,
        "forward_only": bool(req.forward_only),
        "n_datums": len(req.data),
        "n_tokens": sum(_datum_tokens(d) for d in req.data),
        "n_targets": sum(_target_count(d) for d in req.data),
    }


def fwdbwd_output(req: Any, loss_per_token: float) -> bytes:
    """ForwardBackwardOutput proto: metrics loss:sum, and per-datum 'logprobs' (float32)."""
    import numpy as np
    from tinker.proto import tinker_public_pb2 as pb

    counts = [_target_count(d) for d in req.data]
    out = pb.ForwardBackwardOutput()
    out.loss_fn_output_type = "ArrayRecord"
    out.metrics["loss:sum"] = float(loss_per_token * sum(counts))
    record = out.loss_fn_outputs.add()
    record.type_tag = "ArrayRecord"
    record.num_datums = len(counts)
    values = np.full(sum(counts), -loss_per_token, dtype=np.float32)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64) * 4
    bt = record.fields["logprobs"]
    bt.data = values.tobytes()
    bt.offsets = offsets.tobytes()
    bt.dtype = pb.DTYPE_FLOAT32
    return out.SerializeToString()
