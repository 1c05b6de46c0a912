"""Serve a fake Tinker on a loopback port until interrupted, for a trial run of
examples/tinker_lora.py with nothing real; from the repository root:

    .venv/bin/python -m tests.fakes.tinker

It prints the TINKER_BASE_URL and TINKER_API_KEY to export and the base model it knows."""

from __future__ import annotations

import threading

from tests.fakes.tinker import FakeTinkerServer


def main() -> None:
    with FakeTinkerServer() as fake:
        print(f"export TINKER_BASE_URL={fake.base_url} TINKER_API_KEY={FakeTinkerServer.API_KEY}")
        print(f"base model: {FakeTinkerServer.BASE_MODEL} (Ctrl-C stops the fake; it keeps nothing)", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
