"""Ages as ``kubectl get`` prints them (``5m``, ``3h20m``, ``12d``), measured up to the
moment the bundle was collected: a table shows the cluster as it was then.

The rounding steps are those of apimachinery's ``duration.HumanDuration`` (Kubernetes
``staging/src/k8s.io/apimachinery/pkg/util/duration/duration.go``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gpu_triage.serve.store import parse_time

_UNITS = ((60 * 2, "s", 1, None, 0), (60 * 10, "m", 60, "s", 1),
          (3600 * 3, "m", 60, None, 0), (3600 * 8, "h", 3600, "m", 60),
          (3600 * 48, "h", 3600, None, 0), (86400 * 8, "d", 86400, "h", 3600),
          (86400 * 365 * 2, "d", 86400, None, 0), (86400 * 365 * 8, "y", 86400 * 365, "d", 86400))


def human(seconds: float) -> str:
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    for below, unit, size, small, small_size in _UNITS:
        if whole < below:
            big, rest = divmod(whole, size)
            extra = rest // small_size if small else 0
            if unit == "d" and small == "h":
                extra = (whole // 3600) % 24
            if unit == "y" and small == "d":
                extra = (whole // 86400) % 365
            return f"{big}{unit}{extra}{small}" if small and extra else f"{big}{unit}"
    return f"{whole // (86400 * 365)}y"


def since(stamp: Any, now: datetime) -> str:
    """The age of an RFC 3339 timestamp at ``now``; ``<unknown>`` when there is none."""
    when = parse_time(stamp) if isinstance(stamp, str) and stamp else None
    if when is None:
        return "<unknown>"
    return human((now - when).total_seconds())
