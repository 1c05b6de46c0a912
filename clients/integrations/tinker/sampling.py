"""A Tinker SamplingClient whose billable calls (sample, compute_logprobs) hold their projected cost
on the run's account before anything is sent, and commit the actual cost when they settle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tinker
from tinker import types

from clients.integrations.tinker.common import CACHED_PREFILL, sheet_for
from clients.integrations.tinker.futures import LedgeredFuture, OpenHold, Settler, Spend

__all__ = ["LedgeredSamplingClient"]


class LedgeredSamplingClient(Settler):
    """A Tinker SamplingClient whose sample and compute_logprobs calls hold their cost first."""

    def __init__(self, sampling_client: tinker.SamplingClient, spend: Spend, base_model: str) -> None:
        super().__init__(ordered=False)
        self.sampling_client, self._spend = sampling_client, spend
        self.prices = sheet_for(spend.prices, base_model)

    def sample(
        self, prompt: types.ModelInput, num_samples: int, sampling_params: types.SamplingParams, **options: Any
    ) -> LedgeredFuture[types.SampleResponse]:
        """As SamplingClient.sample; sampling_params.max_tokens is required (it bounds the hold)."""
        if sampling_params.max_tokens is None:
            raise ValueError("sampling_params.max_tokens is required to reserve the sample's cost")
        prompt_tokens, priced_cache = prompt.length, CACHED_PREFILL in self.prices.usd_micro_per_million
        projected = {"prefill": prompt_tokens, "sample": sampling_params.max_tokens * num_samples}
        if priced_cache and num_samples > 1:
            projected[CACHED_PREFILL] = prompt_tokens * (num_samples - 1)
        hold = self._spend.hold(self.prices.amount(projected), self.prices.basis(projected))

        def settle(response: types.SampleResponse) -> types.SampleResponse:
            actual = {"prefill": prompt_tokens, "sample": sum(len(s.tokens) for s in response.sequences)}
            if priced_cache:
                cached = min(response.prompt_cache_hit_tokens, prompt_tokens) + prompt_tokens * (num_samples - 1)
                actual = {
                    "prefill": prompt_tokens - min(response.prompt_cache_hit_tokens, prompt_tokens),
                    CACHED_PREFILL: cached,
                    "sample": actual["sample"],
                }
            hold.commit(self.prices.amount(actual), self.prices.basis(actual))
            return response

        return self._submit(
            "sample", hold, settle, lambda: self.sampling_client.sample(prompt, num_samples, sampling_params, **options)
        )

    def compute_logprobs(self, prompt: types.ModelInput, **options: Any) -> LedgeredFuture[list[float | None]]:
        usage = {"prefill": prompt.length}
        hold = self._spend.hold(self.prices.amount(usage), self.prices.basis(usage))

        def settle(logprobs: list[float | None]) -> list[float | None]:
            hold.commit(self.prices.amount(usage), self.prices.basis(usage))
            return logprobs

        return self._submit(
            "compute_logprobs", hold, settle, lambda: self.sampling_client.compute_logprobs(prompt, **options)
        )

    def _submit(
        self, kind: str, hold: OpenHold, settle: Callable[[Any], Any], call: Callable[[], Any]
    ) -> LedgeredFuture[Any]:
        try:
            future = call()
        except Exception as error:
            hold.release(error)
            raise
        wrapped: LedgeredFuture[Any] = LedgeredFuture(kind, future.result, settle, hold.release, self)
        self._spend.loose.add(wrapped)
        return self.add(wrapped)

    def _after_settle(self, future: LedgeredFuture[Any]) -> None:
        self._spend.loose.discard(future)

    def get_tokenizer(self) -> Any:
        return self.sampling_client.get_tokenizer()

    def get_base_model(self) -> str:
        return self.sampling_client.get_base_model()
