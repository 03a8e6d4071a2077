"""Progress on stderr from the first second: bytes of the archive read (with the time
left), then node files and rules, then how long it all took.

Shown only where someone watches: on a terminal (rewriting one line), or with
``--progress`` (one line a second, for a log); never with ``--quiet``. A terminal line
is cleared before anything else is printed, so the report on stdout never shares a line
with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from reports.terminal import line

_EVERY_TERMINAL = 0.1
_EVERY_LOG = 1.0
_MIB = 1 << 20


class Progress:
    """One analysis' progress, written to ``stream`` (a terminal when ``terminal``)."""

    def __init__(self, stream: TextIO, *, terminal: bool,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._terminal = terminal
        self._clock = clock
        self._start = clock()
        self._last = float("-inf")
        self._shown = False
        self._read_all = False  # 100% of the archive was shown
        self._steps = 0

    def reading(self, done: int, total: int) -> None:
        """The archive file: ``done`` of ``total`` bytes read."""
        now = self._clock()
        if self._read_all or (done < total and now - self._last
                              < (_EVERY_TERMINAL if self._terminal else _EVERY_LOG)):
            return
        self._read_all = done >= total
        elapsed = now - self._start
        share = done / total if total else 1.0
        left = ""
        if 0 < share < 1 and elapsed >= 1:
            left = f", about {_duration(elapsed / share - elapsed)} left"
        self._show(f"reading the bundle: {share:4.0%} ({done / _MIB:,.0f} of "
                   f"{total / _MIB:,.0f} MiB{left})", now)

    def step(self, message: str) -> None:
        """A step of the analysis (node files, ``[12/120] RT001``)."""
        now = self._clock()
        self._steps += 1
        # the first two steps (node files, the first rule) always: the run moved on
        if self._terminal or self._steps <= 2 or now - self._last >= _EVERY_LOG:
            self._show(f"analysing {line(message, 200)}", now)

    def clear(self) -> None:
        """Clear the terminal line (before something else is printed)."""
        if self._terminal and self._shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False

    def done(self) -> None:
        """The final line: how long the analysis took."""
        self.clear()
        self._stream.write(f"analysed in {_duration(self._clock() - self._start)}\n")
        self._stream.flush()

    def _show(self, text: str, now: float) -> None:
        self._last = now
        if self._terminal:
            self._stream.write(f"\r{text[:100]:<60}\x1b[K")
            self._shown = True
        else:
            self._stream.write(text + "\n")
        self._stream.flush()


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest:02d} s"
