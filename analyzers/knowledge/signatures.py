"""Known-error signatures: load the knowledge base and match text against it.

The knowledge base is data (``analyzers/data/signatures.toml``), not code, so a support
engineer can add an entry without writing Python; :func:`load_file` validates an extra
TOML file with the same rules as the packaged one, and every run reads the packaged file
(:mod:`analyzers.knowledge.packaged`) with all of them.

Each signature says *what a line means* (one diagnosis, many wordings across component
versions), where such a line can appear (``sources``, optionally narrowed to container
names), which catalog rules it feeds, and carries real example lines with the public URL
they were taken from.

Matching strategy (documented because it is the hot path on multi-megabyte logs):

1. The input text is lower-cased once per call.
2. Every signature declares one or more ``needle`` literals (lower case). A signature is
   only considered when at least one of its needles occurs in the lower-cased text; this
   is a plain substring test (C speed), so on a typical log nearly every regex is skipped.
   A signature without needles is always tried (allowed for user files, but slower).
3. Only then is the signature's case-insensitive regex run with ``finditer`` on the
   original text, so spans refer to the caller's string. A regex is compiled the first
   time it is run: most runs need few of them.

``match`` never raises on any text: non-``str`` input, unknown sources and empty text give
an empty list.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Final

from analyzers.knowledge import cache, packaged

__all__ = [
    "COMPONENTS",
    "KINDS",
    "SOURCES",
    "Example",
    "Signature",
    "SignatureMatch",
    "combine",
    "for_rule",
    "get",
    "load",
    "load_file",
    "match",
    "parse",
]

#: Components a signature may name. ``crio`` and ``apiserver`` extend the original list:
#: CRI-O reports the missing-handler error in its own words, and admission errors
#: (RuntimeClass, ResourceQuota) come from the API server, not from kubelet.
COMPONENTS: Final[frozenset[str]] = frozenset(
    {
        "containerd",
        "crio",
        "kubelet",
        "scheduler",
        "apiserver",
        "device-plugin",
        "toolkit",
        "driver",
        "validator",
        "dcgm-exporter",
        "dcgm",
        "gfd",
        "mig-manager",
        "fabric-manager",
        "operator",
        "nfd",
        "kernel",
    }
)

#: Fixed source names. Any ``journal:<unit>`` is accepted as well.
#: ``event``: a Kubernetes event message; ``log``: a container log line;
#: ``kernel``: dmesg or kernel lines from a journal; ``pod-status``: a pod's
#: ``status.message`` or a container state message (``waiting.message`` ...).
SOURCES: Final[frozenset[str]] = frozenset({"event", "log", "kernel", "pod-status"})

#: ``error``: the line reports a failure. ``marker``: a progress or waiting line that is
#: normal on its own but tells a rule how far a component got (or which version wrote it).
KINDS: Final[frozenset[str]] = frozenset({"error", "marker"})

_JOURNAL_RE: Final = re.compile(r"journal:[a-z0-9][a-z0-9@._-]*")
_ID_RE: Final = re.compile(r"[a-z0-9][a-z0-9-]*[a-z0-9]")
_RULE_RE: Final = re.compile(r"[A-Z]{2,4}[0-9]{3}")
_DATA_NAME: Final = "signatures"
_NEWLINE: Final = re.compile("\n")

_REQUIRED: Final[tuple[str, ...]] = (
    "id",
    "component",
    "title",
    "pattern",
    "sources",
    "versions",
    "rules",
    "explanation",
    "remediation",
    "reference",
    "example",
)
_OPTIONAL: Final[frozenset[str]] = frozenset(
    {"needle", "containers", "kind", "also_matches", "negatives"}
)
_EXAMPLE_KEYS: Final[frozenset[str]] = frozenset({"text", "source", "input", "container"})


@dataclass(frozen=True, slots=True)
class Example:
    """A real line showing one wording of a signature.

    ``source`` is the public URL where the wording was seen. ``input`` is the kind of
    bundle input the line comes from (``event``, ``log``, ``journal:...``); it defaults to
    the signature's first source. ``container`` names the container for log lines.
    """

    text: str
    source: str
    input: str
    container: str | None = None


@dataclass(frozen=True, slots=True)
class Signature:
    """One known error (or progress marker) and every wording it has across versions."""

    id: str
    component: str
    title: str
    pattern: str
    sources: tuple[str, ...]
    versions: str
    rules: tuple[str, ...]
    explanation: str
    remediation: str
    reference: str
    examples: tuple[Example, ...]
    needles: tuple[str, ...] = ()
    containers: tuple[str, ...] = ()
    kind: str = "error"
    also_matches: tuple[str, ...] = ()
    negatives: tuple[str, ...] = ()

    @property
    def regex(self) -> re.Pattern[str]:
        """``pattern`` compiled case-insensitively (once per pattern, when first used)."""
        return _compiled(self.pattern)

    def applies_to(self, source: str, container: str | None = None) -> bool:
        """Whether lines from ``source`` (and ``container``, for logs) can carry this error.

        A container restriction only narrows ``log`` input, and only when the caller knows
        the container name; with ``container=None`` the signature is still tried.
        """
        if source not in self.sources:
            return False
        if source == "log" and self.containers and container is not None:
            return any(fnmatchcase(container, glob) for glob in self.containers)
        return True

    def passes_prefilter(self, lowered: str) -> bool:
        """Cheap test on lower-cased text: at least one needle occurs (or none declared)."""
        return not self.needles or any(needle in lowered for needle in self.needles)


@dataclass(frozen=True, slots=True)
class SignatureMatch:
    """A signature found in a text.

    ``text`` is the whole line that holds the match (without its line break), ready to be
    quoted as evidence; ``span`` is the match's (start, end) offsets in the string given to
    :func:`match`; ``line`` is the 1-based line number of that line in the same string.
    """

    signature: Signature
    text: str
    span: tuple[int, int]
    line: int = 0


# --------------------------------------------------------------------------- loading


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """Compiled when a signature is first tried, not when loaded: compiling all 64 takes
    5 ms, and the needles let a small bundle skip all but a handful."""
    return re.compile(pattern, re.IGNORECASE)


def _entry_name(index: int, raw: object) -> str:
    if isinstance(raw, Mapping):
        sig_id = raw.get("id")
        if isinstance(sig_id, str) and sig_id:
            return f"signature #{index + 1} (id={sig_id!r})"
    return f"signature #{index + 1}"


def _str(entry: Mapping[str, object], key: str, where: str) -> str:
    value = entry[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: {key!r} must be a non-empty string")
    return value


def _str_list(
    entry: Mapping[str, object], key: str, where: str, *, allow_empty: bool = False
) -> tuple[str, ...]:
    value = entry.get(key, [])
    if isinstance(value, str) and key == "needle":
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{where}: {key!r} must be a list of non-empty strings")
    if not value and not allow_empty:
        raise ValueError(f"{where}: {key!r} must not be empty")
    return tuple(value)


def _check_source(name: str) -> bool:
    return name in SOURCES or _JOURNAL_RE.fullmatch(name) is not None


def _check_examples(raw: object, where: str, sources: tuple[str, ...]) -> None:
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: needs at least one [[signature.example]]")
    for number, item in enumerate(raw, start=1):
        here = f"{where}, example #{number}"
        if not isinstance(item, Mapping):
            raise ValueError(f"{here}: must be a table")
        unknown = sorted(set(item) - _EXAMPLE_KEYS)
        if unknown:
            raise ValueError(f"{here}: unknown key(s) {', '.join(unknown)}")
        for key in ("text", "source"):
            if key not in item:
                raise ValueError(f"{here}: missing required key {key!r}")
        _str(item, "text", here)
        url = _str(item, "source", here)
        if not url.startswith("https://"):
            raise ValueError(f"{here}: 'source' must be an https:// URL, got {url!r}")
        input_kind = item.get("input", sources[0])
        if not isinstance(input_kind, str) or input_kind not in sources:
            raise ValueError(
                f"{here}: 'input' must be one of the signature's sources {list(sources)}"
            )
        container = item.get("container")
        if container is not None and (not isinstance(container, str) or not container):
            raise ValueError(f"{here}: 'container' must be a non-empty string")


def _parse_entry(index: int, raw: object, origin: str) -> Signature:
    """Check one ``[[signature]]`` table, naming the file and the entry on any problem,
    then build it."""
    where = f"{origin}: {_entry_name(index, raw)}"
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: must be a table")
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise ValueError(f"{where}: missing required key(s) {', '.join(missing)}")
    unknown = sorted(set(raw) - set(_REQUIRED) - _OPTIONAL)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")

    sig_id = _str(raw, "id", where)
    if _ID_RE.fullmatch(sig_id) is None:
        raise ValueError(f"{where}: id must be lower-case words joined by '-'")
    component = _str(raw, "component", where)
    if component not in COMPONENTS:
        raise ValueError(f"{where}: unknown component {component!r} (one of {sorted(COMPONENTS)})")
    pattern = _str(raw, "pattern", where)
    try:
        regex = _compiled(pattern)
    except re.error as exc:
        raise ValueError(f"{where}: pattern does not compile: {exc}") from exc
    if regex.search("") is not None:
        raise ValueError(f"{where}: pattern matches the empty string")

    sources = _str_list(raw, "sources", where)
    bad_sources = [s for s in sources if not _check_source(s)]
    if bad_sources:
        raise ValueError(
            f"{where}: unknown source(s) {bad_sources} "
            f"(one of {sorted(SOURCES)} or 'journal:<unit>')"
        )
    containers = _str_list(raw, "containers", where, allow_empty=True)
    if containers and "log" not in sources:
        raise ValueError(f"{where}: 'containers' only applies when 'log' is a source")
    rules = _str_list(raw, "rules", where)
    bad_rules = [r for r in rules if _RULE_RE.fullmatch(r) is None]
    if bad_rules:
        raise ValueError(f"{where}: malformed rule id(s) {bad_rules}")
    needles = _str_list(raw, "needle", where, allow_empty=True)
    upper = [n for n in needles if n != n.lower()]
    if upper:
        raise ValueError(f"{where}: needles must be lower case, got {upper}")
    kind = raw.get("kind", "error")
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"{where}: 'kind' must be one of {sorted(KINDS)}")
    reference = _str(raw, "reference", where)
    if not reference.startswith("https://"):
        raise ValueError(f"{where}: 'reference' must be an https:// URL")
    for key in ("title", "versions", "explanation", "remediation"):
        _str(raw, key, where)
    _check_examples(raw["example"], where, sources)
    for key in ("also_matches", "negatives"):
        _str_list(raw, key, where, allow_empty=True)

    signature = _build(raw)
    _check_own_lines(signature, where)
    return signature


def _build(raw: Mapping[str, Any]) -> Signature:
    """The signature of one ``[[signature]]`` table that :func:`_parse_entry` has
    checked. The only place that fills in the defaults of optional keys."""
    sources = tuple(raw["sources"])
    needle = raw.get("needle", ())
    return Signature(
        id=raw["id"],
        component=raw["component"],
        title=raw["title"],
        pattern=raw["pattern"],
        sources=sources,
        versions=raw["versions"],
        rules=tuple(raw["rules"]),
        explanation=raw["explanation"],
        remediation=raw["remediation"],
        reference=raw["reference"],
        examples=tuple(
            Example(text=item["text"], source=item["source"],
                    input=item.get("input", sources[0]), container=item.get("container"))
            for item in raw["example"]
        ),
        needles=(needle,) if isinstance(needle, str) else tuple(needle),
        containers=tuple(raw.get("containers", ())),
        kind=raw.get("kind", "error"),
        also_matches=tuple(raw.get("also_matches", ())),
        negatives=tuple(raw.get("negatives", ())),
    )


def _check_own_lines(signature: Signature, where: str) -> None:
    """Every example must be found by its signature; no negative line may be."""
    for number, example in enumerate(signature.examples, start=1):
        found = match(
            example.text, example.input, container=example.container, signatures=(signature,)
        )
        if not found:
            raise ValueError(
                f"{where}, example #{number}: not matched by its own pattern/needle "
                f"as input {example.input!r}: {example.text!r}"
            )
    for negative in signature.negatives:
        for source in signature.sources:
            if match(negative, source, signatures=(signature,)):
                raise ValueError(f"{where}: negative line is matched: {negative!r}")


def parse(
    document: Mapping[str, object],
    origin: str = "<signatures>",
    *,
    known_ids: Iterable[str] = (),
) -> tuple[Signature, ...]:
    """Validate a parsed TOML document and build its signatures.

    ``known_ids`` are ids defined elsewhere (e.g. the built-in set) that ``also_matches``
    may refer to. Raises :class:`ValueError` naming the file and the entry on any problem.
    """
    version = document.get("schema_version", 1)
    if version != 1:
        raise ValueError(f"{origin}: unsupported schema_version {version!r} (expected 1)")
    unknown = sorted(set(document) - {"schema_version", "signature"})
    if unknown:
        raise ValueError(f"{origin}: unknown top-level key(s) {', '.join(unknown)}")
    entries = document.get("signature")
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{origin}: expected one or more [[signature]] tables")

    signatures: list[Signature] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(entries):
        signature = _parse_entry(index, raw, origin)
        if signature.id in seen:
            raise ValueError(
                f"{origin}: {_entry_name(index, raw)}: duplicate id "
                f"(first used by signature #{seen[signature.id] + 1})"
            )
        seen[signature.id] = index
        signatures.append(signature)

    valid = set(seen) | set(known_ids)
    for index, signature in enumerate(signatures):
        for other in signature.also_matches:
            if other == signature.id or other not in valid:
                raise ValueError(
                    f"{origin}: {_entry_name(index, {'id': signature.id})}: "
                    f"also_matches names unknown or own id {other!r}"
                )
    return tuple(signatures)


def _parse_text(text: str, origin: str, known_ids: Iterable[str]) -> tuple[Signature, ...]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{origin}: not valid TOML: {exc}") from exc
    return parse(document, origin, known_ids=known_ids)


@functools.cache
def load() -> tuple[Signature, ...]:
    """The packaged signatures, from the TOML with every check when it was read: kept
    parsed between runs (:mod:`analyzers.knowledge.cache`), keyed by the file and this
    module."""
    return cache.remembered(
        "signatures", [Path(__file__), packaged.DATA / f"{_DATA_NAME}.toml"],
        lambda: _parse_text(packaged.read_toml(_DATA_NAME),
                            f"analyzers/data/{_DATA_NAME}.toml", ()))


def load_file(path: str | os.PathLike[str]) -> tuple[Signature, ...]:
    """Load and validate a user-supplied signature file (same format as the packaged one).

    Ids must be unique within the file; ``also_matches`` may name ids of the file or of the
    built-in set. To use the result together with the built-in set, call
    ``combine(load(), load_file(path))``, which rejects id collisions.
    """
    name = os.fspath(path)
    with open(name, encoding="utf-8") as handle:
        text = handle.read()
    return _parse_text(text, name, (s.id for s in load()))


def combine(*groups: Iterable[Signature]) -> tuple[Signature, ...]:
    """Concatenate signature sets, refusing two signatures with the same id."""
    merged: dict[str, Signature] = {}
    for group in groups:
        for signature in group:
            if signature.id in merged:
                raise ValueError(f"duplicate signature id {signature.id!r}")
            merged[signature.id] = signature
    return tuple(merged.values())


# --------------------------------------------------------------------------- matching


class _Lines:
    """Line lookup for match offsets, built only when a match needs it."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._breaks: list[int] | None = None

    def locate(self, start: int) -> tuple[int, str]:
        if self._breaks is None:
            self._breaks = [hit.start() for hit in _NEWLINE.finditer(self._text)]
        index = bisect.bisect_left(self._breaks, start)
        line_start = self._breaks[index - 1] + 1 if index else 0
        line_end = self._breaks[index] if index < len(self._breaks) else len(self._text)
        return index + 1, self._text[line_start:line_end].rstrip("\r")


