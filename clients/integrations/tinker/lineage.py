"""A Tinker training started from another run's checkpoint (create_lora_training_client's
`source_checkpoint`): the run records the checkpoint as its source when it is opened, and the new
model is made from the checkpoint's weights (Tinker's create_training_client_from_state: the
weights, a fresh optimizer), since Tinker holds the checkpoint and makes the model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tinker

from clients.integrations.resume import ResumeReason, ResumeRefused
from clients.integrations.tinker.common import TINKER_SCHEME
from clients.models import RunState

__all__ = ["model_from_source", "source_uri"]


def source_uri(source: Any) -> str:
    """The tinker:// path of a source checkpoint (clients.RunSourceCheckpoint or {"run_id",
    "step", "uri"}); "" for none. Raises ResumeRefused URI_SCHEME_MISMATCH for any other uri:
    Tinker makes a model only from a checkpoint it holds."""
    if source is None:
        return ""
    uri = str(source.get("uri", "") if isinstance(source, Mapping) else getattr(source, "uri", ""))
    if not uri.startswith(TINKER_SCHEME):
        raise ResumeRefused(
            ResumeReason.URI_SCHEME_MISMATCH,
            f"source_checkpoint's uri {uri!r} is no {TINKER_SCHEME} path: Tinker starts a model only from its own",
        )
    return uri


def model_from_source(
    service: tinker.ServiceClient, uri: str, metadata: dict[str, str], rank: int, state: RunState
) -> tinker.TrainingClient:
    """A new Tinker model from the source checkpoint's weights, once its LoRA rank is `rank`."""
    training = service.create_training_client_from_state(uri, user_metadata=metadata).result()
    info = training.get_info()
    if info.lora_rank != rank:
        raise ResumeRefused(
            ResumeReason.LORA_MISMATCH,
            f"the source checkpoint {uri} has LoRA rank {info.lora_rank}, not {rank}",
            state=state,
        )
    return training
