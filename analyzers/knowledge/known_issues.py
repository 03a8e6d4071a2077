"""Known issues: a knowledge base of real failures, loaded and checked.

Each file under ``analyzers/data/known_issues/`` holds the entries of one component as
``[[issue]]`` tables (the format is in ``docs/known-issues.md``). An entry says where a
line can appear (``source``: a pod log, an event, a pod status, a unit's journal, the
kernel log, a config file key, Helm values), how to recognise it (literal ``needles``
that must all occur in one line, then an optional ``regex`` on that line only), under
which conditions the diagnosis holds (``context``), the cause and the fix in this
project's words, and the real line(s) it was made from with the public thread each
comes from.

Loading is strict: an unknown key, a duplicate ID, an ID of another file's prefix, a
regex that is too long, does not compile, has a back-reference or a quantifier around a
quantified group (the budgets that keep matching linear on long logs), an example its
own matcher does not find or a negative it does, each raise :class:`KnownIssueError`
naming the file and the entry. The matcher itself is :meth:`Issue.matches`, so the rule
family that runs the base later needs nothing else from this module.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import re._parser as sre_parse  # type: ignore[import-not-found, unused-ignore]
import tomllib
from collections.abc import Iterable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Final

from pydantic import VERSION as PYDANTIC_VERSION
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from analyzers.knowledge import cache

__all__ = [
    "COMPONENTS", "DATA_DIR", "MAX_REGEX", "Case", "Context", "Issue", "IssueFile",
    "KnownIssueError", "Source", "by_source", "fits", "load", "load_dir", "load_file", "packaged",
    "regex_problem",
]

DATA_DIR: Final = Path(__file__).resolve().parent.parent / "data" / "known_issues"
#: Longest regex an entry may carry (characters).
MAX_REGEX: Final = 200

#: Components an entry may name; a file is named after the first component of its entries.
COMPONENTS: Final[frozenset[str]] = frozenset({
    "gpu-operator", "device-plugin", "container-toolkit", "driver", "driver-manager",
    "validator", "dcgm-exporter", "dcgm", "gfd", "nfd", "mig-manager", "network-operator",
    "peermem", "containerd", "cri-o", "docker", "k3s", "rke2", "microk8s", "k0s",
    "kubelet", "scheduler", "openshift", "eks", "gke", "aks", "bottlerocket", "talos",
    "fabric-manager", "kernel", "cdi", "vgpu", "helm", "dra-driver", "kubespray", "kind",
})

_ID_RE: Final = re.compile(r"KI-([A-Z0-9]+(?:-[A-Z0-9]+)*)-([0-9]{3})")
_URL_RE: Final = re.compile(r"https://[a-z0-9.-]+\.[a-z]{2,}/\S+")
_VERSION_RE: Final = re.compile(r"(?:>=|<=|==|>|<)\s*v?[0-9]+(?:\.[0-9]+){0,3}")
_NAME_RE: Final = re.compile(r"[a-z0-9][a-z0-9._*-]*")


class KnownIssueError(ValueError):
    """A known-issue file that cannot be used, with the file (and entry) named."""


class Source(StrEnum):
    POD_LOG = "pod-log"
    EVENT = "event"
    POD_STATUS = "pod-status"
    JOURNAL = "journal"
    KERNEL = "kernel"
    CONFIG = "config"
    HELM_VALUES = "helm-values"


class Case(StrEnum):
    SENSITIVE = "sensitive"
    INSENSITIVE = "insensitive"


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


NonEmpty = Annotated[StrictStr, Field(min_length=1)]
VersionRange = Annotated[StrictStr, Field(min_length=2)]


def _check_range(value: str | None) -> str | None:
    """A version range is comma-joined clauses such as ``>=24.9.0,<25.3``."""
    if value is None:
        return None
    for clause in value.split(","):
        if _VERSION_RE.fullmatch(clause.strip()) is None:
            raise ValueError(f"bad version range {value!r}: clause {clause.strip()!r}")
    return value


class Context(_Strict):
    """Conditions under which the diagnosis holds; each one the bundle may or may not show."""

    operator: VersionRange | None = None
    driver: VersionRange | None = None
    toolkit: VersionRange | None = None
    device_plugin: VersionRange | None = None
    # The DCGM release an exporter image is built on: the first version of its tag
    # (``3.3.5-3.4.1-ubuntu22.04`` is DCGM 3.3.5, exporter 3.4.1).
    dcgm_exporter: VersionRange | None = None
    containerd: VersionRange | None = None
    kernel: VersionRange | None = None
    kubernetes: VersionRange | None = None
    distribution: tuple[NonEmpty, ...] = ()
    cri: tuple[NonEmpty, ...] = ()
    gpu_family: tuple[NonEmpty, ...] = ()
    cloud: tuple[NonEmpty, ...] = ()
    # Pods the cause runs through (globs of a pod's or a container's name): one must run on
    # the line's node (for a cluster-wide line, anywhere), else the cause is not this one.
    pods: tuple[NonEmpty, ...] = ()
    # Node labels whose absence is the cause: at least one node must lack one of them.
    labels_missing: tuple[NonEmpty, ...] = ()

    _ranges = field_validator(
        "operator", "driver", "toolkit", "device_plugin", "dcgm_exporter", "containerd", "kernel",
        "kubernetes")(_check_range)


class Issue(_Strict):
    """One known failure: where its line appears, how to find it, and what it means."""

    id: NonEmpty
    title: NonEmpty
    components: tuple[NonEmpty, ...] = Field(min_length=1)
    source: Source
    container: NonEmpty | None = None
    previous: StrictBool | None = None
    reason: NonEmpty | None = None
    # A glob on the name of the object the event or state is about (the validator's own
    # pod, say): an entry about one component's pod never reads another's.
    object: NonEmpty | None = None
    unit: NonEmpty | None = None
    path: NonEmpty | None = None
    key: NonEmpty | None = None
    needles: tuple[NonEmpty, ...] = Field(min_length=1)
    case: Case = Case.SENSITIVE
    regex: NonEmpty | None = None
    context: Context = Context()
    cause: NonEmpty
    fix: NonEmpty
    commands: tuple[NonEmpty, ...] = ()
    examples: tuple[NonEmpty, ...] = Field(min_length=1)
    sources: tuple[NonEmpty, ...] = Field(min_length=1)
    negative: NonEmpty
    established: NonEmpty

    @field_validator("id")
    @classmethod
    def _id_form(cls, value: str) -> str:
        if _ID_RE.fullmatch(value) is None:
            raise ValueError(f"id {value!r} is not of the form KI-<COMPONENT>-<NNN>")
        return value

    @field_validator("components")
    @classmethod
    def _known_components(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(value) - COMPONENTS)
        if unknown:
            raise ValueError(f"unknown component(s) {unknown} (one of {sorted(COMPONENTS)})")
        return value

    @field_validator("sources")
    @classmethod
    def _https(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [url for url in value if _URL_RE.fullmatch(url) is None]
        if bad:
            raise ValueError(f"every source must be an https:// URL, got {bad}")
        return value

    @field_validator("regex")
    @classmethod
    def _safe_regex(cls, value: str | None) -> str | None:
        if value is not None and (problem := regex_problem(value)):
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _coherent(self) -> Issue:
        allowed = _WHERE[self.source]
        for name in ("container", "previous", "reason", "object", "unit", "path", "key"):
            if getattr(self, name) is not None and name not in allowed:
                raise ValueError(f"{name!r} does not apply to source {self.source.value!r}")
        if self.source is Source.JOURNAL and self.unit is None:
            raise ValueError("a 'journal' entry names its 'unit'")
        if self.source in (Source.CONFIG,) and self.path is None:
            raise ValueError("a 'config' entry names the file 'path'")
        if self.case is Case.INSENSITIVE:
            upper = [n for n in self.needles if n != n.lower()]
            if upper:
                raise ValueError(f"case-insensitive needles are written lower case: {upper}")
        for number, line in enumerate(self.examples, start=1):
            if not self.matches(line):
                raise ValueError(f"example #{number} is not matched by its own matcher: {line!r}")
        if self.matches(self.negative):
            raise ValueError(f"the negative line is matched: {self.negative!r}")
        return self

    @property
    def prefix(self) -> str:
        """The component part of the ID (``TOOLKIT`` of ``KI-TOOLKIT-001``)."""
        found = _ID_RE.fullmatch(self.id)
        assert found is not None  # checked by the validator
        return found.group(1)

    @functools.cached_property
    def cue(self) -> str:
        """The needle a scan looks for first, lower-cased: the longest (the rarest, as a
        rule). A text without it cannot hold a matching line. Kept once made: a scan asks
        for it once per text and entry."""
        return max(self.needles, key=len).lower()

    def matches(self, line: str) -> bool:
        """Whether one line holds every needle and, when there is one, the regex."""
        insensitive = self.case is Case.INSENSITIVE
        text = line.lower() if insensitive else line
        if not all(needle in text for needle in self.needles):
            return False
        return self.regex is None or _compiled(self.regex, insensitive).search(line) is not None


#: The optional location keys each source kind accepts.
_WHERE: Final[dict[Source, frozenset[str]]] = {
    Source.POD_LOG: frozenset({"container", "previous"}),
    Source.EVENT: frozenset({"reason", "object"}),
    Source.POD_STATUS: frozenset({"reason", "container", "object"}),
    Source.JOURNAL: frozenset({"unit"}),
    Source.KERNEL: frozenset(),
    Source.CONFIG: frozenset({"path", "key"}),
    Source.HELM_VALUES: frozenset({"key"}),
}


class IssueFile(_Strict):
    """One component's file: its entries, all of one ID prefix."""

    schema_version: StrictInt = 1
    prefix: NonEmpty
    issue: tuple[Issue, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_prefix(self) -> IssueFile:
        if self.schema_version != 1:
            raise ValueError(f"unsupported schema_version {self.schema_version} (expected 1)")
        other = [i.id for i in self.issue if i.prefix != self.prefix]
        if other:
            raise ValueError(f"IDs not of this file's prefix KI-{self.prefix}-: {other}")
        ids = [i.id for i in self.issue]
        twice = sorted({ident for ident in ids if ids.count(ident) > 1})
        if twice:
            raise ValueError(f"IDs defined twice: {twice}")
        return self


@functools.cache
def _compiled(pattern: str, insensitive: bool) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE if insensitive else 0)


