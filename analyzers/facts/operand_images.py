"""The operand images the operator's pods run, against the versions its release
expects (``analyzers.knowledge.operand_versions``): ``Facts.operand_mismatches(version)``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from analyzers.knowledge.operand_versions import Expected, expected
from bundle import versions
from bundle.kube import Container, Pod


@dataclass(frozen=True, slots=True)
class OperandMismatch:
    """A container whose image version is not the one ``expected`` says; ``section`` and
    ``index`` place it in its pod's spec (``containers``/``initContainers``)."""

    pod: Pod
    section: str
    index: int
    container: Container
    expected: Expected
    actual: str


def mismatches(pods: Iterable[Pod], operator_version: str) -> list[OperandMismatch]:
    """Live pods' containers (sorted by pod name) whose operand image is not the expected
    version for ``operator_version``; each (image, version) once."""
    wanted = expected(operator_version)
    seen: set[tuple[str, str]] = set()
    found: list[OperandMismatch] = []
    for pod in sorted(pods, key=lambda p: p.name):
        if pod.terminated:
            continue
        sections = (("initContainers", pod.spec.init_containers),
                    ("containers", pod.spec.containers))
        for section, containers in sections:
            for index, item in enumerate(containers):
                repository, actual = versions.image(item.image)
                want = wanted.get(repository)
                if want is None or actual is None or versions.fits(want.version, actual):
                    continue
                if (repository, actual) in seen:
                    continue
                seen.add((repository, actual))
                found.append(OperandMismatch(pod, section, index, item, want, actual))
    return found
