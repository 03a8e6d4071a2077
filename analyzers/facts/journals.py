"""One pass over each node journal, shared by every reader of it.

A node's journals are its largest files (about 1 MB of JSON lines per node is common),
and parsing them is the analyzer's most expensive step. Several readers each used to
walk every entry of the same journal — the kernel-event fact, RT004 (restarts), RT005
(CRI plugin), DRV003 (driver/library mismatch), the Fabric Manager fact and the
timeline — and since the parsed journals cannot all be kept in memory on a large bundle,
each walk parsed the file again. :func:`journal_scan` walks a journal once and keeps only
what those readers react to:

- ``kernel``: the kernel records (:func:`bundle.kernel.kernel_lines_from_journal`);
- ``matches``: each entry that built-in signatures for ``journal:<unit>`` match, with
  the matches, in journal order (what :func:`analyzers.knowledge.signatures.match` returns for it);
- ``lifecycle``: every entry that can be a systemd life-cycle line of the unit: its
  message matches :data:`LIFECYCLE` (``Started ...``, ``Stopped ...``, ``Main process
  exited``, ``Scheduled restart job``, ``Failed with result`` ...). Readers looking for
  starts, stops, kills, restarts and failures match their own patterns on these;
- ``pids``: the distinct (``SYSLOG_IDENTIFIER``, ``_PID``) pairs in order of appearance;
- ``known``: each entry that known-issue entries for the unit's journal match
  (:mod:`analyzers.knowledge.known_issues`), with their IDs, in journal order.

Contract for readers of ``lifecycle``: a pattern for a unit life-cycle line must only
match messages that :data:`LIFECYCLE` matches too (``tests/test_journal_scan.py`` checks
the patterns of RT004 and of the timeline with generated lines).

How the pass stays cheap: almost every line is noise, so no Python work is done per
line beyond one ``orjson.loads`` (:func:`bundle.textfiles.journal_records`). Parsing
every line is kept on purpose: it is the only exact test of which lines are not JSON,
and each such line is a problem in the report, as before. It is also not the expensive
part it looks like: on a typical 1.1 KB ``journalctl -o json`` line the parse costs
about 2.4 µs, while one ``str.find`` pass over the raw line costs 0.2 to 0.9 µs, so
looking for the twenty-odd needles in the raw text instead (to parse only the lines
that hold one) would cost more than it saves. Every question is then asked of whole
columns or of all messages at once, at C speed: the messages are lower-cased and
joined, and each signature needle and life-cycle word is one ``str.find`` over them;
the kernel and PID questions read the ``_TRANSPORT``, ``SYSLOG_IDENTIFIER`` and
``_PID`` columns. Only the lines a question picks become :class:`JournalEntry` objects
and go through the exact tests (the signature regexes, :data:`LIFECYCLE`,
:func:`bundle.kernel.kernel_lines_from_journal`), so the answers are those of a walk
over every entry (``tests/test_journal_scan.py``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, repeat
from typing import Any, cast
from weakref import WeakKeyDictionary

from analyzers.knowledge import known_issues, signatures
from analyzers.knowledge.signatures import SignatureMatch
from bundle import Bundle, specs
from bundle.kernel import KernelLine, Note, kernel_lines_from_journal
from bundle.textfiles import (
    JournalEntry,
    journal_entry,
    journal_message,
    journal_pid,
    journal_records,
)

LIFECYCLE = re.compile(r"^(?:Started|Stopping|Stopped) |start request|process exited|"
                       r"scheduled restart|failed with result|sent signal", re.I)
"""What every systemd life-cycle line of a unit holds: ``Started``/``Stopping``/``Stopped
<unit>`` at its start, or ``start request repeated too quickly``, ``Main process
exited``, ``Scheduled restart job``, ``Failed with result``, ``Sent signal``."""

_LEADS = ("started ", "stopping ", "stopped ")
_WORDS = ("start request", "process exited", "scheduled restart", "failed with result",
          "sent signal")


@dataclass(frozen=True, slots=True)
class JournalScan:
    """What one pass over ``nodes/<node>/journal/<unit>.jsonl`` found."""

    path: str
    kernel: tuple[KernelLine, ...]
    matches: tuple[tuple[JournalEntry, tuple[SignatureMatch, ...]], ...]
    lifecycle: tuple[JournalEntry, ...]
    pids: tuple[tuple[str, int], ...]
    known: tuple[tuple[JournalEntry, tuple[str, ...]], ...] = ()

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


def journal_units(bundle: Bundle, node: str) -> list[str]:
    """Units with a journal in the node's directory (``journal/<unit>.jsonl``), in order."""
    prefix = specs.node_file(node, specs.JOURNAL_DIR)
    return [path[len(prefix):-len(".jsonl")] for path in bundle.paths_under(prefix)
            if path.endswith(".jsonl")]


