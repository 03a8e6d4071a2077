"""Kernel log parsing: dmesg / syslog / journal text into lines, Xid events and GPU signals.

Three layers, each pure and total (no function here raises on any input):

* :func:`parse_dmesg` and :func:`kernel_lines_from_journal` turn collected text into
  :class:`KernelLine` records: the kernel message with every transport prefix removed,
  plus whatever clock the format carried.
* :func:`parse_xid` reads an ``NVRM: Xid (...)`` line into an :class:`XidEvent`.
* :func:`scan_signals` tags the other GPU-relevant kernel lines (lost GPUs, failed
  initialisation, PCIe AER, driver/library mismatch, Secure Boot refusals, ...) as
  :class:`KernelSignal` records; :data:`SIGNAL_KINDS` documents every kind.

Accepted line prefixes (after optional leading whitespace):

=====================================  ==============================================
``[ 1234.567890] msg``                 ``dmesg`` default; ``uptime`` set
``[Mon Nov 17 09:12:45 2025] msg``     ``dmesg -T``; ``time`` set (read as UTC)
``2025-11-17T09:12:45,123456+00:00``   ``dmesg --time-format iso``; ``time`` set
``Nov 17 09:12:45 host kernel: msg``   syslog / ``journalctl`` short (optionally with
                                       ``.micros`` and a ``[uptime]`` after ``kernel:``);
                                       ``time`` only with ``year_hint`` (read as UTC)
``2025-01-07T21:16:59.3+00:00 host``   rsyslog RFC 3339 / ``journalctl -o short-iso``
``kernel: msg``                        a bare journal tag
``<ip>: kern: warning: [ISO]: msg``    Talos
``<4>`` / ``4,123,456789,-;``          ``dmesg -r`` / raw ``/dev/kmsg`` records
``kern  :err   : msg``                 ``dmesg -x``, before any stamp above or below
                                       (``kern  :warn  : 2025-01-21T04:41:44,283302+00:00``
                                       with ``--time-format iso``)
``[Oct25 10:14] msg``                  ``dmesg -H`` / ``--reltime``: the first record of a
``[  +0.000421] msg``                  minute, then the seconds since the record before;
                                       neither ``time`` nor ``uptime`` is set (local time
                                       without year or seconds is no exact clock)
=====================================  ==============================================

A line with none of these prefixes that follows a prefixed record (no blank line in
between) continues that record: ``dmesg`` prints the later lines of a multi-line kernel
message that way. The exception is a bare line that itself holds an Xid or SXid report,
which always starts a record of its own. rsyslog's ``#012`` escapes and newlines inside
a journal ``MESSAGE`` are treated the same way. Continuation text is joined with one
space, and a repeated ``NVRM:`` tag at the start of a continuation is dropped, so a
split ``API mismatch`` message reads as one sentence.

Work is bounded by the size of the text: records are joined once, a record is read up
to :data:`RECORD_MAX_LINES` lines and :data:`RECORD_MAX_CHARS` characters (what is cut
is reported through a ``note`` callback, once per file), and every pattern runs in time
linear in the message it is given.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

__all__ = [
    "SIGNAL_KINDS",
    "KernelLine",
    "KernelSignal",
    "SXidEvent",
    "XidEvent",
    "kernel_lines_from_journal",
    "normalize_pci",
    "parse_dmesg",
    "parse_sxid",
    "parse_xid",
    "scan_signals",
]


class _Pattern:
    """A regex compiled on its first use. Compiling this module's 58 patterns at import
    cost about 5 ms of every run of the command line, also of runs that never read a
    kernel log, and many patterns only run on the rare lines that pass a cheaper test
    (the small sample compiles 34 of them). After the first use the compiled pattern's
    methods are attributes of the instance: a call costs what it costs on the pattern."""

    search: Callable[..., re.Match[str] | None]
    match: Callable[..., re.Match[str] | None]
    fullmatch: Callable[..., re.Match[str] | None]

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    def __getattr__(self, name: str) -> Any:  # only while not compiled yet
        if name not in ("search", "match", "fullmatch"):
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self.flags)
        self.search, self.match, self.fullmatch = (
            compiled.search, compiled.match, compiled.fullmatch)
        return getattr(compiled, name)


@dataclass(frozen=True, slots=True)
class KernelLine:
    """One kernel log record.

    ``raw`` is the first physical line of the record as it was in the file (trailing
    ``\\r``/``\\n`` removed); for a journal entry it is the first line of ``MESSAGE``.
    ``message`` is the whole record, prefixes removed, continuation lines joined.
    ``time`` is timezone-aware UTC; ``uptime`` is seconds since boot.
    """

    path: str
    line: int
    raw: str
    message: str
    time: datetime | None
    uptime: float | None


@dataclass(frozen=True, slots=True)
class XidEvent:
    """An ``NVRM: Xid`` report.

    ``pci`` is canonical (``0000:3b:00.0``; the Xid line itself carries no function,
    so it is always ``.0``). ``pid``/``process`` are ``None`` when the driver printed
    ``<unknown>`` or nothing. ``detail`` is the text after the pid/name part, unchanged
    (a ``caused by previous Xid N`` suffix stays in it and is also in ``caused_by``).
    """

    xid: int
    pci: str | None
    pid: int | None
    process: str | None
    detail: str
    caused_by: int | None
    mig_gi: int | None
    mig_ci: int | None
    source: KernelLine


@dataclass(frozen=True, slots=True)
class SXidEvent:
    """An NVSwitch ``SXid`` report (HGX/DGX systems), read like an Xid.

    ``switch`` is the reporting device (``nvidia-nvswitch3``) when the line names it;
    ``pci`` is the switch's canonical address. ``severity`` is ``fatal`` or
    ``non-fatal`` as printed, ``None`` on the detail lines the driver prints after the
    first one (``Severity 1 Engine instance ...``, ``Data {...}``). ``link`` is the
    NVLink port (``Link 32``) when printed.
    """

    sxid: int
    switch: str | None
    pci: str | None
    severity: str | None
    link: int | None
    detail: str
    source: KernelLine


@dataclass(frozen=True, slots=True)
class KernelSignal:
    """A GPU-relevant kernel line other than an Xid; ``kind`` is a key of SIGNAL_KINDS."""

    kind: str
    pci: str | None
    detail: str
    source: KernelLine


SIGNAL_KINDS: Mapping[str, str] = {
    "fallen_off_bus": (
        "The GPU stopped answering on PCIe ('fallen off the bus'), at runtime (with or "
        "without the Xid 79 line; the Xid line itself also yields this signal) or already "
        "when the driver probed it."
    ),
    "gpu_lost": "Driver or NVML reports the GPU as lost ('GPU is lost', NV_ERR_GPU_IS_LOST).",
    "rm_init_adapter_failed": (
        "The driver could not initialise the GPU (RmInitAdapter / rm_init_adapter failed). "
        "detail holds the printed 'stage:status:line' code and the NV_STATUS meaning."
    ),
    "device_handle": (
        "NVML could not get a handle for a GPU ('Unable to determine the device handle'); "
        "detail holds the reason NVML gave."
    ),
    "aer": (
        "PCIe Advanced Error Reporting line from pcieport/nvidia/pci. detail starts with "
        "one of 'fatal', 'nonfatal', 'uncorrected', 'corrected', 'recovery_failed', then "
        "': ' and the message. pci is the device the error came from when the line names "
        "it ('error received: <bdf>'), else the reporting device."
    ),
    "api_mismatch": (
        "User-space NVIDIA driver components and the loaded kernel module differ in "
        "version (both kernel wordings, and NVML's 'Driver/library version mismatch'). "
        "detail names the two versions when the line carries them."
    ),
    "nouveau": "The nouveau driver is active on, or bound to, an NVIDIA GPU.",
    "nova_core": "The nova_core (NovaCore) driver is bound to the GPU instead of nvidia.ko.",
    "probe_failed": (
        "nvidia.ko probed no device or failed its probe (another driver owns the GPU, "
        "'No NVIDIA GPU found', 'probe of ... failed')."
    ),
    "unsupported_gpu": "The loaded driver branch or flavour (open modules) cannot drive the GPU.",
    "module_verification": (
        "A module loaded without a trusted signature and tainted the kernel. The module "
        "did load; on a Secure Boot node it points at an unsigned DKMS build."
    ),
    "lockdown": "Kernel lockdown (Secure Boot) refused an unsigned module or another operation.",
    "module_load_failed": (
        "Loading an NVIDIA module failed (modprobe 'could not insert', unknown symbols, "
        "symbol version disagreement)."
    ),
    "firmware_missing": "The GSP firmware file the driver asked for was not found.",
    "gsp": "GSP firmware RPC trouble around Xid 119/120 (timeouts, failed RPCs, core dumps).",
    "reset_required": "The driver reports the GPU needs a reset (NV_ERR_RESET_REQUIRED, 0x62).",
    "bar_invalid": "The PCI BAR assigned to the GPU is invalid or empty (BIOS/kernel resources).",
    "nvlink": "NVLink trouble reported outside an Xid line (training, discovery, link errors).",
    "nvswitch": "NVSwitch SXid error; detail starts with 'SXid <n>' and its severity.",
    "pcie_link_degraded": "The kernel notes the device's PCIe link trained below its capability.",
    "driver_loaded": (
        "NVIDIA kernel module load banner; detail is 'open <version>' or 'proprietary <version>'."
    ),
}

# --------------------------------------------------------------------------------------
# Prefix recognition
# --------------------------------------------------------------------------------------

_MONTHS: Mapping[str, int] = {
    name: index
    for index, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
        start=1,
    )
}
_MON = "(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_CLOCK = "(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})"

_KMSG_RECORD_RE = _Pattern(r"[0-9]{1,3},[0-9]{1,20},(?P<usec>[0-9]{1,20}),[^;\s]{0,64};")
_KMSG_PRIO_RE = _Pattern(r"<[0-9]{1,3}>")
_ISO_RE = _Pattern(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})[T ]"
    + _CLOCK
    + r"(?:(?P<sep>[.,])(?P<frac>[0-9]{1,9}))?(?P<tz>Z|[+-][0-9]{2}(?::?[0-9]{2})?)?(?=\s|$)"
)
_TALOS_RE = _Pattern(r"[^\s:]{1,255}:\s+kern:\s+[a-z]{1,10}:\s+\[(?P<ts>[^\]\s]{10,40})\]:?\s*")
_BSD_RE = _Pattern(
    _MON + r" {1,2}(?P<d>[0-9]{1,2}) " + _CLOCK + r"(?:\.(?P<frac>[0-9]{1,9}))?(?=\s)"
)
_HOST_IDENT_RE = _Pattern(
    r"\s*[^\s:\[\]]{1,255}\s+[A-Za-z_][\w.@/-]{0,63}(?:\[[0-9]{1,10}\])?:(?:\s+|$)"
)
_KERNEL_TAG_RE = _Pattern(r"kernel:\s*")
_FACILITY_RE = _Pattern(
    r"(?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local[0-7])\s*:"
    r"\s*(?:emerg|alert|crit|err|warn|notice|info|debug)\s*:\s*"
)
_CTIME_RE = _Pattern(
    r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) "
    + _MON
    + r" {1,2}(?P<d>[0-9]{1,2}) "
    + _CLOCK
    + r" (?P<y>[0-9]{4})\]\s*"
)
_UPTIME_RE = _Pattern(r"\[\s*(?P<up>[0-9]{1,10}\.[0-9]{1,9})\]\s*")
# dmesg -H / --reltime: "[Oct25 10:14]" on the first record of a minute (local time, no
# year, no seconds), "[  +0.000421]" (seconds since the record before) on the others.
_RELTIME_RE = _Pattern(
    r"\[(?:" + _MON + r"[0-9]{2} [0-9]{2}:[0-9]{2}|\s*[+-][0-9]{1,10}\.[0-9]{6})\]\s*")
_JOURNAL_MARKER_RE = _Pattern(r"-- .* --")
_KMSG_DICT_RE = _Pattern(r" [A-Z_]{1,32}=")
# A bare line carrying an Xid/SXid report is a new record, never a continuation.
_REPORT_START_RE = _Pattern(r"Xid\s*\(")

# What every prefix above starts with: a line this does not match has no prefix, so the
# prefix patterns are not tried on it (most continuation lines; every line of a bomb).
# The bracket admits the -T, -H/--reltime and uptime stamps, the facility names admit
# dmesg -x with any stamp after them.
_MAYBE_PREFIX_RE = _Pattern(
    r"[0-9]{1,3},|<[0-9]|[0-9]{4}-|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
    r"|kernel:|(?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp"
    r"|local[0-7])\s*:|\[|[^\s:]{1,255}:\s+kern:"
)

RECORD_MAX_LINES = 1_000
"""Physical lines of one kernel record at most (its first line and continuations).
A printk record holds at most about 1 KiB (2 KiB since Linux 6.1), so a genuine
multi-line message has a few dozen lines; later continuation lines of a longer record
are not read, and the file gets one ``refused`` problem saying how many."""
RECORD_MAX_CHARS = 64 << 10
"""Characters of one record's message (and of its ``raw`` first line) at most; a longer
record is cut there (journald's own line cap for a message is 48 KiB)."""
Note = Callable[[str, str], None]
"""Where a parser reports a cap it applied: ``note(message, where)``, once per file."""


@dataclass(slots=True)
class _Draft:
    line: int
    raw: str
    parts: list[str]
    lines: int = 1  # physical lines read into the record
    chars: int = 0  # characters of those lines
    dropped: int = 0  # continuation lines past the caps, not read
    time: datetime | None = None
    uptime: float | None = None
    bsd: tuple[int, int, int, int, int, int] | None = None  # month, day, h, m, s, micro
    prefixed: bool = False
    kmsg: bool = False
    extra: list[str] = field(default_factory=list)


def _micros(frac: str | None) -> int:
    if not frac:
        return 0
    return int((frac + "000000")[:6])


def _make_time(
    year: int,
    month: int,
    day: int,
    hour: int,
    minute: int,
    second: int,
    micro: int,
    tz: timezone = UTC,
) -> datetime | None:
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz).astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _iso_time(m: re.Match[str]) -> datetime | None:
    tz: timezone = UTC
    raw_tz = m["tz"]
    if raw_tz and raw_tz != "Z":
        digits = raw_tz[1:].replace(":", "")
        hours = int(digits[:2])
        minutes = int(digits[2:4] or "0")
        if hours > 23 or minutes > 59:
            return None
        offset = timedelta(hours=hours, minutes=minutes)
        tz = timezone(-offset if raw_tz[0] == "-" else offset)
    return _make_time(
        int(m["y"]),
        int(m["mo"]),
        int(m["d"]),
        int(m["h"]),
        int(m["mi"]),
        int(m["s"]),
        _micros(m["frac"]),
        tz,
    )


