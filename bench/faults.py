"""Faults benchmark: the crash loop and the wire fuzzer run longer than in CI, plus the figures of
the edge, watchers and growth benchmarks, in one JSON line.

    .venv/bin/python bench/faults.py [--cycles 100] [--examples 500] [--seed N] [--skip-others]

Figures:
- crash_cycles, kills_while_starting, acked_writes, acked_lost, duplicates, cap_crossings,
  view_mismatches, log_events: tests/e2e/test_crash_loop.py's loop (`trainledger serve` killed
  with SIGKILL --cycles times under two client processes, every crash image checked); the counts
  of problems should all be 0.
- fuzz_requests, fuzz_unclear_answers (should be 0): bench/fuzz.py with --examples per method.
- rss_mb_idle_watchers, reserve_p99_ms_with_200_watchers (bench/watchers.py),
  reserve_p99_ms_with_flood (bench/edge.py), run_state_ms_4000_checkpoints and
  series_page_ms_600k_superseded (bench/growth.py): each of those run as it is, with its defaults,
  and the figure read from the JSON line it prints last (left out, with the reason under
  "missing", when it fails).
The last line printed is one JSON object with the figures and the command that reproduced them.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.fuzz import fuzz  # noqa: E402
from tests.e2e.test_crash_loop import crash_loop  # noqa: E402

OTHERS = {
    "watchers.py": ("rss_mb_idle_watchers", "reserve_p99_ms_with_200_watchers"),
    "edge.py": ("reserve_p99_ms_with_flood",),
    "growth.py": ("run_state_ms_4000_checkpoints", "series_page_ms_600k_superseded"),
}
OTHER_TIMEOUT_S = 1_800


def crash_figures(cycles: int, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="trainledger-crash-") as directory:
        began = time.perf_counter()
        outcome = crash_loop(Path(directory), cycles, seed)
        figures = outcome.figures()
        figures["crash_seconds"] = round(time.perf_counter() - began, 1)
        figures["crash_seed"] = seed
        for problem in outcome.problems()[:20]:
            print("crash loop:", problem[:600], flush=True)
    return figures


def other_figures(missing: dict[str, str]) -> dict[str, Any]:
    """Run each other benchmark with its defaults; the wanted keys of the JSON line it prints last."""
    figures: dict[str, Any] = {}
    for script, keys in OTHERS.items():
        try:
            done = subprocess.run(
                [sys.executable, str(REPO / "bench" / script)],
                capture_output=True,
                text=True,
                cwd=REPO,
                timeout=OTHER_TIMEOUT_S,
            )
            last = json.loads(done.stdout.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, ValueError, IndexError) as error:
            for key in keys:
                missing[key] = f"bench/{script} gave no JSON line: {error!r:.200}"
            continue
        for key in keys:
            if key in last:
                figures[key] = last[key]
            else:
                missing[key] = f"bench/{script} printed no {key} (exit status {done.returncode})"
        print(f"bench/{script}:", json.dumps({key: last.get(key) for key in keys}), flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=100, help="kills of the crash loop")
    parser.add_argument("--examples", type=int, default=500, help="fuzz examples per method")
    parser.add_argument("--seed", type=int, default=None, help="the crash loop's seed (default: random)")
    parser.add_argument("--skip-others", action="store_true", help="leave out watchers, edge and growth")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    figures = crash_figures(args.cycles, seed)
    print("crash loop:", json.dumps(figures), flush=True)
    fuzzed = fuzz(args.examples, [])
    print("fuzz:", json.dumps(fuzzed), flush=True)
    figures.update(fuzzed)
    missing: dict[str, str] = {}
    if not args.skip_others:
        figures.update(other_figures(missing))
    if missing:
        figures["missing"] = missing
    arguments = [*sys.argv[1:]] + ([] if args.seed is not None else ["--seed", str(seed)])
    figures["command"] = " ".join([".venv/bin/python", "bench/faults.py", *map(shlex.quote, arguments)])
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
