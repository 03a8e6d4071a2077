"""What OP010's driver container log names as the reason its module did not build or load.

nvidia-installer ends a failed load with one generic hint ("built against the wrong or
improperly configured kernel sources, with a version of gcc that differs ...") whatever
went wrong. The log usually names the real error before it: the kernel refusing the
module's signature, the module's DKMS configuration, the compiler version check. OP010
quotes the most specific error the log names, and says the kernel does not fit only
where versions show it (no headers for the running kernel, a precompiled tag for
another kernel, a compiler other than the kernel's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzers.facts.driverkernel import compilers
from bundle.evidence import Locator

# The kernel refusing the module for its signature (insmod/modprobe's strerror, the
# installer's "Kernel module load error: <strerror>", the kernel's own lines).
_SIGNING = re.compile(
    r"(?:Kernel module load error|could not insert\s+(?:module\s+)?\S+)\s*:\s*"
    r"(?:Operation not permitted|Key was rejected by service|Required key not available)"
    r"|Key was rejected by service|not signed (?:with|by) a trusted key"
    r"|unsigned module loading is restricted|Loading of unsigned module is rejected",
    re.IGNORECASE)


_DKMS = re.compile(r"dkms\.conf|Bad return status for module build", re.IGNORECASE)


_COMPILER_CHECK = re.compile(r"cc_version_check|Compiler version check failed", re.IGNORECASE)


_GENERIC = re.compile(r"Unable to load the kernel module|Installation has failed"
                      r"|Failed to update the NVIDIA driver|Kernel module load error",
                      re.IGNORECASE)


_HEADERS = re.compile(r"Could not resolve Linux kernel version|Unable to resolve RHEL version"
                      r"|Could not locate Linux kernel version", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class NamedError:
    """The reason the log names: its kind, the sentence for OP010, and where it is.

    ``kind`` is ``signing``, ``dkms``, ``compiler``, ``kernel`` (versions show the
    kernel does not fit), ``other`` (another error the log names: a package repository,
    say) or ``generic`` (only the installer's hint)."""

    kind: str
    text: str
    where: tuple[Locator, ...]

    @property
    def about_kernel(self) -> bool:
        return self.kind == "kernel"


_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?\s+")


def _quote(text: str) -> str:
    """A log line for a summary: without kubectl's timestamp, one line, capped."""
    text = " ".join(_STAMP.sub("", text.strip()).split())
    return "'" + (text if len(text) <= 160 else text[:157] + "...") + "'"


def _lines(logs: list[tuple[str, str]], pattern: re.Pattern[str]) -> list[Locator]:
    """The log lines ``pattern`` finds (the first two), where no signature names them:
    insmod's and modprobe's refusals sit before the installer's own message."""
    found: list[Locator] = []
    for path, text in logs:
        for number, line in enumerate(text.splitlines(), start=1):
            if pattern.search(line):
                found.append(Locator(path=path, line=number, excerpt=line.strip()[:300]))
                if len(found) == 2:
                    return found
    return found


def named_error(errors: tuple[Locator, ...], logs: list[tuple[str, str]],
                kernel: str) -> NamedError:
    """The most specific reason among the build errors (OP010 signature lines) and the
    driver container's logs (path, text): signing, DKMS, compiler, then the kernel."""
    signing = [e for e in errors if _SIGNING.search(e.excerpt)] or _lines(logs, _SIGNING)
    if signing:
        return NamedError("signing", "the kernel refused the module for its signature: "
                          + _quote(signing[0].excerpt), tuple(signing[:2]))
    dkms = [e for e in errors if _DKMS.search(e.excerpt)]
    if dkms:
        return NamedError("dkms", "the module's DKMS build or configuration failed: "
                          + _quote(dkms[0].excerpt), tuple(dkms[:2]))
    for path, text in logs:
        found = compilers(path, text)
        if found is not None:
            built, using, where = found
            return NamedError("compiler", f"the module is compiled with {using}, the kernel "
                              f"was built with {built}: the compilers differ", where)
    check = [e for e in errors if _COMPILER_CHECK.search(e.excerpt)]
    if check:
        return NamedError("compiler", "the module build stopped at its compiler version "
                          "check: " + _quote(check[0].excerpt), tuple(check[:1]))
    headers = [e for e in errors if _HEADERS.search(e.excerpt)]
    if headers:
        return NamedError("kernel", f"the driver container finds no kernel packages for the "
                          f"node's kernel {kernel}: " + _quote(headers[0].excerpt),
                          tuple(headers[:1]))
    specific = [e for e in errors if not _GENERIC.search(e.excerpt)]
    if specific:
        return NamedError("other", "the driver container fails: " + _quote(specific[0].excerpt),
                          tuple(specific[:2]))
    last = errors[-1]
    return NamedError("generic", "the driver container fails to build or load the module: "
                      + _quote(last.excerpt) + " (the installer's own message; the log names "
                      "no more specific error)", (last,))