def _strip_host_ident(rest: str) -> str:
    m = _HOST_IDENT_RE.match(rest)
    return rest[m.end() :] if m else rest.lstrip()


def _read_prefixes(body: str) -> _Draft:
    """Split one physical line (already left-stripped) into prefixes and message."""
    draft = _Draft(line=0, raw="", parts=[])
    rest = body
    m: re.Match[str] | None = _KMSG_RECORD_RE.match(rest)
    if m:
        draft.uptime = int(m["usec"]) / 1_000_000
        draft.kmsg = draft.prefixed = True
        rest = rest[m.end() :]
    elif m := _KMSG_PRIO_RE.match(rest):
        draft.prefixed = True
        rest = rest[m.end() :]

    if m := _TALOS_RE.match(rest):
        iso = _ISO_RE.fullmatch(m["ts"])
        draft.time = _iso_time(iso) if iso else None
        draft.prefixed = draft.kmsg = True  # talosctl prints kmsg's dictionary lines too
        rest = rest[m.end() :]
    elif m := _ISO_RE.match(rest):
        draft.time = _iso_time(m)
        draft.prefixed = True
        rest = rest[m.end() :]
        # dmesg's own ISO format (comma before the micros) has no host/ident after it.
        rest = rest.lstrip() if m["sep"] == "," else _strip_host_ident(rest)
    elif m := _BSD_RE.match(rest):
        draft.bsd = (
            _MONTHS[m["mon"]],
            int(m["d"]),
            int(m["h"]),
            int(m["mi"]),
            int(m["s"]),
            _micros(m["frac"]),
        )
        draft.prefixed = True
        rest = _strip_host_ident(rest[m.end() :])

    for simple in (_KERNEL_TAG_RE, _FACILITY_RE):
        if m := simple.match(rest):
            draft.prefixed = True
            rest = rest[m.end() :]
            # dmesg -x prints the facility and level first, then the stamp of any
            # --time-format (ISO here; the bracketed ones are read below).
            if simple is _FACILITY_RE and draft.time is None and (m := _ISO_RE.match(rest)):
                draft.time = _iso_time(m)
                rest = rest[m.end() :].lstrip()

    if m := _CTIME_RE.match(rest):
        draft.time = _make_time(
            int(m["y"]), _MONTHS[m["mon"]], int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), 0
        )
        draft.prefixed = True
        rest = rest[m.end() :]
    if m := _UPTIME_RE.match(rest):
        draft.uptime = float(m["up"])
        draft.prefixed = True
        rest = rest[m.end() :]
    elif m := _RELTIME_RE.match(rest):
        draft.prefixed = True  # no exact clock: neither time nor uptime is set
        rest = rest[m.end() :]

    draft.parts = _split_parts(rest)
    return draft


