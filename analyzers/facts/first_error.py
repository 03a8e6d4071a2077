"""The first error of a container's log: the earliest line that says something failed.

Components say why they fail in their own words, in many formats. A line is an error
when its own level says so — klog ``E0312``/``F0312``, logrus ``level=error`` or
``ERRO[0000]``, a JSON ``"level":"error"``, zap's tab-separated ``ERROR`` — or, where
the line has no level, when it is an error by its shape (Go ``panic:``/``fatal error:``,
an ``ERROR:``/``Error:``/``FATAL:``/``E:`` prefix, a tool's ``modprobe: ERROR:``, a
compiler's ``file.c:12:3: error:``, make's ``*** … Error 1``, apt's ``Err:1``, dkms's
``Error!``) or by its wording ("failed", "cannot", "unable to", "no such file or
directory" …). A line whose level is below error (``I0312``, ``level=info``,
``WARNING:``, apt's ``W:``) is never an error, whatever its words.

Wordings known to be harmless are data (``analyzers/data/harmless_errors.toml``, each
with the public page that shows it) and are skipped. For a shell script traced with
``set -x`` (the driver container) or one that prints its steps ("Compiling NVIDIA driver
kernel modules..."), the step the error belongs to is the last ``+ command`` or
``...`` progress line before it: the failing build or install step.

The previous instance's log of a container is read before its current one (it ran
first); init containers come before app containers (``PodLogs`` order).
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

import orjson

from analyzers import packaged
from analyzers.facts.podlogs import ContainerLog, PodLogs
from bundle.evidence import Locator, clip
from bundle.kube import Pod

__all__ = ["FirstError", "Harmless", "Level", "bare", "first_error", "first_error_in",
           "first_error_of", "harmless", "level_of"]

# How far back from the error a step line may be, and how long a log is read (lines).
STEP_LOOKBACK = 400
LINE_LIMIT = 200_000


class Level(StrEnum):
    """How a line was recognised as an error."""

    KLOG = "klog error"
    LOGRUS = "logrus error"
    JSON = "JSON error"
    ZAP = "zap error"
    SLOG = "slog error"
    PANIC = "Go panic"
    PREFIX = "error prefix"
    TOOL = "tool error"
    COMPILER = "compiler error"
    MAKE = "make error"
    APT = "apt fetch error"
    WORDING = "error wording"


@dataclass(frozen=True, slots=True)
class Harmless:
    """A wording that looks like an error and is not (one entry of the data file)."""

    id: str
    pattern: re.Pattern[str]
    why: str
    source: str
    containers: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()

    def applies(self, container: str, line: str) -> bool:
        if self.containers and not any(fnmatch.fnmatchcase(container, glob)
                                       for glob in self.containers):
            return False
        return self.pattern.search(line) is not None


@dataclass(frozen=True, slots=True)
class FirstError:
    """The first error line of one container's logs, with the step it belongs to."""

    pod: Pod | None   # None for a log that is not a container's (the node's kernel log)
    container: str    # the container, or the name of the log (``dmesg``)
    previous: bool
    where: Locator
    level: Level
    step: Locator | None = None
    skipped: tuple[str, ...] = ()  # ids of the harmless wordings passed over before it

    @property
    def path(self) -> str:
        return self.where.path

    @property
    def line(self) -> int | None:
        return self.where.line

    @property
    def text(self) -> str:
        return self.where.excerpt

    @property
    def evidence(self) -> tuple[Locator, ...]:
        """The step (when known) and the error line, in log order."""
        return (self.step, self.where) if self.step is not None else (self.where,)

    @property
    def said(self) -> str:
        """The error line without the timestamp a collector or runtime put before it."""
        return bare(self.text)

    @property
    def step_said(self) -> str | None:
        """The step line, without its timestamp; None when no step is known."""
        return bare(self.step.excerpt) if self.step is not None else None

    def quote(self, limit: int = 240) -> str:
        """``'<line>' (<path> line N)``, the error as a report quotes it."""
        return f"'{clip(self.said, limit)}' ({self.path} line {self.line})"


# -- levels ----------------------------------------------------------------------------

