"""How one rule names another rule's finding: the target's id and its subject.

A finding's id is ``<rule id>:<subject>``. A rule that links a finding of another rule
(``caused_by`` / ``causes``) builds the id with :func:`link`, never by hand:
``refs.link("RT001", node)``, ``refs.link("DRV001", node, pci)`` (a subject of several
parts is joined with ``/``). The shape of a rule's subject hangs on the rule class
(``Rule.subject``: one of the shapes below, :data:`NODE` unless it says otherwise), and
a rule whose subject has several parts builds its own with the same shape
(``refs.GPU.of(node, pci)``), so the finding and the links to it cannot drift apart.

There is one list of rule ids: the rule files (``analyzers/rules/<family>/<ID>.py``).
A rule names its target by id and imports nothing of it. The engine
(``analyzers/engine/analysis.py``) asks :func:`dangling` about every link a rule makes, against
the target's class (a loaded rule, else the built-in rule of that id): a link to a rule
that does not exist, or to a subject its rule never produces, is an error of the rule
that made it. A link to a finding that simply did not fire this time is normal and is
dropped when the findings are linked. ``tests/test_links.py`` also checks every
``refs.link`` call of the source against its target's file and shape.

This module imports nothing of the project.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NewType

# A finding id built by :func:`link`; ``Rule.finding`` takes links of this type.
Link = NewType("Link", str)


def link(rule_id: str, *parts: str | int) -> Link:
    """The id of ``rule_id``'s finding about the subject ``parts`` (joined by ``/``)."""
    subject = "/".join(str(part) for part in parts)
    return Link(f"{rule_id}:{subject}")


@dataclass(frozen=True, slots=True)
class Subject:
    """What a rule's findings are about: ``shape`` says it in words, ``parts`` is how
    many values a link to one names (a node: one)."""

    shape: str = "<node>"
    parts: int = 1

    def accepts(self, subject: str) -> bool:
        """Whether the rule can have produced a finding with this subject."""
        return bool(subject)

    def of(self, *parts: str | int) -> str:
        """The subject made of ``parts``, as the rule's finding id holds it."""
        return "/".join(str(part) for part in parts)


@dataclass(frozen=True, slots=True)
class Pair(Subject):
    """A subject of two parts, ``<a>/<b>``, both non-empty. ``last``: split at the last
    ``/`` (the second part never holds one); ``number``: the second part is a number."""

    parts: int = 2
    last: bool = False
    number: bool = False

    def accepts(self, subject: str) -> bool:
        first, slash, second = subject.rpartition("/") if self.last else subject.partition("/")
        if not (first and slash and second):
            return False
        return second.isdigit() if self.number else True


# The shapes of the built-in rules' subjects (``Rule.subject``).
NODE = Subject()
# One finding per GPU: the GPU is the canonical PCI address the kernel log or nvidia-smi
# gives (``NodeKernel.key``).
GPU = Pair("<node>/<gpu>", last=True)
# DRV005: a node, or the nodes of one OS whose kernels upgrade unattended.
NODE_OR_KERNELS = Subject("<node> or kernels/<os>")
POLICY = Subject("<ClusterPolicy>")
# OP006: a ClusterPolicy, or ``missing`` when there is none to judge.
POLICY_OR_MISSING = Subject("<ClusterPolicy> or missing")
MISSING = "missing"
RELEASE = Subject("<release>")
REVISION = Pair("<release>/<revision>", last=True, number=True)
POD = Pair("<namespace>/<pod>")
DAEMONSET = Pair("<namespace>/<DaemonSet>")
# CMP001-CMP010: a workload of the GPU stack (its DaemonSet or Deployment).
WORKLOAD = Pair("<namespace>/<workload>")
# SC006: a workload (``namespace/owner``) or a sharing ConfigMap.
WORKLOAD_OR_CONFIGMAP = Pair("<namespace>/<workload or ConfigMap>")


@dataclass(frozen=True, slots=True)
class Known(Subject):
    """KI001: a known-issue entry and where it was seen, ``KI-<COMPONENT>-<NNN>/<place>``
    (the place: a node, ``<namespace>/<workload or pod>``, or an object)."""

    shape: str = "<KI id>/<place>"
    parts: int = 2

    def accepts(self, subject: str) -> bool:
        entry, slash, place = subject.partition("/")
        return entry.startswith("KI-") and bool(slash and place)


KNOWN = Known()


def dangling(link: str, target: Callable[[str], Subject | None]) -> str | None:
    """Why ``link`` can never name a finding (None: it can). ``target`` gives the
    subject shape of the rule with an id, None when no such rule exists."""
    rule_id, colon, subject = link.partition(":")
    if not colon or not subject:
        return f"{link!r} is not <rule id>:<subject>"
    shape = target(rule_id)
    if shape is None:
        return f"{link} names no rule ({rule_id} does not exist)"
    if not shape.accepts(subject):
        return f"{link} is not a finding {rule_id} produces (its subject is {shape.shape})"
    return None
