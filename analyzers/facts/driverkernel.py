"""Does the operator's driver container fit the node's kernel?

Two ways it does not: the driver image tag for the node does not exist (precompiled
images are tagged ``<branch>-<kernel>-<os>``, so a kernel upgrade asks for a tag
nobody built), or the container builds the module at start and the build fails
(no headers for the running kernel, no repository access, module refused).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from analyzers.facts.podlogs import PodLogs
from analyzers.knowledge import signatures
from bundle import NodeArtifacts, specs, versions
from bundle.evidence import Locator, join_pointer
from bundle.kube import Event, Node, Pod

# The wordings of a driver container that cannot install for the node's kernel, and of
# its image that cannot be pulled (analyzers/data/signatures.toml; the catalog rule they
# feed lists the same ids, which tests/test_fact_wordings.py checks).
INSTALL_WORDINGS = frozenset({
    "driver-installer-module-load-failed", "driver-install-failed", "driver-build-dkms-conf",
    "driver-build-compiler-check", "driver-kernel-version-unresolved",
    "driver-package-repo-unreachable", "driver-image-pull-failed",
    "driver-image-tag-not-found",
})
DRIVER_CONTAINER = "nvidia-driver-ctr"
MISSING_TAG = "driver-image-tag-not-found"  # the registry says the tag does not exist


@dataclass(frozen=True, slots=True)
class PullFailure:
    """A message saying the driver image could not be pulled (event or pod status)."""

    message: str
    event: Event | None
    where: Locator
    missing_tag: bool


@dataclass(frozen=True, slots=True)
class DriverKernel:
    node: str
    pod: Pod
    image: str | None
    kernel: str | None
    kernel_where: Locator | None
    precompiled: bool
    pulls: tuple[PullFailure, ...]
    build_errors: tuple[Locator, ...]

    @property
    def missing_tag(self) -> bool:
        return any(p.missing_tag for p in self.pulls)

    @property
    def broken(self) -> bool:
        return bool(self.pulls or self.build_errors)

    @property
    def tag(self) -> str | None:
        if not self.image or ":" not in self.image.rsplit("/", 1)[-1]:
            return None
        return self.image.rsplit(":", 1)[1]


def node_kernel(artifacts: NodeArtifacts, node: Node | None) -> tuple[str | None,
                                                                      Locator | None]:
    """The running kernel: ``uname -a`` (third field) first, else the Node's nodeInfo."""
    text = artifacts.text(specs.UNAME)
    if text:
        for number, line in enumerate(text.splitlines(), start=1):
            release = versions.uname_release(line)
            if release is not None:
                return release, Locator(path=artifacts.path(specs.UNAME), line=number,
                                          excerpt=line.strip())
    if node is not None and node.status.node_info.kernel_version:
        kernel = node.status.node_info.kernel_version
        where = Locator(path=node.source_path,
                        pointer=join_pointer(node.source_pointer, "status", "nodeInfo",
                                             "kernelVersion"),
                        excerpt=f"kernelVersion: {kernel}")
        return kernel, where
    return None, None


# The kernel's kbuild warning names both compilers on two lines; nvidia-installer says it
# on one ("The kernel was built with gcc version X, but the current compiler version is Y").
_BUILT_BY = re.compile(r"The kernel was built (?:by|with):?\s*(?P<cc>.+?)\s*,?\s*$")


_USING = re.compile(r"You are using:\s*(?P<cc>.+?)\s*$|current compiler version is\s*(?P<cc2>.+?)"
                    r"\.?\s*$")


def compilers(path: str, text: str) -> tuple[str, str, tuple[Locator, ...]] | None:
    """The kernel's compiler and the one building the module when the log names two
    different versions, with the lines that say so; None when it names none or one."""
    built: tuple[str, Locator] | None = None
    using: tuple[str, Locator] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        where = Locator(path=path, line=number, excerpt=line.strip()[:200])
        if built is None and (m := _BUILT_BY.search(line)):
            built = (m["cc"], where)
            line = line[m.end():]
        if built is not None and using is None and (m := _USING.search(line)):
            using = (m["cc"] or m["cc2"], where)
    if built is None or using is None:
        return None
    kernel_cc, module_cc = (versions.compiler(cc) for cc, _ in (built, using))
    if kernel_cc is None or module_cc is None or kernel_cc == module_cc:
        return None  # the same compiler under another name: the kernel's warning only
    return built[0], using[0], tuple(dict.fromkeys((built[1], using[1])))


def driver_image(pod: Pod) -> str | None:
    for container in pod.spec.containers:
        if container.name == DRIVER_CONTAINER:
            return container.image or None
    for container in pod.spec.containers:
        if "/driver:" in container.image:
            return container.image
    return None


def _pull_failures(pod: Pod, events: Iterable[Event]) -> list[PullFailure]:
    found: list[PullFailure] = []
    for event in events:
        ids = _pull_signatures(event.message, "event")
        if ids:
            where = Locator(path=event.source_path,
                            pointer=join_pointer(event.source_pointer, "message"),
                            excerpt=event.message or "")
            found.append(PullFailure(event.message or "", event, where, MISSING_TAG in ids))
    for index, status in enumerate(pod.status.container_statuses):
        message = status.state.waiting.message if status.state.waiting else None
        ids = _pull_signatures(message, "pod-status")
        if ids:
            where = Locator(path=pod.source_path,
                            pointer=join_pointer(pod.source_pointer, "status",
                                                 "containerStatuses", index, "state",
                                                 "waiting", "message"),
                            excerpt=message or "")
            found.append(PullFailure(message or "", None, where, MISSING_TAG in ids))
    return found


def _pull_signatures(message: str | None, source: str) -> set[str]:
    """Ids of the install wordings a message matches (empty: not a driver pull failure)."""
    if not message:
        return set()
    return {m.signature.id for m in signatures.match(message, source)
            if m.signature.id in INSTALL_WORDINGS}


def driver_kernel(artifacts: NodeArtifacts, node: Node | None, pod: Pod,
                  events: Iterable[Event], logs: PodLogs,
                  policy_precompiled: bool) -> DriverKernel:
    kernel, where = node_kernel(artifacts, node)
    image = driver_image(pod)
    errors: list[Locator] = []
    for log in logs.of(pod):
        if log.container != DRIVER_CONTAINER:
            continue
        errors.extend(log.locate(m) for m in log.matches(errors_only=True)
                      if m.signature.id in INSTALL_WORDINGS)
    precompiled = policy_precompiled or bool(kernel and image and kernel in image)
    return DriverKernel(
        node=artifacts.name, pod=pod, image=image, kernel=kernel, kernel_where=where,
        precompiled=precompiled, pulls=tuple(_pull_failures(pod, events)),
        build_errors=tuple(errors),
    )