def _split_parts(rest: str) -> list[str]:
    """rsyslog's escaped tabs and newlines (``#011``, ``#012``) undone."""
    return rest.replace("#011", "\t").split("#012")


def _join_parts(parts: Iterable[str]) -> str:
    """The record's pieces stripped and joined with one space (once, so that a record
    of many pieces costs linear time); a repeated ``NVRM:`` tag is dropped."""
    texts: list[str] = []
    nvrm = False
    for index, piece in enumerate(parts):
        text = piece.strip()
        if not text:
            continue
        if not texts:
            nvrm = text.startswith("NVRM:")
        elif index and nvrm and text.startswith("NVRM:"):
            text = text[5:].lstrip()
        texts.append(text)
    return " ".join(texts)


class _Cuts:
    """Records cut at the caps while reading one file; reported once, by ``note``."""

    def __init__(self) -> None:
        self.records = 0
        self.lines = 0
        self.first: int | None = None

    def cut(self, line: int, dropped: int) -> None:
        self.records += 1
        self.lines += dropped
        if self.first is None or line < self.first:
            self.first = line

    def report(self, note: Note | None) -> None:
        if note is None or self.first is None:
            return
        dropped = f"; {self.lines:,} continuation lines were not read" if self.lines else ""
        note(f"{self.records:,} kernel record(s) over the cap of {RECORD_MAX_LINES:,} lines "
             f"or {RECORD_MAX_CHARS:,} characters per record were cut there{dropped}",
             f"line {self.first}")


