"""One pass over each node journal, shared by every reader of it.

A node's journals are its largest files (about 1 MB of JSON lines per node is common),
and parsing them is the analyzer's most expensive step. Several readers each used to
walk every entry of the same journal — the kernel-event fact, RT004 (restarts), RT005
(CRI plugin), DRV003 (driver/library mismatch) and the timeline — and since the parsed
journals cannot all be kept in memory on a large bundle (``bundle/nodecache.py``), each
walk parsed the file again. :func:`journal_scan` walks a journal once and keeps only
what those readers react to:

- ``kernel``: the kernel records (:func:`bundle.kernel.kernel_lines_from_journal`);
- ``matches``: each entry that built-in signatures for ``journal:<unit>`` match, with
  the matches, in journal order (what :func:`analyzers.signatures.match` returns for it);
- ``lifecycle``: every entry that can be a systemd life-cycle line of the unit: its
  message matches :data:`LIFECYCLE` (``Started ...``, ``Stopped ...``, ``Main process
  exited``, ``Scheduled restart job``, ``Failed with result`` ...). Readers looking for
  starts, stops, kills, restarts and failures match their own patterns on these;
- ``pids``: the distinct (``SYSLOG_IDENTIFIER``, ``_PID``) pairs in order of appearance.

Contract for readers of ``lifecycle``: a pattern for a unit life-cycle line must only
match messages that :data:`LIFECYCLE` matches too (``tests/test_journal_scan.py`` checks
the patterns of RT004 and of the timeline with generated lines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from analyzers import signatures
from analyzers.signatures import SignatureMatch
from bundle import Bundle
from bundle.kernel import KernelLine, kernel_lines_from_journal
from bundle.textfiles import JournalEntry

LIFECYCLE = re.compile(r"^(?:Started|Stopping|Stopped) |start request|process exited|"
                       r"scheduled restart|failed with result|sent signal", re.I)
"""What every systemd life-cycle line of a unit holds: ``Started``/``Stopping``/``Stopped
<unit>`` at its start, or ``start request repeated too quickly``, ``Main process
exited``, ``Scheduled restart job``, ``Failed with result``, ``Sent signal``."""


_LEADS = ("started ", "stopping ", "stopped ")
_WORDS = ("start request", "process exited", "scheduled restart", "failed with result",
          "sent signal")


def _maybe_lifecycle(message: str) -> bool:
    """A cheap test that :data:`LIFECYCLE` may match: on ASCII text, lower-casing agrees
    with the regex's case-insensitive matching (other scripts go to the regex)."""
    if not message.isascii():
        return True
    lowered = message.lower()
    return lowered.startswith(_LEADS) or any(word in lowered for word in _WORDS)


@dataclass(frozen=True, slots=True)
class JournalScan:
    """What one pass over ``nodes/<node>/journal/<unit>.jsonl`` found."""

    path: str
    kernel: tuple[KernelLine, ...]
    matches: tuple[tuple[JournalEntry, tuple[SignatureMatch, ...]], ...]
    lifecycle: tuple[JournalEntry, ...]
    pids: tuple[tuple[str, int], ...]

    def matching(self, signature_id: str) -> list[JournalEntry]:
        """Entries a given built-in signature matches, in journal order."""
        return [entry for entry, found in self.matches
                if any(m.signature.id == signature_id for m in found)]


_SCANS: WeakKeyDictionary[Bundle, dict[tuple[str, str], JournalScan]] = WeakKeyDictionary()


def journal_scan(bundle: Bundle, node: str, unit: str) -> JournalScan:
    """The scan of one node's journal of ``unit`` (``containerd``, ``kubelet`` ...),
    made on first use and kept for the bundle's lifetime (it is small)."""
    scans = _SCANS.get(bundle)
    if scans is None:
        scans = _SCANS[bundle] = {}
    found = scans.get((node, unit))
    if found is None:
        found = scans[(node, unit)] = _scan(bundle, node, unit)
    return found


def _may_match(entries: list[JournalEntry], source: str) -> bool:
    """Whether any entry can hold a signature: one needle test over all messages joined
    (lower-cased) instead of one per entry; most journals hold no needle at all."""
    wanted = signatures.needles(source)
    if wanted is None:
        return True
    text = "\n".join(entry.message for entry in entries).lower()
    return any(needle in text for needle in wanted)


def _scan(bundle: Bundle, node: str, unit: str) -> JournalScan:
    artifacts = bundle.node(node)
    path = artifacts.path(f"journal/{unit}.jsonl")
    entries = artifacts.journal(unit)
    source = f"journal:{unit}"
    matches: list[tuple[JournalEntry, tuple[SignatureMatch, ...]]] = []
    lifecycle: list[JournalEntry] = []
    pids: dict[tuple[str, int], None] = {}
    any_hit = _may_match(entries, source)
    for entry in entries:
        if any_hit and (hits := signatures.match(entry.message, source)):
            matches.append((entry, tuple(hits)))
        if _maybe_lifecycle(entry.message) and LIFECYCLE.search(entry.message):
            lifecycle.append(entry)
        if entry.pid is not None:
            pids.setdefault((str(entry.fields.get("SYSLOG_IDENTIFIER", "")), entry.pid))
    kernel = kernel_lines_from_journal(((e.line, e.fields) for e in entries), path)
    return JournalScan(path=path, kernel=tuple(kernel), matches=tuple(matches),
                       lifecycle=tuple(lifecycle), pids=tuple(pids))
