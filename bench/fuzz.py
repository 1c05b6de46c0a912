"""Wire fuzzing for longer than CI does: every RPC of trainledger.v1 against a `trainledger serve`
process, with the requests and the judge of tests/fuzz/wire.py (OK or a clear refusal, never
UNKNOWN or INTERNAL, one ErrorInfo of domain "trainledger", nothing recorded by a refusal, health
SERVING after every call), counting instead of stopping at the first unclear answer.

    .venv/bin/python bench/fuzz.py [--examples 3000] [--methods Runs.AppendSteps Spend.Reserve ...]

Each method gets --examples hypothesis-made requests and a third as many malformed ones. Prints
one line per method, then the unclear answers (at most --show), and last one JSON object with
fuzz_requests, fuzz_unclear_answers, the seconds taken and the command that reproduces it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.service import start_server  # noqa: E402
from tests.fuzz.wire import METHODS, Judge, explore, message_payloads, raw_payloads, seed  # noqa: E402


def fuzz(examples: int, methods: list[str], show: int = 20, quiet: bool = False) -> dict[str, Any]:
    """Fuzz the named methods (all when empty) on a fresh server; the figures as a dict."""
    chosen = [method for method in METHODS if not methods or method.name in methods]
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="trainledger-fuzz-") as directory:
        process, port = start_server(str(Path(directory) / "ledger.db"), "")
        try:
            address = f"127.0.0.1:{port}"
            known = seed(address)
            judge = Judge(address, known)
            try:
                for method in chosen:
                    sent, unclear = judge.requests, len(judge.unclear)
                    explore(judge, method, message_payloads(method, known), examples)
                    explore(judge, method, raw_payloads(method, known), max(10, examples // 3))
                    if not quiet:
                        print(
                            f"{method.name:28} {judge.requests - sent:6} requests "
                            f"{len(judge.unclear) - unclear:4} unclear",
                            flush=True,
                        )
            finally:
                judge.close()
            alive = process.poll() is None
        finally:
            process.kill()
            process.wait()
    if not quiet:
        for line in judge.unclear[:show]:
            print("unclear:", line[:600])
    return {
        "fuzz_requests": judge.requests,
        "fuzz_unclear_answers": len(judge.unclear),
        "fuzz_methods": len(chosen),
        "fuzz_examples_per_method": examples,
        "fuzz_server_alive": alive,
        "fuzz_seconds": round(time.perf_counter() - began, 1),
    }


def main() -> None:
    warnings.filterwarnings("ignore", message="Generating overly large repr")  # Hypothesis, on huge requests.
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=3_000, help="hypothesis examples per method")
    parser.add_argument("--methods", nargs="*", default=[], metavar="SERVICE.METHOD")
    parser.add_argument("--show", type=int, default=20, help="unclear answers to print")
    args = parser.parse_args()
    figures = fuzz(args.examples, args.methods, args.show)
    figures["command"] = " ".join([".venv/bin/python", "bench/fuzz.py", *map(shlex.quote, sys.argv[1:])])
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
