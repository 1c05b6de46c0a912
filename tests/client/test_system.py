"""System metrics (clients.system): sampled once per period from the machine's real counters
(psutil), under names that start with "system/"; a failing source is dropped, never raised into
training. GPUs are read through NVML (nvidia-ml-py) only where a GPU answers: the GPU test skips
elsewhere."""

from __future__ import annotations

import logging
import os

import psutil
import pytest

from clients import LedgerClient, RunRecorder, run_key
from clients.system import SYSTEM_PREFIX, SystemSampler


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def test_a_sample_is_taken_once_per_period_from_the_machines_counters() -> None:
    clock = Clock()
    sampler = SystemSampler(15.0, clock=clock)
    first = sampler.sample()
    assert {"system/cpu_percent", "system/ram_used_bytes", "system/ram_percent", "system/process_rss_bytes"} <= set(
        first
    )
    assert 0 < first["system/ram_used_bytes"] <= psutil.virtual_memory().total
    assert 0 < first["system/process_rss_bytes"] <= psutil.virtual_memory().total
    assert 0.0 <= first["system/cpu_percent"] <= 100.0 * (os.cpu_count() or 1)
    clock.now_s += 14.9
    assert sampler.sample() == {}
    clock.now_s += 0.1
    assert set(sampler.sample()) == set(first)


def test_a_source_that_fails_is_dropped_and_the_others_kept(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    calls = {"broken": 0}

    def broken() -> dict[str, float]:
        calls["broken"] += 1
        raise OSError("the driver went away")

    sampler = SystemSampler(1.0, sources={"steady": lambda: {"load": 1.5}, "broken": broken}, clock=clock)
    with caplog.at_level(logging.WARNING, logger="trainledger.clients"):
        assert sampler.sample() == {SYSTEM_PREFIX + "load": 1.5}
    assert "broken stopped answering (the driver went away)" in caplog.text
    clock.now_s += 1.0
    assert sampler.sample() == {"system/load": 1.5}
    assert calls["broken"] == 1


@pytest.mark.parametrize("period_s", [0.0, 0.5, -1.0, float("nan")])
def test_a_period_under_a_second_is_refused(period_s: float) -> None:
    with pytest.raises(ValueError, match="system_metrics_s must be at least 1.0 s"):
        SystemSampler(period_s, sources={})


def test_each_gpu_is_read_through_nvml_where_one_answers() -> None:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError as error:
        pytest.skip(f"no GPU answers NVML here: {error}")
    if count == 0:
        pytest.skip("NVML sees no GPU here")
    sample = SystemSampler(15.0).sample()
    for index in range(min(count, 16)):
        assert 0.0 <= sample[f"system/gpu{index}_util_percent"] <= 100.0
        assert 0.0 <= sample[f"system/gpu{index}_mem_percent"] <= 100.0
        assert sample[f"system/gpu{index}_mem_used_bytes"] >= 0.0


def test_a_recorder_records_system_metrics_as_a_sparse_group(client: LedgerClient) -> None:
    """With `system_metrics_s`, the first step logged carries a sample, and the next only once the
    period has passed: over the wire they are sparse columns beside the training metrics."""
    with RunRecorder.open(client, run_key=run_key({"system": "sparse"}), system_metrics_s=3600.0) as recorder:
        for step in range(50):
            recorder.log(step, loss=1.0 / (step + 1))
        assert recorder.flush(30)
    page = client.get_series(run_id=recorder.run_id, from_step=0, page_size=100)
    columns = {column.name: column for column in page.metrics}
    assert columns["loss"].index == [] and len(columns["loss"].values) == 50  # dense
    assert columns["system/ram_used_bytes"].index == [0]  # one sample in the hour: at the first step
    assert columns["system/ram_used_bytes"].values[0] > 0
    assert {"system/cpu_percent", "system/process_rss_bytes"} <= set(columns)


def test_a_recorder_records_no_system_metrics_unless_asked(client: LedgerClient) -> None:
    with RunRecorder.open(client, run_key=run_key({"system": "off"})) as recorder:
        recorder.log(0, loss=1.0)
        assert recorder.flush(30)
    page = client.get_series(run_id=recorder.run_id, from_step=0, page_size=10)
    assert [column.name for column in page.metrics] == ["loss"]
