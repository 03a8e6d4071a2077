"""Version numbers as a bundle shows them, read in one place.

A bundle names versions in several shapes: the GPU Operator's calendar releases in an
image tag, chart or app version (``v26.3.1``, ``gpu-operator-v26.3.1``), containerd's
``containerd --version`` line and the kubelet's ``containerd://2.0.5-k3s1`` runtime
version, numeric image tags (``v1.17.8-ubuntu20.04``), the kernel release in
``uname -a`` and the API server's ``gitVersion``. Each reader below is the only one of
its shape; code that compares versions uses :data:`Version` triples from here.

The readers are bounded where a bundle could make them slow: a pattern does not restart
inside a long run of digits, and the runtime version's major is read only up to nine
digits (``int()`` of thousands of digits is refused by Python).
"""

from __future__ import annotations

import re

Version = tuple[int, int, int]

# A release of the GPU Operator: a two-digit year (``26.3.1``) — the calendar scheme.
_OPERATOR = re.compile(r"(?<![0-9.])v?(\d{2})\.(\d{1,2})\.(\d{1,3})(?![0-9])")
# The same triple with the older one-digit majors too (``v1.7.0`` ... ``v25.10.0``).
_RELEASE = re.compile(r"(?<![0-9.])v?(\d{1,2})\.(\d{1,2})\.(\d{1,3})(?![0-9])")
# ``containerd --version``: the first word shaped like a version after the program and
# module names.
_CONTAINERD_TOKEN = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")
# nodeInfo's ``containerRuntimeVersion`` when the runtime is containerd.
_CONTAINERD_RUNTIME = re.compile(r"containerd://v?(\d{1,9})\.")
# A numeric version in an image tag: a match never starts after a digit (the leftmost
# one would have started there), so a long run of digits is tried once.
_NUMERIC = re.compile(r"(?<!\d)(\d+(?:\.\d+)+)")


def operator_release(text: str | None) -> Version | None:
    """The first ``YY.MM.PP`` in a GPU Operator tag, chart name or app version (a
    two-digit year: ``v26.3.1``, ``gpu-operator-v26.3.1``); None if there is none."""
    if not text:
        return None
    found = _OPERATOR.search(text)
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def release(text: str | None) -> Version | None:
    """The first ``X.Y.Z`` (one- or two-digit major: ``v1.7.0``, ``v25.10.0``) of a
    release name; after an image reference's last ``:`` when it has one."""
    if not text:
        return None
    found = _RELEASE.search(text.rpartition(":")[2] or text)
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def containerd(version_txt: str | None) -> Version | None:
    """containerd's version from ``containerd --version`` output; None when absent.

    Reads upstream (``... v1.7.27 <commit>``), Debian (``... 1.6.20~ds1 1.6.20~ds1-1``),
    Docker's packages (``containerd containerd.io 1.7.27 <commit>``), 2.x (module path
    ``.../containerd/v2 v2.0.0 <commit>``) and suffixed builds (``v1.7.23-k3s2``).
    """
    for line in (version_txt or "").splitlines():
        tokens = line.split()
        # The first word is the program name, the second the module or package name
        # (which may end in /v2); a bare version line has neither.
        for token in tokens[2:] if len(tokens) > 2 else tokens:
            found = _CONTAINERD_TOKEN.match(token)
            if found:
                patch = found.group(3)
                return int(found.group(1)), int(found.group(2)), int(patch) if patch else 0
    return None


def containerd_major(runtime_version: str | None) -> int:
    """containerd's major version in nodeInfo's ``containerd://2.0.5-k3s1.32`` (0: not
    containerd, or unreadable)."""
    found = _CONTAINERD_RUNTIME.match(runtime_version or "")
    return int(found.group(1)) if found else 0


def image(reference: str) -> tuple[str, str | None]:
    """(repository name, numeric tag version) of an image reference.

    ``nvcr.io/nvidia/k8s/container-toolkit:v1.17.8-ubuntu20.04`` gives
    ``("container-toolkit", "1.17.8")``; a digest-only reference has no version.
    """
    reference = reference.split("@", 1)[0]
    name, _, tag = reference.rpartition(":")
    if not name or "/" in tag:
        name, tag = reference, ""
    repository = name.rsplit("/", 1)[-1]
    found = _NUMERIC.search(tag)
    return repository, (found.group(1) if found else None)


def fits(expected: str, actual: str) -> bool:
    """Whether ``actual`` is the ``expected`` release, or lies in the expected series
    (``0.19`` holds ``0.19.2``)."""
    want = expected.split(".")
    have = actual.split(".")
    return have[: len(want)] == want


def series(version: str) -> str:
    """The ``major.minor`` series of a dotted version (``26.3.1`` → ``26.3``)."""
    return ".".join(version.split(".")[:2])


def uname_release(line: str) -> str | None:
    """The kernel release in a ``uname -a`` line (its third field, after ``Linux`` and
    the host name); None for a line of another shape."""
    fields = line.split()
    return fields[2] if len(fields) >= 3 and fields[0] == "Linux" else None


def dotted(version: Version, *, prefix: str = "") -> str:
    """A version triple as text: ``(26, 3, 1)`` → ``26.3.1`` (``v26.3.1`` with ``prefix``)."""
    return prefix + ".".join(map(str, version))