# A timestamp kubectl --timestamps, the CRI log format, Go's log package or dmesg puts first.
_STAMP = re.compile(
    r"^(?:\[\s*\d+\.\d+\]\s*"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\s+"
    r"(?:std(?:out|err)\s+[FP]\s+)?|\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?\s+)")
_KLOG = re.compile(r"^([IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+\S+:\d+\]")
_LOGRUS = re.compile(r"(?:^|\s)level=\"?([A-Za-z]+)")
_LOGRUS_TTY = re.compile(r"^(ERRO|FATA|PANI|WARN|INFO|DEBU|TRAC)\[")
_ZAP = re.compile(r"^\S+\t(DEBUG|INFO|WARN|WARNING|ERROR|DPANIC|PANIC|FATAL)\t")
_JSON_LEVEL_KEYS = ("level", "severity", "lvl", "log.level")
_ERROR_LEVELS = frozenset({"error", "err", "eror", "fatal", "fata", "panic", "pani",
                           "dpanic", "critical", "crit", "alert", "emerg", "emergency"})
_SLOG = re.compile(r"^(DEBUG|INFO|WARN|ERROR) \S")
_PANIC = re.compile(r"^(?:panic: |fatal error: |SIG[A-Z]+: |Traceback \(most recent call last\))")
_PREFIX = re.compile(r"^(?:\[?(?:ERROR|FATAL|CRITICAL|Error|Fatal|error|fatal)\]?(?:[:!]|\s-\s)"
                     r"|E: |Err:\d+ |\*\*\* .*(?:Bailing out|[Ff]ailed|[Ee]rror))")
_APT_ERR = re.compile(r"^Err:\d+ ")
_NOT_ERROR = re.compile(r"^(?:\[?(?:WARNING|WARN|Warning|warning|INFO|Info|NOTE|Note|DEBUG)\]?"
                        r"[:!]|W: |N: |I: )")
_TOOL = re.compile(r"^[\w./-]+: (?:\(\d+\) |ERROR|FATAL|error|fatal|cannot|can't)")
_COMPILER = re.compile(r"^\S+?:\d+(?::\d+)?: (?:fatal )?error: |^(?:cc1|ld|collect2): "
                       r"(?:.*\berrors?\b|cannot find)")
_MAKE = re.compile(r"^make(?:\[\d+\])?: \*\*\* ")
_WORDING = re.compile(
    r"\b(?:failed|failure|fails|cannot|can't|could not|couldn't|unable to|"
    r"no such file or directory|permission denied|connection refused|timed out|"
    r"error|errors|exception|segmentation fault|fatal|out of memory|oom-kill|"
    r"killed process)\b", re.IGNORECASE)
_NOT_WORDING = re.compile(r"\b(?:no|0|zero|without) errors?\b|\berrors?[=:]\s*0\b|"
                          r"\bfail(?:ed|ures?)?[=:]\s*0\b|-Werror|ignore[-_]?errors?",
                          re.IGNORECASE)
# A traced shell command (set -x) and a script's progress line: the steps.
_TRACE = re.compile(r"^\++ ")
_PROGRESS = re.compile(r"\S.*\.\.\.\s*$")


def bare(line: str) -> str:
    """``line`` without a leading timestamp (kubectl --timestamps, CRI, Go's log)."""
    return _STAMP.sub("", line, count=1).strip()


def _json_level(line: str) -> str | None:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict):
        return None
    for key in _JSON_LEVEL_KEYS:
        value = record.get(key)
        if isinstance(value, str) and value:
            return value.lower()
    return None


