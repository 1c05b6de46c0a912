"""How a run ends, the same for every trainer integration: the status and error text a run is
finished with when its training ends (`exit_status`, `exit_error`), the check that refuses to
start a new attempt on an ended run (`refuse_ended`), and SIGTERM taken as an interrupt
(`SigtermStop`). RunRecorder and the integrations share these, so each ending reads the same.

"done" when the block ends normally, "stopped" when a spend-cap refusal (SpendCapExceeded) or an
interrupt (KeyboardInterrupt; SIGTERM too with `stop_on_sigterm=True`) ends it, "failed" with the
error for any other exception. An ended run is opened again only on purpose: a done run takes no
new attempt (use a new run key), a failed or stopped one only with `reopen=True` (then a new
attempt starts on it); RunEnded names the run.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Mapping
from typing import Any

from clients.errors import RunEnded, SpendCapExceeded
from clients.models import RunState

__all__ = ["ERROR_LENGTH_MAX", "ENDED_STATUSES", "exit_status", "exit_error", "refuse_ended", "SigtermStop"]

ERROR_LENGTH_MAX = 2_000
ENDED_STATUSES = ("done", "failed", "stopped")


def exit_status(error: BaseException | None) -> str:
    """The status a run ends with when its training ends with `error`: "done" with none;
    "stopped" for a spend-cap refusal (SpendCapExceeded) or an interrupt (KeyboardInterrupt,
    which a SIGTERM becomes with stop_on_sigterm, SystemExit); "failed" for any other exception."""
    if error is None:
        return "done"
    if isinstance(error, SpendCapExceeded) or not isinstance(error, Exception):
        return "stopped"
    return "failed"


def exit_error(error: BaseException | None) -> str:
    """The error text a run is finished with: "<type>: <message>" ("<type>" when it says
    nothing more), or "" with none."""
    if error is None:
        return ""
    message = str(error)
    return (f"{type(error).__name__}: {message}" if message else type(error).__name__)[:ERROR_LENGTH_MAX]


def refuse_ended(state: RunState | Mapping[str, Any], *, reopen: bool = False) -> None:
    """Raise RunEnded when the RunState's run has ended and may not take a new attempt: a done
    run never does; a failed or stopped one only with `reopen`. (A RunState in its dict form,
    `RunState.to_dict()`, is taken too.)"""
    document = state.to_dict() if isinstance(state, RunState) else state
    status = document["run"]["status"]
    if status == "done" or (status in ENDED_STATUSES and not reopen):
        raise RunEnded.of(document)


class SigtermStop:
    """SIGTERM as KeyboardInterrupt in the main thread, once: the handler puts the previous one
    back before it raises, so a second SIGTERM does what it did before."""

    def __init__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            raise ValueError("stop_on_sigterm needs the main thread: Python runs signal handlers there only")
        self._previous = signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        self.restore()
        raise KeyboardInterrupt("SIGTERM")

    def restore(self) -> None:
        """Put the previous handler back (from the main thread, and only if ours is still set)."""
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == self._handle:
            signal.signal(signal.SIGTERM, self._previous)
