"""SC004: ResourceQuota limits on GPUs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analyzers.results.models import Evidence
from bundle.kube import Event

_QUOTA_NAME = re.compile(r"exceeded quota: ([^,\s]+)", re.IGNORECASE)


@dataclass
class _Quota:
    namespace: str
    name: str
    exhausted: list[tuple[str, int, int]] = field(default_factory=list)  # key, hard, used
    events: list[Event] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
