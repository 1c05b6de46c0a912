"""Benchmark of the chart reads at a million steps, in-process on the SQLite default.

Run:  .venv/bin/python bench/charts.py [--steps 1000000] [--repeat 50]
Builds a run in a temporary SQLite file: 5 metrics in 1,000-step batches, attempt 1 up to 70% of
the steps, a checkpoint at 60%, attempt 2 resuming from it up to the last step (so a tenth of the
steps recorded are superseded). Then times Ledger.chart over the full range and zoomed ranges of
100k, 10k and 1k steps at width 1,000, for one metric and for all five, and metric_stats.
The LAST line is one JSON object: chart_full_p99_ms, chart_zoom_p99_ms, chart_all_metrics_p99_ms,
metric_stats_p99_ms, ingest_steps_per_s (recording and projecting every step).
Targets (goals, never test assertions): chart p99 <= 50 ms for one metric at 1M steps.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ledger import Ledger  # noqa: E402

BATCH = 1_000
METRICS = ("loss", "grad_norm", "lr", "token_accuracy", "entropy")
WIDTH = 1_000


def p99_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000, 3)


def record(ledger: Ledger, run_id: str, attempt: int, first: int, last: int) -> int:
    position = 0
    for start in range(first, last + 1, BATCH):
        steps = list(range(start, min(start + BATCH, last + 1)))
        rng = random.Random(start * 10 + attempt)
        metrics = {name: [rng.random() + step / 1e6 for step in steps] for name in METRICS}
        position = ledger.append_steps(run_id=run_id, attempt=attempt, steps=steps, metrics=metrics).position
    return position


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1_000_000, help="last step of the run")
    parser.add_argument("--repeat", type=int, default=50, help="timed reads of each kind")
    args = parser.parse_args()
    total = args.steps
    stop_1, resume = total * 7 // 10 - 1, total * 6 // 10
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger.open(str(Path(tmp) / "charts.db"))
        try:
            run_id = ledger.open_run(run_key="bench-charts", name="bench", spec={}).run_id
            ledger.start_attempt(run_id=run_id, label="a1")
            began = time.perf_counter()
            record(ledger, run_id, 1, 0, stop_1)
            ledger.save_checkpoint(run_id=run_id, attempt=1, step=resume, backend="local", uri="file:///c")
            ledger.start_attempt(run_id=run_id, label="a2", resume_from_step=resume)
            position = record(ledger, run_id, 2, resume + 1, total)
            ledger.wait(position, timeout_s=600)
            recorded = stop_1 + 1 + total - resume
            ingest = recorded / (time.perf_counter() - began)
            print(f"recorded and projected {recorded:,} steps at {ingest:,.0f} steps/s", flush=True)

            rng = random.Random(7)

            def timed(read: object, kwargs_list: list[dict[str, object]]) -> list[float]:
                samples = []
                for kwargs in kwargs_list:
                    t = time.perf_counter()
                    read(run_id, **kwargs)  # type: ignore[operator]
                    samples.append(time.perf_counter() - t)
                return samples

            def zooms(metrics: tuple[str, ...]) -> list[dict[str, object]]:
                out: list[dict[str, object]] = []
                for span in (100_000, 10_000, 1_000):
                    for _ in range(args.repeat):
                        low = rng.randrange(0, total - span)
                        out.append({"metrics": metrics, "from_step": low, "to_step": low + span - 1, "width": WIDTH})
                return out

            ledger.chart(run_id, width=WIDTH)  # warm the page cache and imports
            full = timed(ledger.chart, [{"metrics": ("loss",), "width": WIDTH}] * args.repeat)
            zoom = timed(ledger.chart, zooms(("loss",)))
            all_full = timed(ledger.chart, [{"width": WIDTH}] * args.repeat)
            all_zoom = timed(ledger.chart, zooms(()))
            stats = timed(ledger.metric_stats, [{}] * args.repeat)
            chart = ledger.chart(run_id, metrics=("loss",), width=WIDTH)
            print(
                f"full range: resolution {chart.resolution}, series "
                f"{[(s.attempt, s.superseded, len(s.steps)) for s in chart.metrics[0].series]}"
            )
            print(f"chart one metric: full p99 {p99_ms(full)} ms, zoomed p99 {p99_ms(zoom)} ms")
            print(f"chart all metrics: full p99 {p99_ms(all_full)} ms, zoomed p99 {p99_ms(all_zoom)} ms")
            print(f"metric_stats p99 {p99_ms(stats)} ms")
        finally:
            ledger.close()
    print("rerun: .venv/bin/python bench/charts.py " + " ".join(sys.argv[1:]))
    print(
        json.dumps(
            {
                "chart_full_p99_ms": p99_ms(full),
                "chart_zoom_p99_ms": p99_ms(zoom),
                "chart_all_metrics_p99_ms": p99_ms(all_full + all_zoom),
                "metric_stats_p99_ms": p99_ms(stats),
                "ingest_steps_per_s": round(ingest),
            }
        )
    )


if __name__ == "__main__":
    main()
