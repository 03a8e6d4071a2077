"""The operator's driver container: the first build or install step that fails, and of what kind.

The driver container installs the NVIDIA driver on the node at start: it refreshes the
package cache, installs the running kernel's headers, compiles and loads the module (or
installs a precompiled package for the kernel). When it fails, its log says where — the
first error line (``facts.first_error``) and the step before it (a ``set -x`` command or
a "Compiling NVIDIA driver kernel modules..." progress line). The known wordings feed
OP010/OP015 through signatures; this fact keeps every failing container's first step,
known wording or not, sorted into what kind of step failed:

``precompiled`` no precompiled driver package for the kernel; ``fetch`` the package
manager cannot reach or fetch from its repositories; ``headers`` no headers or build tree
for the running kernel; ``compiler`` the module does not compile (a compiler error, or the
compiler differs from the kernel's); ``module-load`` built but not loaded;
``module-unload`` a driver already loaded cannot be unloaded; ``other``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from analyzers.facts.driverkernel import DRIVER_CONTAINER
from analyzers.facts.first_error import FirstError, Level
from analyzers.facts.operands import OperandPod
from analyzers.facts.podlogs import PodLogs
from bundle.kube import Pod


class StepKind(StrEnum):
    PRECOMPILED = "precompiled"
    FETCH = "fetch"
    HEADERS = "headers"
    COMPILER = "compiler"
    MODULE_LOAD = "module-load"
    MODULE_UNLOAD = "module-unload"
    OTHER = "other"


# Searched in the error line, then in the step line; the first kind that matches wins.
_KINDS: tuple[tuple[StepKind, re.Pattern[str]], ...] = (
    (StepKind.PRECOMPILED, re.compile(
        r"precompiled|linux-(?:objects|signatures|modules)-nvidia", re.IGNORECASE)),
    (StepKind.FETCH, re.compile(
        r"^Err:\d+|Failed to fetch|Temporary failure resolving|Could not resolve host|"
        r"Could not connect|Unable to connect|Connection timed out|Cannot download|"
        r"Curl error|Failed to download metadata|failed to reach|Hash Sum mismatch|"
        r"Some index files failed to download|Failed to update package cache|"
        r"Cannot retrieve repository|dnf metadata cache|No route to host", re.IGNORECASE)),
    (StepKind.HEADERS, re.compile(
        r"linux-headers|kernel-(?:headers|devel)|/lib/modules/[^\s/]+/(?:build|source)\b|"
        r"kernel headers|kernel source", re.IGNORECASE)),
    (StepKind.COMPILER, re.compile(
        r"compiler differs|compiler version check|cc_version_check|\bcc1\b|\bgcc\b|"
        r"\d+:\d+: (?:fatal )?error:|Compiling NVIDIA|Building kernel modules|"
        r"\bmake(?:\[\d+\])?: \*\*\*", re.IGNORECASE)),
    (StepKind.MODULE_UNLOAD, re.compile(
        r"\brmmod\b|\bunload|driver is in use|\bmodprobe -r\b", re.IGNORECASE)),
    (StepKind.MODULE_LOAD, re.compile(
        r"\binsmod\b|\bmodprobe\b|\bload the kernel module|Kernel module load error|"
        r"\bLoading NVIDIA driver kernel modules", re.IGNORECASE)),
)

# What each kind means, for a finding's summary.
MEANING: dict[StepKind, str] = {
    StepKind.PRECOMPILED: "no precompiled driver package exists for the node's kernel",
    StepKind.FETCH: "the package manager cannot reach or fetch from its repositories "
                    "(network, proxy, mirror or entitlement)",
    StepKind.HEADERS: "the headers or build tree of the node's running kernel cannot be "
                      "installed or found",
    StepKind.COMPILER: "the NVIDIA kernel module does not compile against the node's kernel "
                       "(a driver release older than the kernel's API, or a compiler other "
                       "than the kernel's)",
    StepKind.MODULE_LOAD: "the module was built but the kernel does not load it",
    StepKind.MODULE_UNLOAD: "a driver already loaded on the node cannot be unloaded: "
                            "something on the host holds it",
    StepKind.OTHER: "the step fails for a reason no rule knows yet",
}


@dataclass(frozen=True, slots=True)
class DriverStep:
    """The first failing step of one node's operator driver container."""

    node: str
    operand: OperandPod
    error: FirstError
    kind: StepKind

    @property
    def meaning(self) -> str:
        return MEANING[self.kind]


def kind_of(error: FirstError) -> StepKind:
    """What kind of step failed, from the error line and then the step before it."""
    if error.level is Level.COMPILER:
        return StepKind.COMPILER
    texts = [error.said] + ([error.step_said] if error.step_said else [])
    for text in texts:
        for kind, pattern in _KINDS:
            if pattern.search(text):
                return kind
    return StepKind.OTHER


def named(logs: PodLogs, pod: Pod) -> bool:
    """Whether a known error signature matches a line of ``pod``'s driver container logs:
    then the rule it feeds (OP010, OP012, OP015, DRV004 …) names the failure, and where
    that rule does not fire, OP001 still quotes the first error."""
    return any(log.matches(errors_only=True) for log in logs.container(pod, DRIVER_CONTAINER))


def driver_steps(gpu_nodes: list[str], operands: Mapping[str, Mapping[str, OperandPod]],
                 first_error: Callable[[Pod, str], FirstError | None]) -> dict[str, DriverStep]:
    """Per GPU node whose operator driver pod is not healthy: the first failing step of
    its ``nvidia-driver-ctr`` logs (previous instance first), when they show an error."""
    found: dict[str, DriverStep] = {}
    for node in gpu_nodes:
        operand = operands.get(node, {}).get("driver")
        if operand is None or operand.healthy:
            continue
        error = first_error(operand.pod, DRIVER_CONTAINER)
        if error is not None:
            found[node] = DriverStep(node, operand, error, kind_of(error))
    return found