def match(
    text: str,
    source: str,
    *,
    container: str | None = None,
    signatures: Sequence[Signature] | None = None,
) -> list[SignatureMatch]:
    """Find every known signature in ``text`` (one line or a whole log).

    ``source`` is where the text comes from (``event``, ``log``, ``journal:containerd``,
    ``kernel``, ``pod-status`` ...); only signatures listing it are tried, and for ``log``
    their container globs must accept ``container`` when it is given. Results are ordered
    by position, then by signature order. Never raises on any text.
    """
    if not isinstance(text, str) or not isinstance(source, str) or not text:
        return []
    lowered = text.lower()
    if signatures is None:
        candidates, needles = _applicable(source, container)
        if not candidates or (needles is not None
                              and not any(needle in lowered for needle in needles)):
            return []  # the hot path: most lines hold no needle of any signature
    else:
        candidates = tuple((order, signature) for order, signature in enumerate(signatures)
                           if signature.applies_to(source, container))
    lines = _Lines(text)
    found: list[tuple[int, int, SignatureMatch]] = []
    for order, signature in candidates:
        if not signature.passes_prefilter(lowered):
            continue
        for hit in signature.regex.finditer(text):
            start, end = hit.span()
            if start == end:
                continue
            line_no, line_text = lines.locate(start)
            found.append(
                (start, order, SignatureMatch(signature, line_text, (start, end), line_no))
            )
    found.sort(key=lambda item: (item[0], item[1]))
    return [item[2] for item in found]


