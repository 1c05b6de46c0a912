"""Helpers of the dashboard's browser tests and bench/dashboard.py: a real `trainledger serve`
subprocess serving gRPC and the dashboard on ports the OS picks, Debian's Chromium driven by
Playwright's sync API, and a watch on a page's console and network.

Nothing here is faked: the server is the installed `trainledger` entry point on a SQLite file, the
data is recorded through clients.LedgerClient over loopback gRPC, and the pages are the server's
own HTML, CSS and JavaScript rendered by a real browser.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Request, Response

CHROMIUM = os.environ.get("TRAINLEDGER_CHROMIUM", "/usr/bin/chromium")
START_S = 60.0
GRPC_LINE = re.compile(r"serving on (\S+:\d+)")
HTTP_LINE = re.compile(r"(https?)://(\d+\.\d+\.\d+\.\d+:\d+)")
# Runs a command under a limit on open files: `python -c LIMITED N COMMAND...`.
LIMITED = (
    "import os, resource, sys; n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)
# The live streams are cut when a page is left or closed: that abort is no failure.
STREAM_PATH = re.compile(r"/api/(runs/[^/]+/)?live\b")


def missing_browser() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed (pip install playwright)"
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set TRAINLEDGER_CHROMIUM)"
    return None


def trainledger() -> list[str]:
    script = Path(sys.executable).parent / "trainledger"
    return [str(script)] if script.exists() else [sys.executable, "-m", "services.cli"]


def environment() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k != "TRAINLEDGER_DATABASE_URL"}
    return {**keep, "PYTHONUNBUFFERED": "1"}


@dataclass
class Served:
    """A running `trainledger serve`: its gRPC address, the dashboard's base URL, its log."""

    process: subprocess.Popen[str]
    grpc: str
    http: str
    log: Path
    reader: threading.Thread
    scheme: str = "http"

    @property
    def base(self) -> str:
        return f"{self.scheme}://{self.http}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)
        self.reader.join(timeout=20)
        if self.process.stdout is not None and not self.reader.is_alive():
            self.process.stdout.close()


def _lines(stream: IO[str]) -> tuple[queue.Queue[str], threading.Thread]:
    """Every line `stream` prints, read by a thread (which also keeps the pipe drained); "" at its end.
    (select() on a buffered text stream would miss a second line already read into the buffer.)"""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put("")

    reader = threading.Thread(target=pump, name="serve-stdout", daemon=True)
    reader.start()
    return lines, reader


def serve(database: Path, directory: Path, *extra: str, files_max: int = 0) -> Served:
    """Start `trainledger serve` on `database` with gRPC and the dashboard on free loopback ports,
    and wait until both are announced on its stdout. With `files_max` the server runs with that
    limit on open files (as under `ulimit -n`)."""
    limit = [sys.executable, "-c", LIMITED, str(files_max)] if files_max else []
    log = directory / f"serve-{database.stem}.log"
    with open(log, "w") as errors:
        process = subprocess.Popen(
            [
                *limit,
                *trainledger(),
                "serve",
                "--db",
                str(database),
                "--listen",
                "127.0.0.1:0",
                "--http",
                "127.0.0.1:0",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            cwd=directory,
            env=environment(),
        )
    assert process.stdout is not None
    lines, reader = _lines(process.stdout)
    deadline = time.monotonic() + START_S
    grpc = http = None
    scheme = "http"
    seen: list[str] = []
    while (grpc is None or http is None) and time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if not line:
            break
        seen.append(line)
        if grpc is None and (match := GRPC_LINE.search(line)):
            grpc = match.group(1)
        if http is None and (match := HTTP_LINE.search(line)):
            scheme, http = match.group(1), match.group(2)
    if grpc is None or http is None:
        process.kill()
        process.wait(timeout=20)
        raise AssertionError(f"the server did not announce both addresses: {seen!r} {log.read_text()[-2000:]}")
    return Served(process, grpc, http, log, reader, scheme)


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless, through Playwright (no sandbox: the tests may run as root)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watch:
    """What went wrong on a page: console errors, uncaught exceptions, failed requests and HTTP
    error answers (a live stream aborted by leaving the page excepted)."""

    problems: list[str] = field(default_factory=list)

    def attach(self, page: Page) -> Watch:
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.problems.append(f"uncaught: {error}"))
        page.on("requestfailed", self._failed)
        page.on("response", self._response)
        return self

    def _console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "assert"):
            self.problems.append(f"console {message.type}: {message.text} at {message.location}")

    def _failed(self, request: Request) -> None:
        failure = request.failure or ""
        if "ERR_ABORTED" in failure and STREAM_PATH.search(request.url):
            return
        self.problems.append(f"request failed: {request.method} {request.url} {failure}")

    def _response(self, response: Response) -> None:
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.request.method} {response.url}")

    def clear(self) -> list[str]:
        problems, self.problems = self.problems, []
        return problems


def wait_ready(page: Page, timeout_ms: float = 15_000) -> None:
    """Wait until every figure of the page is drawn (data-ready="1")."""
    page.wait_for_function(
        "() => [...document.querySelectorAll('figure.chart, figure.spend-chart')]"
        ".every((f) => f.dataset.ready === '1' || f.dataset.error)",
        timeout=timeout_ms,
    )


def attributes(page: Page, selector: str, name: str) -> list[Any]:
    """The `name` attribute of every element matching `selector`, in document order."""
    return list(page.eval_on_selector_all(selector, f"(nodes) => nodes.map((n) => n.getAttribute({name!r}))"))
