"""Version numbers as a bundle shows them, read in one place.

A bundle names versions in several shapes: the GPU Operator's calendar releases in an
image tag, chart or app version (``v26.3.1``, ``gpu-operator-v26.3.1``), containerd's
``containerd --version`` line and the kubelet's ``containerd://2.0.5-k3s1`` runtime
version, numeric image tags (``v1.17.8-ubuntu20.04``), the kernel release in
``uname -a``, the API server's ``gitVersion``, the NVIDIA driver's release in the
kernel's words (``NVRM version: ... Kernel Module  535.104.05``, a refusal naming
``the 470.xx NVIDIA`` driver), the driver libraries a CDI spec mounts and the compiler a
driver build names. Each reader below is the only one of its shape; code that compares
versions uses :data:`Version` triples from here.

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
# ``containerd --version`` as the overview shows it: the version with its suffix.
_CONTAINERD_TEXT = re.compile(r"\bv?(\d+\.\d+\.\d+[0-9A-Za-z.+~-]*)")
# The loaded module's version line ("NVRM version: NVIDIA UNIX x86_64 Kernel Module
# 535.104.05  Sat Aug 19 ..." and "... Open Kernel Module for x86_64  570.86.15 ...").
_NVRM = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(?P<version>\d+\.\d+(?:\.\d+)?)")
# The driver release a kernel refusal names ("NVIDIA 535.104.05 driver release", "the
# 550.54 NVIDIA ... driver").
_REFUSING = re.compile(r"NVIDIA (?P<a>\d+\.\d+(?:\.\d+)?) driver release"
                       r"|the (?P<b>\d+\.\d+(?:\.\d+)?) NVIDIA", re.IGNORECASE)
# The driver libraries a CDI spec mounts: their soname suffix is the driver's version.
_LIBRARY = re.compile(r"lib(?:cuda|nvidia-ml|nvidia-ptxjitcompiler)\.so\.(\d+\.\d+(?:\.\d+)?)")
# The last dotted number in a compiler's description ("gcc version 12.3.0 (Ubuntu ...)").
_COMPILER = re.compile(r"(\d+\.\d+(?:\.\d+)?)(?!.*\d+\.\d+)")
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


def containerd_text(version_txt: str | None) -> str | None:
    """containerd's version as ``containerd --version`` writes it, suffix kept
    (``1.7.27``, ``1.6.20~ds1``); None where that output names none."""
    found = _CONTAINERD_TEXT.search(version_txt or "")
    return found.group(1) if found else None


def nvrm_driver(line: str) -> str | None:
    """The driver version in the kernel module's ``NVRM version:`` line
    (``/proc/driver/nvidia/version``); None for a line of another shape."""
    found = _NVRM.search(line)
    return found["version"] if found else None


def refused_driver(text: str) -> str | None:
    """The driver release a kernel message refusing a GPU names; None where it names none."""
    found = _REFUSING.search(text)
    return (found["a"] or found["b"]) if found else None


def library_versions(text: str) -> set[str]:
    """The driver versions in the sonames of the driver libraries ``text`` names
    (``libnvidia-ml.so.550.54.15`` ...): a CDI spec names the driver it was made for."""
    return set(_LIBRARY.findall(text))


def compiler(description: str) -> str | None:
    """The version of a compiler as a build log describes it: its last dotted number
    (``gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)`` gives ``12.3.0``)."""
    found = _COMPILER.search(description)
    return found.group(1) if found else None