@functools.lru_cache(maxsize=1024)
def _applicable(source: str, container: str | None
                ) -> tuple[tuple[tuple[int, Signature], ...], tuple[str, ...] | None]:
    """The built-in signatures that apply to ``source`` (and ``container``), with their
    position in :func:`load`, and all their needles (None when one of them declares no
    needle, so every line must be tried). Built once per source: :func:`match` runs once
    per journal entry and per event, hundreds of thousands of times on a large bundle."""
    found = tuple((order, signature) for order, signature in enumerate(load())
                  if signature.applies_to(source, container))
    if any(not signature.needles for _, signature in found):
        return found, None
    return found, tuple(sorted({needle for _, sig in found for needle in sig.needles}))


def needles(source: str) -> tuple[str, ...] | None:
    """Every needle of the built-in signatures for ``source`` (lower case); None when one
    of them has no needle. Text holding none of them matches nothing there, so a caller
    with many lines can test their joined text once before matching line by line."""
    return _applicable(source, None)[1]


def for_rule(rule_id: str) -> tuple[Signature, ...]:
    """Built-in signatures that feed the catalog rule ``rule_id`` (e.g. ``"RT001"``)."""
    return tuple(s for s in load() if rule_id in s.rules)


def get(signature_id: str) -> Signature:
    """The built-in signature with this id; :class:`KeyError` if there is none."""
    for signature in load():
        if signature.id == signature_id:
            return signature
    raise KeyError(signature_id)
