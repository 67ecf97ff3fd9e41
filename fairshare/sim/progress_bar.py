"""A dependency-free progress bar on stderr for long runs.

It stays silent for the first ``delay`` seconds (short runs print nothing), then redraws one line at most
every ``interval`` seconds: in place on a terminal, as plain lines (at most one per ``interval``) otherwise.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    """A progress bar of a run towards ``total`` units (``None`` = unknown), labelled ``label``.

    Parameters
    ----------
    total : float, optional
    label : str
    enabled : bool, optional
        ``None``: on. ``False``: never prints.
    delay, interval : float
        Seconds of silence at the start, and between two redraws.
    stream : text stream
        Default ``sys.stderr``.
    """

    def __init__(self, total: float | None, label: str, *, enabled: bool | None = None, delay: float = 3.0,
                 interval: float | None = None, stream: TextIO | None = None) -> None:
        self.total = total
        self.label = label
        self.enabled = enabled is not False
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.delay = delay
        self.interval = interval if interval is not None else (0.25 if self.tty else 10.0)
        self.start = time.perf_counter()
        self._last = -float("inf")
        self._shown = False

    def due(self) -> bool:
        """Whether :meth:`update` would print now (callers skip computing an expensive note otherwise)."""
        if not self.enabled:
            return False
        now = time.perf_counter()
        return now - self.start >= self.delay and now - self._last >= self.interval

    def update(self, done: float, note: str = "", eta: float | None = None) -> None:
        """Report ``done`` units so far; prints only when due.

        ``eta`` (seconds) replaces the default estimate, which assumes the remaining units cost what the done
        ones did on average.
        """
        if not self.due():
            return
        now = time.perf_counter()
        elapsed = now - self.start
        self._last = now
        self._shown = True
        if self.total:
            frac = min(1.0, max(0.0, done / self.total))
            bar = "#" * int(frac * 30)
            if eta is None:
                eta = elapsed / frac - elapsed if frac > 0 else float("nan")
            text = f"{self.label} [{bar:<30}] {100 * frac:5.1f}% {elapsed:6.1f}s eta {_duration(eta)} {note}"
        else:
            text = f"{self.label} {done:g} {elapsed:6.1f}s {note}"
        if self.tty:
            self.stream.write("\r" + text[:160].ljust(160))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self, note: str = "") -> None:
        """End the bar (prints a final line only if the bar was shown)."""
        if self.enabled and self._shown:
            elapsed = time.perf_counter() - self.start
            end = f"{self.label} done in {elapsed:.1f}s {note}"
            self.stream.write(("\r" + end.ljust(160) + "\n") if self.tty else end + "\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    """``42s``, ``12m05s``, ``3h07m`` (``?`` when unknown).

    >>> _duration(42.4), _duration(725), _duration(11220), _duration(float("nan"))
    ('42s', '12m05s', '3h07m', '?')
    """
    if not seconds == seconds or seconds == float("inf"):
        return "?"
    s = int(round(max(0.0, seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"