def _capped(message: str) -> tuple[str, bool]:
    if len(message) <= RECORD_MAX_CHARS:
        return message, False
    return message[:RECORD_MAX_CHARS], True


def parse_dmesg(
    text: str, path: str, *, year_hint: int | None = None, note: Note | None = None
) -> list[KernelLine]:
    """Parse kernel log text (any format in the module docstring) into records.

    ``year_hint`` is the year the log ends in (for example the bundle's creation year);
    it dates syslog-style ``Nov 17 09:12:45`` stamps, which carry no year. Stamps whose
    month is later than the last stamped month in the text are put in the year before.
    Without it those records get ``time=None``. A record is read up to
    :data:`RECORD_MAX_LINES` lines and :data:`RECORD_MAX_CHARS` characters; when one was
    cut, ``note`` is called once with a message and the line of the first cut record.
    Never raises.
    """
    if not isinstance(text, str):
        return []
    drafts: list[_Draft] = []
    current: _Draft | None = None
    # Line by line from a stream, not a list of every line: a log of millions of short
    # continuation lines would otherwise hold them all at once.
    for number, physical in enumerate(io.StringIO(text, newline="\n"), start=1):
        raw = physical.removesuffix("\n").rstrip("\r")
        if number == 1:
            raw = raw.lstrip("\ufeff")
        body = raw.lstrip()
        if not body or (body.startswith("-- ") and _JOURNAL_MARKER_RE.fullmatch(body.rstrip())):
            current = None
            continue
        draft = _read_prefixes(body) if _MAYBE_PREFIX_RE.match(body) else None
        if (
            (draft is None or not draft.prefixed)
            and current is not None
            and current.prefixed
            and not _REPORT_START_RE.search(body)
        ):
            if current.kmsg and _KMSG_DICT_RE.match(raw):
                continue  # /dev/kmsg dictionary line (" SUBSYSTEM=pci"), not message text
            if current.lines >= RECORD_MAX_LINES or current.chars >= RECORD_MAX_CHARS:
                current.dropped += 1
                continue
            current.extra.extend(draft.parts if draft is not None else _split_parts(body))
            current.lines += 1
            current.chars += len(body)
            continue
        if draft is None:
            draft = _Draft(line=0, raw="", parts=_split_parts(body))
        draft.line = number
        draft.raw = raw
        draft.chars = len(body)
        drafts.append(draft)
        current = draft

    last_month = next((d.bsd[0] for d in reversed(drafts) if d.bsd is not None), 12)
    lines: list[KernelLine] = []
    cuts = _Cuts()
    for draft in drafts:
        when = draft.time
        if draft.bsd is not None and year_hint is not None:
            month, day, hour, minute, second, micro = draft.bsd
            year = year_hint - 1 if month > last_month else year_hint
            when = _make_time(year, month, day, hour, minute, second, micro)
        message, clipped = _capped(_join_parts([*draft.parts, *draft.extra]))
        if clipped or draft.dropped:
            cuts.cut(draft.line, draft.dropped)
        lines.append(
            KernelLine(
                path=path,
                line=draft.line,
                raw=_capped(draft.raw)[0],
                message=message,
                time=when,
                uptime=draft.uptime,
            )
        )
    cuts.report(note)
    return lines


# --------------------------------------------------------------------------------------
# Journal (journalctl -o json) entries
# --------------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DIGITS_RE = _Pattern(r"[0-9]{1,20}")


def _field_is(entry: Mapping[str, object], key: str, wanted: str) -> bool:
    value = entry.get(key)
    if isinstance(value, str):
        return value == wanted
    if isinstance(value, list):
        return any(isinstance(item, str) and item == wanted for item in value)
    return False


def _journal_text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, list) and value:
        if all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in value):
            return bytes(value).decode("utf-8", errors="replace")
        first = value[0]
        if isinstance(first, str):
            return first
    return None


