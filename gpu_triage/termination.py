"""``SIGTERM`` and ``SIGHUP`` end a run the way Ctrl-C does: by unwinding.

Python's default for both signals is to die on the spot, which leaves the spool
directories of node-file workers (the customer's journals and kernel lines, pickled)
behind in the temporary directory. Raised as an exception instead, every ``with`` block
and ``finally`` on the way out runs, and each removes what it made.
"""

from __future__ import annotations

import signal


class Terminated(BaseException):
    """``SIGTERM`` or ``SIGHUP`` arrived: unwinding as Ctrl-C does removes every temporary
    file and spool directory of the run (the customer's data) on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


def unwind_on_termination() -> None:
    """Turn ``SIGTERM``/``SIGHUP`` into :class:`Terminated` (the main thread only can)."""
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            try:
                signal.signal(number, _terminate)
            except ValueError:  # not the main thread (an embedding program)
                return
