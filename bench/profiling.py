"""cProfile across threads, for the benchmarks that look for where the time goes.

Profiled: a profiler in every thread started after install() (the server's worker threads, the
projector, group commit), merged into one report; idle waits (locks, queues, the event loop's
poll) are left out of it so that the work shows.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import threading
from types import FrameType
from typing import Any

# A pstats restriction: every entry but the threads' idle waits (locks, queues, the event loop's poll).
IDLE_LEFT_OUT = (
    r"^(?!.*(threading\.py|queue\.py|selectors\.py|base_events\.py|'acquire' of|"
    r"'get' of '_queue|'poll' of|'run' of '_contextvars|events\.py:\d+\(_run\)))"
)


class _Snapshot:
    """Statistics already taken, in the form pstats.Stats loads."""

    def __init__(self, stats: dict[Any, Any]) -> None:
        self.stats = stats

    def create_stats(self) -> None:
        pass


class Profiled:
    """cProfile in every thread started after install() (threading.setprofile hands each new thread
    a hook that enables a profiler of its own), and in the calling thread on demand."""

    def __init__(self) -> None:
        self.profilers: list[cProfile.Profile] = []
        self.lock = threading.Lock()

    def install(self) -> None:
        def start(frame: FrameType, event: str, arg: Any) -> None:
            profiler = cProfile.Profile()
            with self.lock:
                self.profilers.append(profiler)
            profiler.enable()  # Replaces this hook in this thread.

        threading.setprofile(start)

    def uninstall(self) -> None:
        """Threads started from now on are not profiled (those already are go on)."""
        threading.setprofile(None)  # type: ignore[arg-type]

    def add(self, profiler: cProfile.Profile) -> None:
        """A profiler of a thread started before install() (the main thread's), merged with the rest."""
        with self.lock:
            self.profilers.append(profiler)

    def merged(self, stream: io.StringIO | None = None) -> pstats.Stats | None:
        """The merged statistics of the threads so far (None when nothing ran), then cleared."""
        with self.lock:
            profilers = list(self.profilers)
        stats: pstats.Stats | None = None
        for profiler in profilers:
            # Read from this thread without create_stats(), which would disable the profiler of the
            # calling thread, not of the thread it profiles.
            profiler.snapshot_stats()
            snapshot = _Snapshot(getattr(profiler, "stats", {}))
            profiler.clear()
            if not snapshot.stats:
                continue
            if stats is None:
                stats = pstats.Stats(snapshot, stream=stream)  # type: ignore[arg-type]
            else:
                stats.add(pstats.Stats(snapshot))  # type: ignore[arg-type]
        return stats

    def report(self, title: str, top: int, whose: str = "the server's threads") -> str:
        """The merged statistics of the threads so far, then cleared."""
        out = io.StringIO()
        stats = self.merged(out)
        if stats is None:
            return f"{title}: nothing profiled\n"
        return printed(stats, out, f"{title}: {whose}", top)


def printed(stats: pstats.Stats, out: io.StringIO, title: str, top: int) -> str:
    """The top entries by cumulative and by own time, idle waits left out."""
    out.write(f"--- {title}, by cumulative time (idle waits left out)\n")
    stats.sort_stats("cumulative").print_stats(IDLE_LEFT_OUT, top)
    out.write(f"--- {title}, by own time\n")
    stats.sort_stats("tottime").print_stats(IDLE_LEFT_OUT, top)
    return out.getvalue()


def client_profile(title: str, profiler: cProfile.Profile, top: int) -> str:
    out = io.StringIO()
    out.write(f"--- {title}: the client's thread, by cumulative time\n")
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()
