"""The rule base: explicit metadata, a documented docstring, stateless ``check``.

A rule's docstring is its user documentation: the first line is the title, then the
sections ``Why it matters:`` and ``Remediation:``. ``gpu-triage explain ID`` prints it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from analyzers.commands import opens_destructively
from analyzers.facts.collected import holds
from analyzers.facts.preconditions import Need
from analyzers.refs import NODE, Link, Subject
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from bundle import specs
from bundle.evidence import Locator
from bundle.manifest import ManifestItem

if TYPE_CHECKING:
    from analyzers.facts import Facts
    from bundle import Bundle

RULE_ID = re.compile(r"^[A-Z]{2,5}[0-9]{3}$")
SECTIONS = ("Why it matters", "Remediation")


@dataclass(frozen=True, slots=True)
class Input:
    """A bundle path a rule reads. ``per_node`` paths are relative to ``nodes/<name>/``;
    glob patterns are allowed. An ``optional`` input corroborates and never skips. An
    optional input with a ``fallback`` is one the rule replaces, when it cannot be read,
    by what ``fallback`` names: damaged, it makes a rule that found nothing ``partial``
    with a reason saying what it fell back on. A cluster input with an ``error``
    pattern counts as present when the collector's item for it failed with words that
    match it (case-insensitive): the rule then reports that failure instead of being
    skipped."""

    path: str
    per_node: bool = False
    optional: bool = False
    fallback: str | None = None
    error: str | None = None

    def describe(self) -> str:
        return specs.any_node(self.path) if self.per_node else self.path

    def present(self, bundle: Bundle) -> bool:
        if self.per_node:
            return any(self.present_on(bundle, node) for node in bundle.node_names)
        return (holds(bundle, self.path)
                or self.failed_as_expected(bundle.manifest.items) is not None)

    def failed_as_expected(self, items: Sequence[ManifestItem]
                           ) -> tuple[int, ManifestItem] | None:
        """(index, item) of the manifest item of this cluster input whose error matches
        ``error``; None without one."""
        if self.error is None or self.per_node:
            return None
        pattern = re.compile(self.error, re.IGNORECASE)
        for index, item in enumerate(items):
            if item.path == self.path and item.error and pattern.search(item.error):
                return index, item
        return None

    def present_on(self, bundle: Bundle, node: str) -> bool:
        return holds(bundle, specs.node_file(node, self.path))

    def missing_reason(self, bundle: Bundle) -> str:
        refused = [(path, problem.message)
                   for path, problem in bundle.damaged_matching(self.describe())]
        if refused:
            path, message = refused[0]
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            return f"{self.describe()} could not be read: {path}: {message}{more}"
        if self.per_node:
            return f"no node collected {self.path}"
        item = bundle.manifest.item(self.path)
        if item is not None and item.error:
            return f"{self.path} was not collected: {item.error}"
        return f"{self.path} is not in the bundle"


def cluster(path: str, *, optional: bool = False) -> Input:
    """A cluster file as an input: a ``bundle.specs`` path (``specs.PODS``) or, as plugins
    written before the specs name it, the file's name under ``cluster/`` (``pods.json``)."""
    prefix = specs.CLUSTER_DIR
    return Input(path if path.startswith(prefix) else prefix + path, optional=optional)


def node(path: str, *, optional: bool = False, fallback: str | None = None) -> Input:
    return Input(path, per_node=True, optional=optional or fallback is not None,
                 fallback=fallback)


class CannotJudge(Exception):
    """Raised by ``check`` (before it yields anything) when the rule finds at run time
    that the bundle lacks what it needs — an input the static ``inputs`` cannot
    express, such as "no node had its CDI directories collected". The engine reports
    the rule ``skipped`` with this message as the reason."""


@dataclass(frozen=True, slots=True)
class RuleDocs:
    title: str
    why: str
    remediation: str
    body: str


class Context:
    """What a rule sees: the bundle, the shared facts, and the loaded rules' metadata."""

    def __init__(self, bundle: Bundle, facts: Facts, rules: Sequence[type[Rule]]) -> None:
        self.bundle = bundle
        self.facts = facts
        self.rules = tuple(rules)


# Each rule class's parsed docstring (Rule.docs).
_DOCS: dict[type[Rule], RuleDocs] = {}