def remember_scan(bundle: Bundle, node: str, unit: str, scan: JournalScan) -> None:
    """Keep a scan made elsewhere (in a worker process) as if made here."""
    _SCANS.setdefault(bundle, {})[(node, unit)] = scan


def _scan(bundle: Bundle, node: str, unit: str) -> JournalScan:
    path = bundle.node(node).path(specs.journal(unit))
    records, problems = journal_records(bundle.read_text(path) or "")
    for line, error in problems:  # what reading the journal through the bundle records
        bundle.problem(path, error, where=f"line {line}")

    def note(message: str, where: str) -> None:
        bundle.problem(path, message, kind="refused", where=where)

    return scan_records(records, path, f"journal:{unit}", note=note)


def scan_records(records: Sequence[dict[str, Any]], path: str, source: str, *,
                 note: Note | None = None) -> JournalScan:
    """The scan of a journal's parsed lines (:func:`bundle.textfiles.journal_records`).

    Every question is asked of whole columns (``map(dict.get, ...)``) or of all messages
    joined, at C speed; entries are made only for the few lines that answer it. ``note``
    hears of kernel records cut at their caps (:func:`bundle.kernel.parse_dmesg`).

    Blank and bad lines (empty objects) hold nothing any question looks for: when there
    are some, the columns are made of the other lines alone (``live`` maps their rows
    back to lines), so a journal of millions of bad lines costs no column work."""
    live: Sequence[int] = list(compress(range(len(records)), records))  # non-empty rows
    if len(live) < len(records):
        records = list(map(records.__getitem__, live))
    else:
        live = range(len(records))
    made: dict[int, JournalEntry] = {}

    def entry(index: int) -> JournalEntry:
        found = made.get(index)
        if found is None:
            found = made[index] = journal_entry(live[index] + 1, records[index])
        return found

    messages = _messages(records)
    joined = _Joined(messages)
    matches = [(entry(i), found) for i, found in signature_hits(messages, source, joined)]
    lifecycle = [entry(i) for i in lifecycle_rows(messages, joined)]
    transports = list(map(dict.get, records, repeat("_TRANSPORT")))
    idents = list(map(dict.get, records, repeat("SYSLOG_IDENTIFIER"), repeat("")))
    kernel = kernel_lines_from_journal(
        ((live[i] + 1, records[i]) for i in _kernel_rows(transports, idents)), path, note=note)
    pids = _pid_pairs(idents, list(map(dict.get, records, repeat("_PID"))))
    unit = source.partition(":")[2]
    known = [(entry(i), found) for i, found in known_issue_rows(messages, unit, joined)]
    return JournalScan(path=path, kernel=tuple(kernel), matches=tuple(matches),
                       lifecycle=tuple(lifecycle), pids=pids, known=tuple(known))


def _messages(records: Sequence[dict[str, Any]]) -> list[str]:
    """Each line's message as :attr:`JournalEntry.message` reads it."""
    raw = list(map(dict.get, records, repeat("MESSAGE"), repeat("")))  # "" where missing
    if set(map(type, raw)) <= {str}:
        return cast(list[str], raw)
    return list(map(journal_message, raw))  # missing, or journald's list of bytes


