"""System metrics of the machine a trainer runs on, sampled at a low rate: CPU and memory through
psutil, and each GPU's utilisation, memory, temperature and power through nvidia-ml-py (NVML) when
it is installed and a GPU answers. RunRecorder adds a sample to the step it logs once every
`period_s` (`system_metrics_s`), so they form a sparse metric group beside the training metrics,
under names that start with SYSTEM_PREFIX (the dashboard shows them in a section of their own).

Sampling never raises into training: a source that fails is dropped for the rest of the run, and
a machine with neither library records nothing. Values are plain floats (percent, bytes, degrees
Celsius, watts), each name carrying its unit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from importlib import import_module
from typing import Any

__all__ = ["SystemSampler", "SYSTEM_PREFIX", "SYSTEM_PERIOD_S", "GPUS_MAX"]

log = logging.getLogger("trainledger.clients")

SYSTEM_PREFIX = "system/"
# How often a sample is taken by default: W&B's system metrics are about as coarse.
SYSTEM_PERIOD_S = 15.0
PERIOD_S_MIN = 1.0
# GPUs read per sample (8 per host is the common maximum; more would crowd the metric set).
GPUS_MAX = 16

Reading = dict[str, float]


def _psutil_reading(psutil: Any) -> Callable[[], Reading]:
    process = psutil.Process()
    psutil.cpu_percent(interval=None)  # The first call only sets the baseline.

    def read() -> Reading:
        memory = psutil.virtual_memory()
        return {
            "cpu_percent": float(psutil.cpu_percent(interval=None)),
            "ram_used_bytes": float(memory.used),
            "ram_percent": float(memory.percent),
            "process_rss_bytes": float(process.memory_info().rss),
        }

    return read


def _nvml_reading(nvml: Any) -> Callable[[], Reading]:
    nvml.nvmlInit()
    handles = [nvml.nvmlDeviceGetHandleByIndex(index) for index in range(min(nvml.nvmlDeviceGetCount(), GPUS_MAX))]
    if not handles:
        raise RuntimeError("no GPU")

    def read() -> Reading:
        reading: Reading = {}
        for index, handle in enumerate(handles):
            use = nvml.nvmlDeviceGetUtilizationRates(handle)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            reading[f"gpu{index}_util_percent"] = float(use.gpu)
            reading[f"gpu{index}_mem_used_bytes"] = float(memory.used)
            reading[f"gpu{index}_mem_percent"] = 100.0 * memory.used / memory.total if memory.total else 0.0
            reading[f"gpu{index}_temp_c"] = float(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
            reading[f"gpu{index}_power_w"] = nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0
        return reading

    return read


def _sources() -> dict[str, Callable[[], Reading]]:
    """Each library that is installed and answers: psutil (CPU, RAM), nvml (GPUs)."""
    sources: dict[str, Callable[[], Reading]] = {}
    for name, module, make in (("psutil", "psutil", _psutil_reading), ("nvml", "pynvml", _nvml_reading)):
        try:
            sources[name] = make(import_module(module))
        except Exception as error:  # Not installed, no driver, no GPU: that source records nothing.
            log.debug("system metrics: no %s (%s)", name, error)
    return sources


class SystemSampler:
    """Takes a sample once `period_s` has passed since the last (the first at the first call);
    `sources` maps a name to a function returning {metric: value} (by default psutil and NVML)."""

    def __init__(
        self,
        period_s: float = SYSTEM_PERIOD_S,
        *,
        sources: dict[str, Callable[[], Reading]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not period_s >= PERIOD_S_MIN:
            raise ValueError(f"system_metrics_s must be at least {PERIOD_S_MIN} s, not {period_s!r}")
        self.period_s, self.clock = period_s, clock
        self.sources = _sources() if sources is None else dict(sources)
        self._next_s: float | None = None

    def sample(self) -> Reading:
        """{SYSTEM_PREFIX + name: value} when a sample is due, else {}. Never raises."""
        return self.read() if self.due() else {}

    def due(self) -> bool:
        """True when a sample is due, which is then taken to be read (by `read`, here or on another
        thread): the next one is due `period_s` later."""
        now = self.clock()
        if self._next_s is not None and now < self._next_s:
            return False
        self._next_s = now + self.period_s
        return True

    def read(self) -> Reading:
        """{SYSTEM_PREFIX + name: value} from each source now. Never raises."""
        reading: Reading = {}
        for name, read in list(self.sources.items()):
            try:
                reading.update({SYSTEM_PREFIX + key: value for key, value in read().items()})
            except Exception as error:  # A source that fails once is not asked again.
                log.warning("system metrics: %s stopped answering (%s); it is no longer sampled", name, error)
                del self.sources[name]
        return reading