def _repeats(items: Iterable[Any]) -> Iterable[tuple[Any, Any]]:
    """Every (op, argument) pair in a parsed pattern, depth first."""
    for op, arg in items:
        yield op, arg
        if op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, sre_parse.POSSESSIVE_REPEAT):
            yield from _repeats(arg[2])
        elif op is sre_parse.SUBPATTERN:
            yield from _repeats(arg[3])
        elif op is sre_parse.BRANCH:
            for branch in arg[1]:
                yield from _repeats(branch)
        elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
            yield from _repeats(arg[1])


def _is_unbounded_repeat(op: Any, arg: Any) -> bool:
    return op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT) and arg[1] > 1


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` is refused (too long, not compiling, back-reference, a repeated group
    that itself repeats, matching the empty string), or None when it is fine."""
    if len(pattern) > MAX_REGEX:
        return f"regex is {len(pattern)} characters, more than {MAX_REGEX}"
    try:
        parsed = sre_parse.parse(pattern)
        re.compile(pattern)
    except re.error as exc:
        return f"regex does not compile: {exc}"
    for op, arg in _repeats(parsed):
        if op in (sre_parse.GROUPREF, sre_parse.GROUPREF_EXISTS):
            return "regex uses a back-reference"
        if _is_unbounded_repeat(op, arg) and any(
            _is_unbounded_repeat(inner_op, inner_arg) for inner_op, inner_arg in _repeats(arg[2])
        ):
            return "regex repeats a group that holds a repeat (nested quantifier)"
    if re.search(pattern, "") is not None:
        return "regex matches the empty string"
    return None


def _where(error: ValidationError, document: dict[str, Any]) -> str:
    """Each problem of a validation error with the entry's number and ID."""
    lines = []
    raw_entries = document.get("issue")
    entries: list[Any] = raw_entries if isinstance(raw_entries, list) else []
    for problem in error.errors():
        location = problem["loc"]
        label = ".".join(str(part) for part in location)
        if len(location) >= 2 and location[0] == "issue" and isinstance(location[1], int):
            number = location[1]
            raw = entries[number] if number < len(entries) else {}
            ident = raw.get("id") if isinstance(raw, dict) else None
            label = f"issue #{number + 1}" + (f" ({ident})" if ident else "")
            rest = ".".join(str(part) for part in location[2:])
            label += f" {rest}" if rest else ""
        lines.append(f"{label}: {problem['msg']}")
    return "; ".join(lines)


def load_file(path: Path) -> IssueFile:
    """One file, checked; :class:`KnownIssueError` names the file and the entry."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise KnownIssueError(f"{path.name}: cannot be read as TOML: {exc}") from exc
    try:
        return IssueFile.model_validate(document)
    except ValidationError as exc:
        raise KnownIssueError(f"{path.name}: {_where(exc, document)}") from exc


def load_dir(directory: Path) -> tuple[Issue, ...]:
    """Every ``*.toml`` file of a directory, in name order; IDs unique across files."""
    issues: list[Issue] = []
    seen: dict[str, str] = {}
    prefixes: dict[str, str] = {}
    for path in sorted(directory.glob("*.toml")):
        loaded = load_file(path)
        if loaded.prefix in prefixes:
            used_by = prefixes[loaded.prefix]
            raise KnownIssueError(f"{path.name}: prefix {loaded.prefix!r} is taken by {used_by}")
        prefixes[loaded.prefix] = path.name
        for issue in loaded.issue:
            if issue.id in seen:
                raise KnownIssueError(f"{path.name}: {issue.id} is also in {seen[issue.id]}")
            seen[issue.id] = path.name
            issues.append(issue)
    return tuple(issues)


@functools.cache
def load() -> tuple[Issue, ...]:
    """The packaged knowledge base, checked when it was read: kept parsed between runs
    (:mod:`analyzers.knowledge.cache`), keyed by its files and this module."""
    inputs = [Path(__file__), *sorted(DATA_DIR.glob("*.toml"))]
    # pydantic's version names the form its models are pickled in
    return cache.remembered("known-issues", inputs, lambda: load_dir(DATA_DIR),
                            salt=PYDANTIC_VERSION)


def fits(pattern: str | None, name: str | None) -> bool:
    """Whether ``name`` (a container, unit, reason or file path) is what an entry's glob
    ``pattern`` names, case-sensitively; no pattern fits everything."""
    return pattern is None or (name is not None and fnmatch.fnmatchcase(name, pattern))


def by_source(issues: Sequence[Issue]) -> dict[Source, tuple[Issue, ...]]:
    """The entries of each source kind, in base order."""
    grouped: dict[Source, list[Issue]] = {source: [] for source in Source}
    for issue in issues:
        grouped[issue.source].append(issue)
    return {source: tuple(found) for source, found in grouped.items()}


@functools.cache
def packaged(source: Source) -> tuple[Issue, ...]:
    """The packaged entries of one source kind."""
    return by_source(load())[source]


def by_id(issues: Sequence[Issue]) -> dict[str, Issue]:
    """The entries keyed by ID."""
    return {issue.id: issue for issue in issues}
