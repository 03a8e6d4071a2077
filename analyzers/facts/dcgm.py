"""What the DCGM exporter's logs say: it cannot reach or start DCGM, or DCGM cannot
collect profiling metrics on this GPU. The rule that reports each and OP001's
explanation of a stuck operand stage read the same lines.

An earlier run's log (``--previous``) tells the exporter's present only while it is
failing or has restarted: a healthy exporter's old crash is history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analyzers.facts.operands import OperandPod
from analyzers.facts.podlogs import ContainerLog
from bundle.evidence import Locator

if TYPE_CHECKING:
    from analyzers.facts import Facts

# The exporter's words for DCGM it cannot reach or start (analyzers/data/signatures.toml;
# the catalog rule they feed lists the same ids, which tests/test_fact_wordings.py checks).
NO_DCGM_WORDINGS = frozenset({
    "dcgm-exporter-dcgm-init-failed", "dcgm-exporter-encountered-failure",
    "dcgm-exporter-hostengine-unreachable",
})
# DCGM's words for profiling metrics it cannot collect (the same, for its rule).
NOT_SUPPORTED = "dcgm-profiling-not-supported"
MODULE_ERROR = "dcgm-profiling-module-error"
PROFILING_WORDINGS = frozenset({NOT_SUPPORTED, MODULE_ERROR})


def restarts(operand: OperandPod) -> int:
    """How often the operand's containers restarted, all together."""
    return sum(s.restart_count for s in operand.pod.status.container_statuses)


def exporter_logs(facts: Facts, exporter: OperandPod) -> tuple[ContainerLog, ...]:
    """The exporter's logs that tell its present: an earlier run's log only when it
    is failing or has restarted."""
    logs = facts.pod_logs.of(exporter.pod)
    if exporter.healthy and not restarts(exporter):
        logs = tuple(log for log in logs if not log.previous)
    return logs


def no_dcgm(facts: Facts, exporter: OperandPod) -> list[Locator]:
    """The exporter's error lines saying it cannot reach or start DCGM."""
    return [log.locate(m) for log in exporter_logs(facts, exporter)
            for m in log.matches(errors_only=True) if m.signature.id in NO_DCGM_WORDINGS]


def profiling_failures(facts: Facts, exporter: OperandPod) -> list[tuple[str, Locator]]:
    """(signature id, line) of every profiling failure in the exporter's logs; an
    earlier run's log counts only while the exporter is failing or has restarted."""
    restarted = any(s.restart_count for s in exporter.pod.status.container_statuses)
    found: list[tuple[str, Locator]] = []
    for log in facts.pod_logs.of(exporter.pod):
        if log.previous and exporter.healthy and not restarted:
            continue
        found += [(m.signature.id, log.locate(m)) for m in log.matches()
                  if m.signature.id in PROFILING_WORDINGS]
    return found
