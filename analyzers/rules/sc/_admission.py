"""SC005: admission failures (UnexpectedAdmissionError, Allocate failed), grouped."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers.results.models import Evidence
from analyzers.rules.sc._common import (
    EXAMPLE_CAP,
)
from bundle.kube import Pod

_REQUESTED = re.compile(r"unavailable for ([\w./-]+)\. Requested: ?(\d+), Available: ?(\d+)")


_UNHEALTHY_RES = re.compile(r"cannot allocate unhealthy devices ([\w./-]+)")


CLUSTER_SUBJECT = "cluster"


def _admission_kind(text: str) -> str:
    """A short, countable description of one admission failure message."""
    hit = _REQUESTED.search(text)
    if hit:
        return f"{hit.group(1)} requested {hit.group(2)}, available {hit.group(3)}"
    hit = _UNHEALTHY_RES.search(text)
    if hit:
        return f"{hit.group(1)}: only unhealthy devices left"
    if "maximum request size for shared resources" in text:
        return "more than 1 slot of a shared GPU requested"
    return "device allocation failed"


@dataclass
class _Admission:
    pods: dict[str, Pod | None] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    shared_subjects: set[str] = field(default_factory=set)

    def add(self, key: str, pod: Pod | None, text: str, evidence: Evidence) -> None:
        if key in self.pods:
            return
        self.pods[key] = pod
        kind = _admission_kind(text)
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if len(self.evidence) < EXAMPLE_CAP:
            self.evidence.append(evidence)


def _admission_remediation(node_name: str | None) -> str:
    """Read first: the failed pods (of the node); deleting them is left as a comment,
    to run per namespace once the node is fixed and the pods reviewed."""
    failed = (sh.join("status.phase=Failed,spec.nodeName=", sh.node(node_name))
              if node_name is not None else "status.phase=Failed")
    return sh.lines(
        "# fix the node first (the linked finding), then review the rejected pods:",
        sh.cmd("kubectl", "get", "pods", "-A", "--field-selector", failed, "-o", "wide"),
        "# kubelet does not retry them: once reviewed, delete them per namespace (a",
        "# controller starts its pods again), kubectl delete pods -n <ns> with the same",
        "# --field-selector",
    )
