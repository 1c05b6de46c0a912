"""Byte-valued metrics (named *_bytes) read in B/KB/MB/GB/TB (powers of 1000) in `runs show`'s
metrics table and the run page's; the expected strings are written out here."""

from __future__ import annotations

import pytest

from services.render.tables import metric_value


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("system/process_rss_bytes", 49_812_345.0, "49.81 MB"),
        ("system/process_rss_bytes", 512.0, "512 B"),
        ("system/process_rss_bytes", 0.0, "0 B"),
        ("system/gpu.0.memory_used_bytes", 8.35e9, "8.35 GB"),
        ("system/disk_bytes", 1_000.0, "1 KB"),
        ("system/disk_bytes", 999_999.0, "1 MB"),
        ("system/disk_bytes", 3.2e12, "3.2 TB"),
        ("system/disk_bytes", -2_500.0, "-2.5 KB"),
        ("loss", 4.98e7, "4.98e+07"),
        ("tokens_per_s", 1234.5, "1234.5"),
        ("bytes_seen", 4.98e7, "4.98e+07"),  # Only the suffix names bytes.
    ],
)
def test_a_bytes_metric_reads_in_bytes_units(name: str, value: float, text: str) -> None:
    assert metric_value(name, value) == text