def _journal_micros(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value >= 0 else None
    if isinstance(value, str) and _DIGITS_RE.fullmatch(value.strip()):
        return int(value.strip())
    return None


def kernel_lines_from_journal(
    entries: Iterable[tuple[int, Mapping[str, object]]], path: str, *, note: Note | None = None
) -> list[KernelLine]:
    """Kernel records from parsed ``journalctl -o json`` entries.

    ``entries`` pairs each object with its 1-based line number in the ``.jsonl`` file.
    Entries whose ``_TRANSPORT`` or ``SYSLOG_IDENTIFIER`` is ``kernel`` are kept.
    ``MESSAGE`` may be text or a list of byte values (journald's form for non-UTF-8
    text); ``time`` comes from ``__REALTIME_TIMESTAMP`` and ``uptime`` from
    ``_SOURCE_MONOTONIC_TIMESTAMP`` (else ``__MONOTONIC_TIMESTAMP``), both in
    microseconds. A ``MESSAGE`` is read up to the caps of a record
    (:data:`RECORD_MAX_LINES`, :data:`RECORD_MAX_CHARS`); ``note`` is told once when one
    was cut, as in :func:`parse_dmesg`. Never raises; malformed entries are skipped.
    """
    lines: list[KernelLine] = []
    try:
        iterator = iter(entries)
    except TypeError:
        return lines
    cuts = _Cuts()
    for item in iterator:
        if not isinstance(item, tuple) or len(item) != 2:
            continue
        number, entry = item
        if not isinstance(number, int) or not isinstance(entry, Mapping):
            continue
        if not (
            _field_is(entry, "_TRANSPORT", "kernel")
            or _field_is(entry, "SYSLOG_IDENTIFIER", "kernel")
        ):
            continue
        text = _journal_text(entry.get("MESSAGE"))
        if text is None:
            continue
        parts = text.replace("\r\n", "\n").split("\n", RECORD_MAX_LINES)
        dropped = 0
        if len(parts) > RECORD_MAX_LINES:
            dropped = parts.pop().count("\n") + 1
        message, clipped = _capped(_join_parts(parts))
        if clipped or dropped:
            cuts.cut(number, dropped)
        when: datetime | None = None
        micros = _journal_micros(entry.get("__REALTIME_TIMESTAMP"))
        if micros is not None:
            try:
                when = _EPOCH + timedelta(microseconds=micros)
            except OverflowError:
                when = None
        mono = _journal_micros(entry.get("_SOURCE_MONOTONIC_TIMESTAMP"))
        if mono is None:
            mono = _journal_micros(entry.get("__MONOTONIC_TIMESTAMP"))
        lines.append(
            KernelLine(
                path=path,
                line=number,
                raw=_capped(parts[0].rstrip("\r"))[0],
                message=message,
                time=when,
                uptime=mono / 1_000_000 if mono is not None else None,
            )
        )
    cuts.report(note)
    return lines


# --------------------------------------------------------------------------------------
# PCI addresses
# --------------------------------------------------------------------------------------

_PCI_ID_RE = _Pattern(
    r"(?:PCI:)?(?:(?P<dom>[0-9a-f]{1,8}):)?(?P<bus>[0-9a-f]{1,2}):(?P<dev>[0-9a-f]{1,2})"
    r"(?:\.(?P<fn>[0-7]))?",
    re.IGNORECASE,
)
_BDF = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?"
_ANY_BDF_RE = _Pattern(r"(?<![0-9A-Fa-f:])(?:PCI:)?(" + _BDF + r")(?![0-9A-Fa-f]|:[0-9A-Fa-f])")
_DEV_PREFIX_RE = _Pattern(r"[A-Za-z][\w-]{0,40}\s+(" + _BDF + r"):")
_GPU_SUBJECT_RE = _Pattern(r"\bGPU\s*(?:at\s+)?(?:PCI:)?(" + _BDF + r")(?![0-9A-Fa-f])")


def normalize_pci(bus_id: str) -> str | None:
    """Canonical ``dddd:bb:dd.f`` (lowercase) for a PCI bus id, or ``None``.

    Accepts the Xid form ``0000:3b:00`` / ``PCI:0000:3b:00`` (function taken as 0),
    nvidia-smi's ``00000000:3B:00.0`` (8-digit domain), ``3b:00.0`` (domain 0) and the
    canonical form itself. The domain keeps at least four digits (``%04x``, as the
    driver prints it), so a VMD domain such as ``10000`` is preserved.
    """
    if not isinstance(bus_id, str):
        return None
    m = _PCI_ID_RE.fullmatch(bus_id.strip())
    if m is None:
        return None
    domain = int(m["dom"] or "0", 16)
    device = int(m["dev"], 16)
    if device > 0x1F:
        return None
    return f"{domain:04x}:{int(m['bus'], 16):02x}:{device:02x}.{m['fn'] or '0'}"


def _subject_pci(message: str, *, fallback: bool = True) -> str | None:
    """The address a kernel line is about: its device prefix, ``GPU <bdf>``, else any."""
    m = _DEV_PREFIX_RE.match(message) or _GPU_SUBJECT_RE.search(message)
    if m is None and fallback:
        m = _ANY_BDF_RE.search(message)
    return normalize_pci(m[1]) if m else None


# --------------------------------------------------------------------------------------
# Xid
# --------------------------------------------------------------------------------------

_XID_RE = _Pattern(
    r"(?<![A-Za-z])Xid\s*\((?P<attr>[^()]{0,120})\)\s*(?::\s*)?(?P<num>[0-9]{1,6})(?![0-9])"
    r"\s*,?\s*(?P<rest>.*)",
    re.DOTALL,
)
_PID_NAME_RE = _Pattern(
    r"pid=(?P<pid>'?<unknown>'?|-?[0-9]{1,10})(?:\s*,\s*name=(?P<name>[^,]*))?(?:\s*,\s*|\s+|$)"
)
_CAUSED_BY_RE = _Pattern(r"caused by previous Xid\s*(?P<num>[0-9]{1,6})", re.IGNORECASE)
_ATTR_BDF_RE = _Pattern(r"[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}(?:\.[0-7])?")
_MIG_GI_RE = _Pattern(r"GPU-I:\s*(?P<n>[0-9]{1,6})")
_MIG_CI_RE = _Pattern(r"GPU-CI:\s*(?P<n>[0-9]{1,6})")


def parse_xid(line: KernelLine) -> XidEvent | None:
    """Read an ``NVRM: Xid (<attr>): <n>, [pid=..., [name=...,]] <detail>`` line.

    Handles every driver era: ``pid='<unknown>', name=<unknown>,`` (R515-R565), no
    pid/name (R570+ for unknown processes, and R418-era drivers), ``pid=`` without
    ``name=`` (R510 and older), MIG ``GPU-I:``/``GPU-CI:`` attributes, the very old attr
    without ``PCI:``, and ``caused by previous Xid N``. ``SXid`` lines are not Xids.
    """
    message = line.message
    if "Xid" not in message:
        return None
    m = _XID_RE.search(message)
    if m is None:
        return None
    attr = m["attr"]
    bdf = _ATTR_BDF_RE.search(attr)
    rest = m["rest"].strip()
    pid: int | None = None
    process: str | None = None
    pm = _PID_NAME_RE.match(rest)
    if pm:
        raw_pid = pm["pid"]
        pid = None if "unknown" in raw_pid else int(raw_pid)
        name = (pm["name"] or "").strip()
        process = None if name in ("", "<unknown>", "'<unknown>'") else name
        rest = rest[pm.end() :].strip()
    caused = _CAUSED_BY_RE.search(rest)
    gi = _MIG_GI_RE.search(attr)
    ci = _MIG_CI_RE.search(attr)
    return XidEvent(
        xid=int(m["num"]),
        pci=normalize_pci(bdf[0]) if bdf else None,
        pid=pid,
        process=process,
        detail=rest,
        caused_by=int(caused["num"]) if caused else None,
        mig_gi=int(gi["n"]) if gi else None,
        mig_ci=int(ci["n"]) if ci else None,
        source=line,
    )


# --------------------------------------------------------------------------------------
# SXid (NVSwitch)
# --------------------------------------------------------------------------------------

_SWITCH_RE = _Pattern(r"(?P<switch>nvidia-nvswitch[0-9]{1,3})\s*:\s*SXid")
_LINK_RE = _Pattern(r"\bLink\s+(?P<n>[0-9]{1,3})\b")


def parse_sxid(line: KernelLine) -> SXidEvent | None:
    """Read a ``nvidia-nvswitchN: SXid (PCI:<bdf>): <n>, <Fatal|Non-fatal>, <detail>``
    line, in every kernel-log format :func:`parse_xid` reads (the prefixes are already
    gone from ``line.message``). Follow-up lines of the same report (no severity) are
    returned too, with ``severity`` None."""
    message = line.message
    if "SXid" not in message:
        return None
    m = _SXID_RE.search(message)
    if m is None:
        return None
    severity = m["sev"].lower().replace("nonfatal", "non-fatal") if m["sev"] else None
    switch = _SWITCH_RE.search(message)
    link = _LINK_RE.search(m["rest"]) if severity else None
    return SXidEvent(
        sxid=int(m["num"]),
        switch=switch["switch"] if switch else None,
        pci=normalize_pci(m["pci"]),
        severity=severity,
        link=int(link["n"]) if link else None,
        detail=_clip(m["rest"]),
        source=line,
    )


# --------------------------------------------------------------------------------------
# Other kernel signals
# --------------------------------------------------------------------------------------

# NV_STATUS codes seen in "RmInitAdapter failed! (stage:status:line)".
_NV_STATUS: Mapping[int, str] = {
    0x0F: "GPU is gone from the PCIe bus",
    0x1A: "driver ran out of resources",
    0x22: "object class not available on this GPU",
    0x24: "command rejected as invalid",
    0x26: "device not usable by this driver",
    0x40: "GPU or driver in an unexpected state",
    0x56: "operation not supported (often missing or mismatched GSP firmware)",
    0x59: "an operating-system call failed",
    0x61: "VBIOS rejected by the driver",
    0x62: "GPU must be reset first",
    0x65: "timed out waiting for the GPU",
    0x72: "GPU memory error",
}

_DETAIL_MAX = 300

_XID_LINE_RE = _Pattern(r"(?<![A-Za-z])Xid\s*\(")
_FALLEN_RE = _Pattern(r"fallen off the bus", re.IGNORECASE)
_PROBE_TIME_RE = _Pattern(r"not responding to commands|installed in this system")
_GPU_LOST_RE = _Pattern(r"\bGPU is lost\b|NV_ERR_GPU_IS_LOST", re.IGNORECASE)
_RM_INIT_RE = _Pattern(
    r"RmInitAdapter failed!?\s*(?:\(\s*(?P<stage>0x[0-9A-Fa-f]{1,8})\s*:\s*"
    r"(?P<status>0x[0-9A-Fa-f]{1,8})\s*:\s*(?P<src>[0-9]{1,8})\s*\))?"
    r"|rm_init_adapter failed(?:,\s*device minor number\s*(?P<minor>[0-9]{1,6}))?",
)
_DEVICE_HANDLE_RE = _Pattern(
    r"unable to (?:determine|get) (?:the )?device handle\b(?P<tail>.*)", re.IGNORECASE | re.DOTALL
)
_AER_RE = _Pattern(r"\bAER:|PCIe Bus Error")
_AER_SOURCE_RE = _Pattern(
    r"error (?:message )?received(?: from)?:?\s*(?:PCI:)?(" + _BDF + r")", re.IGNORECASE
)
_AER_FAILED_RE = _Pattern(r"can't recover|recovery failed|not recovered", re.IGNORECASE)
_AER_FATAL_RE = _Pattern(r"Uncorrect\w*\s*\(Fatal\)", re.IGNORECASE)
_AER_NONFATAL_RE = _Pattern(r"Uncorrect\w*\s*\(Non-?Fatal\)", re.IGNORECASE)
_AER_UNCORRECTED_RE = _Pattern(r"Uncorrect(?:ed|able)", re.IGNORECASE)
_AER_CORRECTED_RE = _Pattern(r"(?<![A-Za-z])Correct(?:ed|able)", re.IGNORECASE)
_API_CLIENT_RE = _Pattern(
    r"API mismatch:\s*the client(?:\s+'(?P<proc>[^']{0,64})'\s*\(pid\s*(?P<pid>[0-9]{1,10})\))?"
    r"\s+(?:NVRM:\s*)?has the version\s+(?P<client>[0-9]+(?:\.[0-9]+)+)"
)
_API_KERNEL_RE = _Pattern(
    r"kernel module has\s+(?:NVRM:\s*)?the version\s+(?P<kmod>[0-9]+(?:\.[0-9]+)+)"
)
_NVML_MISMATCH_RE = _Pattern(r"Driver/library version mismatch", re.IGNORECASE)
_NOUVEAU_RE = _Pattern(r"^nouveau\b|bound to nouveau|\bInitialized nouveau\b", re.IGNORECASE)
_NOVA_RE = _Pattern(r"^(?:nova[_-]?core|NovaCore)\b|bound to nova[_-]?core", re.IGNORECASE)
_BOUND_RE = _Pattern(r"is already bound to (?P<driver>[\w.-]+)")
_PROBE_RE = _Pattern(
    r"probe routine was not called|probe routine failed|No NVIDIA devices probed"
    r"|None of the NVIDIA devices were initialized|No NVIDIA GPU found"
    r"|\bnvidia\S*: probe of \S+ failed",
    re.IGNORECASE,
)
# The driver refuses a GPU it cannot drive: a branch that does not list it ("not
# supported by the NVIDIA <v> driver release"), one that moved it to a legacy branch
# ("supported through the NVIDIA 470.xx Legacy drivers"), the open modules on a GPU
# without GSP ("not supported by open nvidia.ko"), the proprietary module on a GPU that
# needs the open ones ("requires use of the NVIDIA open kernel modules", Blackwell), and
# early open modules on a non-data-center GPU ("Open nvidia.ko is only ready for use on
# Data Center GPUs").
_UNSUPPORTED_RE = _Pattern(
    r"installed in this system is\s+(?:NVRM:\s*)?not supported by|not supported by open"
    r"|installed in this system\s+(?:NVRM:\s*)?(?:is\s+(?:NVRM:\s*)?supported through the"
    r"\s+(?:NVRM:\s*)?NVIDIA|requires use of the\s+(?:NVRM:\s*)?NVIDIA open)"
    r"|Open nvidia\.ko is only ready for use on Data Center GPUs",
    re.IGNORECASE,
)
_MODULE_VERIFY_RE = _Pattern(r"module verification failed:?\s*(?P<why>.*)", re.DOTALL)
_MODULE_TAG_RE = _Pattern(r"(?P<module>[\w-]{1,64}):\s*$")
_LOCKDOWN_RE = _Pattern(
    r"\bLockdown:\s*(?P<what>.*)|Loading of (?:unsigned module|module with unavailable key)"
    r" is rejected",
    re.DOTALL,
)
_MODULE_LOAD_RE = _Pattern(
    r"could not insert '(?P<mod>nvidia[\w-]*)':\s*(?P<why>.*)"
    r"|^(?P<mod2>nvidia[\w-]*): (?P<why2>Unknown symbol .*|disagrees about version of symbol .*)",
    re.DOTALL,
)
_FIRMWARE_RE = _Pattern(
    r"Direct firmware load for (?P<file>nvidia/\S+) failed with error (?P<err>-?[0-9]{1,6})"
    r"|RmFetchGspRmImages: No firmware image found"
)
_GSP_RE = _Pattern(
    r"_kgspLogXid119|rpcRecvPoll timedout|GSP RPC buffer contains|RPC history \(CPU -> GSP\)"
    r"|kflcnCoreDump\w*|rpcSendMessage failed|GspRmAlloc failed|_kgspIsHeartbeatTimedOut"
)
_RESET_REQUIRED_RE = _Pattern(r"NV_ERR_RESET_REQUIRED|status=0x00000062")
_BAR_RE = _Pattern(
    r"PCI I/O region assigned to your NVIDIA device is invalid|\bBAR[0-9] is [0-9]+M @ 0x"
)
_NVLINK_RE = _Pattern(r"nvlink", re.IGNORECASE)
_NVLINK_BAD_RE = _Pattern(r"fail|error|fault|timed? ?out|\bdown\b", re.IGNORECASE)
_SXID_RE = _Pattern(
    r"SXid\s*\((?:PCI:)?(?P<pci>" + _BDF + r")\)\s*(?::\s*)?(?P<num>[0-9]{1,6})\s*,?\s*"
    r"(?:(?P<sev>Non-fatal|Nonfatal|Fatal)\s*,?\s*)?(?P<rest>.*)",
    re.IGNORECASE | re.DOTALL,
)
_LINK_LIMITED_RE = _Pattern(r"available PCIe bandwidth, limited by")
_LOADED_RE = _Pattern(
    r"loading NVIDIA UNIX (?P<what>.{0,120}?)Kernel Module(?: for \S+)?\s+"
    r"(?P<ver>[0-9]+(?:\.[0-9]+)+)"
)


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _DETAIL_MAX else text[: _DETAIL_MAX - 3] + "..."


def _without_nvrm(message: str) -> str:
    return message[5:].lstrip() if message.startswith("NVRM:") else message


def _sig(kind: str, pci: str | None, detail: str, line: KernelLine) -> KernelSignal:
    return KernelSignal(kind=kind, pci=pci, detail=_clip(detail), source=line)


def _scan_fallen(msg: str, line: KernelLine, is_xid: bool) -> list[KernelSignal]:
    if not _FALLEN_RE.search(msg):
        return []
    if is_xid:
        xid = parse_xid(line)
        pci = xid.pci if xid else None
        detail = f"reported with Xid {xid.xid}" if xid else "reported with an Xid line"
        detail += ": GPU stopped answering on PCIe at runtime"
    else:
        pci = _subject_pci(msg)
        detail = (
            "GPU was unreachable when the driver probed it"
            if _PROBE_TIME_RE.search(msg)
            else "GPU stopped answering on PCIe at runtime"
        )
    return [_sig("fallen_off_bus", pci, detail, line)]


def _scan_gpu_loss(msg: str, line: KernelLine) -> list[KernelSignal]:
    found: list[KernelSignal] = []
    if _GPU_LOST_RE.search(msg):
        found.append(_sig("gpu_lost", _subject_pci(msg), _without_nvrm(msg), line))
    if m := _RM_INIT_RE.search(msg):
        if m["status"]:
            status = int(m["status"], 16)
            meaning = _NV_STATUS.get(status, "status code not in the known list")
            detail = f"{m['stage']}:{m['status']}:{m['src']} (status 0x{status:02x}: {meaning})"
        elif m["minor"]:
            detail = f"device minor number {m['minor']}"
        else:
            detail = "no status code on this line"
        found.append(_sig("rm_init_adapter_failed", _subject_pci(msg), detail, line))
    if m := _DEVICE_HANDLE_RE.search(msg):
        tail = m["tail"]
        bdf = _ANY_BDF_RE.search(tail)
        pci = normalize_pci(bdf[1]) if bdf else None
        reason = tail[bdf.end() :] if bdf else tail
        reason = reason.lstrip(" :").strip() or "no reason given"
        found.append(_sig("device_handle", pci, reason, line))
    return found


def _scan_pcie(msg: str, line: KernelLine) -> list[KernelSignal]:
    found: list[KernelSignal] = []
    if _AER_RE.search(msg):
        if _AER_FAILED_RE.search(msg):
            severity = "recovery_failed"
        elif _AER_FATAL_RE.search(msg):
            severity = "fatal"
        elif _AER_NONFATAL_RE.search(msg):
            severity = "nonfatal"
        elif _AER_UNCORRECTED_RE.search(msg):
            severity = "uncorrected"
        elif _AER_CORRECTED_RE.search(msg):
            severity = "corrected"
        else:
            severity = ""
        if severity:
            src = _AER_SOURCE_RE.search(msg)
            pci = normalize_pci(src[1]) if src else _subject_pci(msg)
            found.append(_sig("aer", pci, f"{severity}: {msg}", line))
    if _LINK_LIMITED_RE.search(msg):
        found.append(_sig("pcie_link_degraded", _subject_pci(msg), msg, line))
    if _BAR_RE.search(msg):
        found.append(_sig("bar_invalid", _subject_pci(msg), _without_nvrm(msg), line))
    return found


def _scan_driver(msg: str, line: KernelLine) -> list[KernelSignal]:
    found: list[KernelSignal] = []
    if "API mismatch" in msg:
        client = _API_CLIENT_RE.search(msg)
        kmod = _API_KERNEL_RE.search(msg)
        missing = "not on this line"
        detail = f"client {client['client'] if client else missing}"
        detail += f", kernel module {kmod['kmod'] if kmod else missing}"
        if client and client["proc"] is not None:
            detail += f" (client process '{client['proc']}' pid {client['pid']})"
        found.append(_sig("api_mismatch", None, detail, line))
    elif _NVML_MISMATCH_RE.search(msg):
        found.append(_sig("api_mismatch", None, "NVML: driver/library version mismatch", line))
    bound = _BOUND_RE.search(msg)
    bound_to = bound["driver"].lower() if bound else ""
    if _NOUVEAU_RE.search(msg):
        found.append(_sig("nouveau", _subject_pci(msg), _without_nvrm(msg), line))
    elif _NOVA_RE.search(msg) or bound_to.startswith("nova"):
        found.append(_sig("nova_core", _subject_pci(msg), _without_nvrm(msg), line))
    elif bound or _PROBE_RE.search(msg):
        found.append(_sig("probe_failed", _subject_pci(msg), _without_nvrm(msg), line))
    if _UNSUPPORTED_RE.search(msg):
        found.append(_sig("unsupported_gpu", _subject_pci(msg), _without_nvrm(msg), line))
    if m := _MODULE_VERIFY_RE.search(msg):
        tag = _MODULE_TAG_RE.search(msg, max(0, m.start() - 160), m.start())  # just before
        module = tag["module"] if tag else "module"
        found.append(_sig("module_verification", None, f"{module}: {m['why']}", line))
    if m := _LOCKDOWN_RE.search(msg):
        found.append(_sig("lockdown", None, m["what"] if m["what"] is not None else msg, line))
    if m := _MODULE_LOAD_RE.search(msg):
        module = m["mod"] or m["mod2"]
        found.append(_sig("module_load_failed", None, f"{module}: {m['why'] or m['why2']}", line))
    if m := _FIRMWARE_RE.search(msg):
        detail = (
            f"{m['file']} not loaded (error {m['err']})"
            if m["file"]
            else "no GSP firmware image found"
        )
        found.append(_sig("firmware_missing", _subject_pci(msg), detail, line))
    if m := _LOADED_RE.search(msg):
        flavour = "open" if "open" in m["what"].lower() else "proprietary"
        found.append(_sig("driver_loaded", None, f"{flavour} {m['ver']}", line))
    return found


def _scan_firmware_and_links(msg: str, line: KernelLine) -> list[KernelSignal]:
    found: list[KernelSignal] = []
    if _GSP_RE.search(msg):
        found.append(_sig("gsp", _subject_pci(msg), _without_nvrm(msg), line))
    if _RESET_REQUIRED_RE.search(msg):
        found.append(_sig("reset_required", _subject_pci(msg), _without_nvrm(msg), line))
    if m := _SXID_RE.search(msg):
        severity = (m["sev"] or "severity not printed").lower()
        detail = f"SXid {m['num']} {severity}: {m['rest']}"
        found.append(_sig("nvswitch", normalize_pci(m["pci"]), detail, line))
    elif (
        _NVLINK_RE.search(msg) and _NVLINK_BAD_RE.search(msg) and "is being initialized" not in msg
    ):
        found.append(_sig("nvlink", _subject_pci(msg, fallback=False), _without_nvrm(msg), line))
    return found


def scan_signals(line: KernelLine) -> list[KernelSignal]:
    """Tag GPU-relevant non-Xid kernel lines; see :data:`SIGNAL_KINDS`. Never raises.

    One line can yield several signals (for example ``device_handle`` and
    ``gpu_lost`` for ``Unable to determine the device handle ...: GPU is lost``).
    Xid lines yield only ``fallen_off_bus`` (Xid 79's text); use :func:`parse_xid`
    for the Xid itself.
    """
    msg = line.message
    if not msg:
        return []
    is_xid = _XID_LINE_RE.search(msg) is not None
    found = _scan_fallen(msg, line, is_xid)
    if is_xid:
        return found
    found.extend(_scan_gpu_loss(msg, line))
    found.extend(_scan_pcie(msg, line))
    found.extend(_scan_driver(msg, line))
    found.extend(_scan_firmware_and_links(msg, line))
    return found