class Rule:
    """Base class; subclasses set the class variables and implement ``check``."""

    id: ClassVar[str]
    slug: ClassVar[str]
    severity: ClassVar[Severity]
    inputs: ClassVar[tuple[Input, ...]] = ()
    # What the rule's claim rests on (``facts.preconditions.Need``): where one does not
    # hold in the bundle, the engine skips the rule with the reason instead of running it.
    needs: ClassVar[tuple[Need, ...]] = ()
    tags: ClassVar[tuple[str, ...]] = ()
    # How its findings know their cause (a finding may say otherwise): ``CONFIRMED`` when
    # the rule quotes the cause, ``LIKELY`` when it infers it from an absence or a
    # pattern. Every built-in rule states it (tests/test_confidence.py).
    confidence: ClassVar[Confidence] = Confidence.CONFIRMED
    # What one finding is about (``analyzers.refs``): a link to this rule's findings is
    # checked against it. A node unless the rule says otherwise.
    subject: ClassVar[Subject] = NODE
    # A rule whose findings are second opinions (a known wording, not evidence of its
    # own): where a rule that does not defer already explains the same thing, its
    # findings give way (``analyzers.engine.deference``).
    defers: ClassVar[bool] = False
    # Rules of a later phase run after the others (e.g. reporting parse problems that
    # earlier rules recorded while reading files).
    phase: ClassVar[int] = 0
    # Facts the rule reads that need nothing of the node files (the cluster files and
    # container logs only): where worker processes parse node files, the engine makes
    # them meanwhile, off the rules' serial path. Only for a rule that will run (selected,
    # no ``needs``, its inputs present), so nothing is read that the run would not read.
    prepares: ClassVar[tuple[Callable[[Facts], object], ...]] = ()

    def check(self, ctx: Context) -> Iterable[Finding]:
        raise NotImplementedError

    @classmethod
    def skip_reason(cls, bundle: Bundle) -> str | None:
        """Why the engine does not run this rule on ``bundle`` (a required input absent;
        for a rule that requires none, every input absent), or None when it runs it."""
        for needed in cls.inputs:
            if not needed.optional and not needed.present(bundle):
                return needed.missing_reason(bundle)
        if cls.inputs and all(needed.optional for needed in cls.inputs) and not any(
                needed.present(bundle) for needed in cls.inputs):
            # a rule that requires no single input still needs one of them
            shown = "; ".join(needed.missing_reason(bundle) for needed in cls.inputs)
            return f"none of its inputs could be read: {shown}"
        return None

    def unjudged(self, reason: str) -> None:
        """Say, from ``check``, that part of what this rule checks could not be judged
        (a file one node lacks, say): the engine reports the rule ``partial`` with the
        reason instead of ``passed`` (``failed`` keeps its findings and names it)."""
        self.__dict__.setdefault("_unjudged", []).append(reason)

    def unjudged_reasons(self) -> list[str]:
        return list(self.__dict__.get("_unjudged", ()))

    @classmethod
    def family(cls) -> str:
        return cls.id.rstrip("0123456789")

    @classmethod
    def docs(cls) -> RuleDocs:
        """The parsed docstring, once per class: every finding and every rule result
        reads its title or remediation."""
        docs = _DOCS.get(cls)
        if docs is None:
            docs = _DOCS[cls] = parse_docstring(inspect.getdoc(cls) or "")
        return docs

    @classmethod
    def title(cls) -> str:
        return cls.docs().title or cls.slug

    @classmethod
    def finding(
        cls,
        subject: str,
        summary: str,
        *,
        severity: Severity | None = None,
        title: str | None = None,
        nodes: Iterable[str] = (),
        objects: Iterable[ObjectRef] = (),
        evidence: Iterable[Locator | Evidence] = (),
        remediation: str | None = None,
        caused_by: Iterable[Link] = (),
        causes: Iterable[Link] = (),
        confidence: Confidence | None = None,
        references: Iterable[str] = (),
    ) -> Finding:
        """Build a finding whose id is ``<rule id>:<subject>`` (stable across bundles).
        Links name other findings by id through ``analyzers.refs``
        (``refs.link("RT001", node)``).
        A ``likely`` finding whose remediation opens with a command that changes the
        cluster is a programming error (ValueError): a guess is checked before acted on."""
        confidence = confidence or cls.confidence
        remediation = remediation if remediation is not None else as_comments(
            cls.docs().remediation)
        if confidence is Confidence.LIKELY and (step := opens_destructively(remediation)):
            raise ValueError(f"{cls.id}: a likely cause opens with a destructive step: {step}")
        return Finding(
            id=f"{cls.id}:{subject}",
            rule_id=cls.id,
            title=title or cls.title(),
            severity=severity or cls.severity,
            summary=summary,
            nodes=sorted(set(nodes)),
            objects=list(objects),
            evidence=[_evidence(e) for e in evidence],
            remediation=remediation,
            caused_by=sorted(set(caused_by)),
            causes=sorted(set(causes)),
            confidence=confidence,
            references=list(references),
        )


def as_comments(prose: str) -> str:
    """A rule's written remediation as a finding's copy block: every line a shell
    comment, so that prose is read and never offered (or pasted) as a command. Rules
    build the commands they want copied with :mod:`analyzers.commands`."""
    return "\n".join(f"# {line}" if line.strip() else "#" for line in prose.splitlines())


def _evidence(item: Locator | Evidence) -> Evidence:
    if isinstance(item, Evidence):
        return item
    return Evidence(path=item.path, line=item.line, excerpt=item.excerpt, pointer=item.pointer)


def parse_docstring(doc: str) -> RuleDocs:
    """Split a rule docstring into title (its first paragraph), 'Why it matters' and
    'Remediation'."""
    lines = doc.strip().splitlines()
    # The title is the first paragraph, however it is wrapped.
    head = 0
    while head < len(lines) and lines[head].strip():
        head += 1
    title = " ".join(line.strip() for line in lines[:head]).rstrip(".")
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in lines[head:]:
        header = line.strip().rstrip(":")
        if header in SECTIONS and line.strip().endswith(":"):
            current = header
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return RuleDocs(
        title=title,
        why="\n".join(sections.get("Why it matters", [])).strip(),
        remediation="\n".join(sections.get("Remediation", [])).strip(),
        body="\n".join(lines[head:]).strip(),
    )