def level_of(line: str) -> Level | None | bool:
    """How ``line`` is an error (a :class:`Level`); ``False`` when its own level says it
    is not one (info, warning …); ``None`` when nothing marks it either way."""
    line = bare(line)
    if not line:
        return False
    if klog := _KLOG.match(line):
        return Level.KLOG if klog.group(1) in "EF" else False
    if line.startswith("{") and (value := _json_level(line)) is not None:
        return Level.JSON if value in _ERROR_LEVELS else False
    if logrus := _LOGRUS.search(line):
        return Level.LOGRUS if logrus.group(1).lower() in _ERROR_LEVELS else False
    if tty := _LOGRUS_TTY.match(line):
        return Level.LOGRUS if tty.group(1) in ("ERRO", "FATA", "PANI") else False
    if zap := _ZAP.match(line):
        return Level.ZAP if zap.group(1).lower() in _ERROR_LEVELS else False
    if slog := _SLOG.match(line):
        return Level.SLOG if slog.group(1) == "ERROR" else False
    if _TRACE.match(line) or _NOT_ERROR.match(line):
        return False
    if _PANIC.match(line):
        return Level.PANIC
    if _APT_ERR.match(line):
        return Level.APT
    if _PREFIX.match(line):
        return Level.PREFIX
    if _COMPILER.search(line):
        return Level.COMPILER
    if _MAKE.match(line):
        return Level.MAKE
    if _TOOL.match(line):
        return Level.TOOL
    return None


def _error_level(line: str) -> Level | None:
    """The :class:`Level` of an error line, or None for a line that is not one."""
    found = level_of(line)
    if isinstance(found, Level):
        return found
    if found is None and _WORDING.search(line) and not _NOT_WORDING.search(line):
        return Level.WORDING
    return None


# -- harmless wordings ----------------------------------------------------------------

@cache
def harmless() -> tuple[Harmless, ...]:
    """The harmless wordings of ``analyzers/data/harmless_errors.toml``."""
    document = tomllib.loads(packaged.read_toml("harmless_errors"))
    found = []
    for entry in document.get("harmless", []):
        found.append(Harmless(
            id=str(entry["id"]), pattern=re.compile(str(entry["pattern"])),
            why=str(entry["why"]), source=str(entry["source"]),
            containers=tuple(str(c) for c in entry.get("containers", ())),
            examples=tuple(str(e) for e in entry.get("examples", ()))))
    return tuple(found)


def _harmless_id(container: str, line: str) -> str | None:
    for entry in harmless():
        if entry.applies(container, line):
            return entry.id
    return None


# -- one log, one pod ---------------------------------------------------------------

def first_error_of(log: ContainerLog) -> FirstError | None:
    """The first error line of one container log file, or None when it has none."""
    return _scan(log.pod, log.container, log.previous, log.path, log.text)


def first_error_in(path: str, text: str, name: str,
                   only: re.Pattern[str] | None = None) -> FirstError | None:
    """The first error line of a log that is not a container's (``name``: ``dmesg``),
    among its lines that match ``only`` when given (the kernel's NVIDIA lines)."""
    return _scan(None, name, False, path, text, only)


def _scan(pod: Pod | None, container: str, previous: bool, path: str, text: str,
          only: re.Pattern[str] | None = None) -> FirstError | None:
    step: tuple[int, str] | None = None
    skipped: list[str] = []
    for number, line in enumerate(text.splitlines()[:LINE_LIMIT], start=1):
        if only is not None and not only.search(line):
            continue
        said = bare(line)
        if _TRACE.match(said) or (_PROGRESS.match(said) and _error_level(said) is None):
            step = (number, line)
            continue
        level = _error_level(line)
        if level is None:
            continue
        ignored = _harmless_id(container, line)
        if ignored is not None:
            if ignored not in skipped:
                skipped.append(ignored)
            continue
        where = Locator(path=path, line=number, excerpt=clip(line))
        step_at = None
        if step is not None and number - step[0] <= STEP_LOOKBACK:
            step_at = Locator(path=path, line=step[0], excerpt=clip(step[1]))
        return FirstError(pod, container, previous, where, level, step_at, tuple(skipped))
    return None


def first_error(logs: PodLogs, pod: Pod, container: str | None = None) -> FirstError | None:
    """The first error of ``pod``'s logs (only ``container``'s when given): containers in
    run order, for each the previous instance's log before the current one."""
    candidates = [log for log in logs.of(pod) if container is None or log.container == container]
    rank: dict[str, int] = {}
    for log in candidates:
        rank.setdefault(log.container, len(rank))
    ordered = sorted(enumerate(candidates),
                     key=lambda item: (rank[item[1].container], not item[1].previous, item[0]))
    for _, log in ordered:
        found = first_error_of(log)
        if found is not None:
            return found
    return None