class _Joined:
    """A journal's messages lower-cased and joined with newlines, so that testing all of
    them for a needle is one ``str.find`` (C speed) instead of a Python step per line."""

    def __init__(self, messages: Sequence[str]) -> None:
        joined = "\n".join(messages)
        if joined.isascii():  # O(1); lower-casing keeps every length
            self.text = joined.lower()
            lengths: Iterable[int] = map(len, messages)
            self.not_ascii: list[int] = []
        else:
            lowered = list(map(str.lower, messages))
            self.text = "\n".join(lowered)
            lengths = map(len, lowered)
            self.not_ascii = [i for i, message in enumerate(messages) if not message.isascii()]
        # starts[i]: where message i begins in text; one past the last for the end
        self.starts = list(accumulate(map((1).__add__, lengths), initial=0))

    def holding(self, needles: Iterable[str]) -> set[int]:
        """Messages whose lower-cased text holds one of ``needles`` (a needle holding a
        newline may also name a message it only spans into)."""
        text, starts = self.text, self.starts
        found: set[int] = set()
        for needle in needles:
            at = text.find(needle)
            while at >= 0:
                index = bisect_right(starts, at) - 1
                found.add(index)
                at = text.find(needle, starts[index + 1])
        return found

    def leading(self, prefixes: Iterable[str]) -> set[int]:
        """Messages whose lower-cased text starts with one of ``prefixes``."""
        text, starts = self.text, self.starts
        found: set[int] = set()
        for prefix in prefixes:
            if len(starts) > 1 and text.startswith(prefix):
                found.add(0)
            at = text.find("\n" + prefix)
            while at >= 0:
                index = bisect_right(starts, at + 1) - 1
                if starts[index] == at + 1:  # not a newline inside a message
                    found.add(index)
                at = text.find("\n" + prefix, at + 1)
        return found


def signature_hits(messages: Sequence[str], source: str, joined: _Joined | None = None
                   ) -> list[tuple[int, tuple[SignatureMatch, ...]]]:
    """(row, matches) of every message that built-in signatures for ``source`` match,
    in order: :func:`analyzers.knowledge.signatures.match` finds nothing in a message holding none
    of their needles, so only the messages holding one are matched."""
    wanted = signatures.needles(source)
    if wanted is None:
        rows: Iterable[int] = range(len(messages))
    else:
        rows = sorted((joined or _Joined(messages)).holding(wanted))
    return [(i, tuple(found)) for i in rows if (found := signatures.match(messages[i], source))]


def known_issue_rows(messages: Sequence[str], unit: str, joined: _Joined | None = None
                     ) -> list[tuple[int, tuple[str, ...]]]:
    """(row, entry IDs) of every message that known-issue entries for ``unit``'s journal
    match, in order: each entry's cue is one ``str.find`` over the joined messages, and
    only the messages holding it are matched exactly."""
    wanted = [issue for issue in known_issues.packaged(known_issues.Source.JOURNAL)
              if known_issues.fits(issue.unit, unit)]
    if not wanted or not messages:
        return []
    joined = joined or _Joined(messages)
    found: dict[int, list[str]] = {}
    for issue in wanted:
        for row in sorted(joined.holding((issue.cue,))):
            if issue.matches(messages[row]):
                found.setdefault(row, []).append(issue.id)
    return [(row, tuple(ids)) for row, ids in sorted(found.items())]


def lifecycle_rows(messages: Sequence[str], joined: _Joined | None = None) -> list[int]:
    """Rows of the messages :data:`LIFECYCLE` matches, in order. Its words are searched
    lower-cased, which agrees with the regex's case-insensitive matching on ASCII text;
    messages in other scripts all go to the regex."""
    joined = joined or _Joined(messages)
    rows = joined.holding(_WORDS) | joined.leading(_LEADS) | set(joined.not_ascii)
    return [i for i in sorted(rows) if LIFECYCLE.search(messages[i])]


def _kernel_rows(transports: list[Any], idents: list[Any]) -> list[int]:
    """Rows that may be kernel records: ``_TRANSPORT`` or ``SYSLOG_IDENTIFIER`` is
    ``kernel`` or a list (a repeated field), which kernel_lines_from_journal then tests."""
    if not any("kernel" in column or list in set(map(type, column))
               for column in (transports, idents)):
        return []
    return [i for i, (transport, ident) in enumerate(zip(transports, idents, strict=True))
            if transport == "kernel" or ident == "kernel"
            or isinstance(transport, list) or isinstance(ident, list)]


def _pid_pairs(idents: list[Any], pid_texts: list[Any]) -> tuple[tuple[str, int], ...]:
    """The distinct (``SYSLOG_IDENTIFIER``, ``_PID``) pairs in order of appearance, as
    :attr:`JournalEntry.pid` reads the PID: the raw pairs are few, so they are made
    distinct first (C speed) and read after."""
    try:
        raw: Iterable[tuple[Any, Any]] = dict.fromkeys(zip(idents, pid_texts, strict=True))
    except TypeError:  # a list value cannot be a key: read every line
        raw = zip(idents, pid_texts, strict=True)
    pairs: dict[tuple[str, int], None] = {}
    for ident, pid_text in raw:
        if (pid := journal_pid(pid_text)) is not None:
            pairs.setdefault((str(ident), pid))
    return tuple(pairs)
