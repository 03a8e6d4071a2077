"""Deterministic ids and clocks, output formatting, and the bundle writer."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

UTC = dt.UTC

# Every uid in the samples is a uuid5 under this namespace, so the same object
# (same kind, namespace, name) has the same uid in every sample and every run.
_UID_NAMESPACE = uuid.UUID("6a1f0c3e-2b7d-5e49-9c1a-7f3b2d8e4c60")

# Kubernetes' generateName / pod-template-hash alphabet (no vowels, no 0/1/3).
_K8S_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


# --------------------------------------------------------------------------- time


def at(text: str) -> dt.datetime:
    """Parse ``2026-11-20T09:30:00Z`` (fractions allowed) into an aware datetime."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def plus(t: dt.datetime, seconds: float) -> dt.datetime:
    return t + dt.timedelta(seconds=seconds)


def iso(t: dt.datetime) -> str:
    """RFC 3339 with whole seconds, as Kubernetes metav1.Time serialises."""
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_micro(t: dt.datetime) -> str:
    """RFC 3339 with microseconds, as metav1.MicroTime serialises."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso_nano(t: dt.datetime) -> str:
    """RFC 3339 with nine fraction digits (kubectl logs --timestamps, logrus)."""
    extra = number(0, 999, "ns", iso_micro(t))
    return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}{extra:03d}Z"


def epoch_us(t: dt.datetime) -> int:
    return round(t.timestamp() * 1_000_000)


def ctime(t: dt.datetime) -> str:
    """``Fri Nov 20 09:30:41 2026`` (C ctime, as nvidia-smi prints)."""
    return f"{_DAYS[t.weekday()]} {_MONTHS[t.month - 1]} {t.day:2d} {t:%H:%M:%S} {t.year}"


def systemd_time(t: dt.datetime) -> str:
    """``Fri 2026-11-20 08:00:21 UTC`` (systemctl show timestamps)."""
    return f"{_DAYS[t.weekday()]} {t:%Y-%m-%d %H:%M:%S} UTC"


def klog_text(t: dt.datetime, severity: str, pid: int, source: str, body: str) -> str:
    """A klog line: ``I1120 09:28:31.123456    1876 file.go:42] body``."""
    return f"{severity}{t:%m%d %H:%M:%S}.{t.microsecond:06d} {pid:7d} {source}] {body}"


# ---------------------------------------------------------------- deterministic ids


def digest(*parts: object) -> bytes:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()


def hexid(length: int, *parts: object) -> str:
    out = ""
    counter = 0
    while len(out) < length:
        out += hashlib.sha256(digest(counter, *parts)).hexdigest()
        counter += 1
    return out[:length]


def number(lo: int, hi: int, *parts: object) -> int:
    """A stable integer in ``[lo, hi]`` derived from ``parts``."""
    return lo + int.from_bytes(digest(*parts)[:8], "big") % (hi - lo + 1)


def fraction(*parts: object) -> float:
    return int.from_bytes(digest(*parts)[:8], "big") / 2**64


def uid(kind: str, namespace: str, name: str, incarnation: str = "") -> str:
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}/{incarnation}"))


def k8s_suffix(length: int, *parts: object) -> str:
    raw = digest("suffix", *parts)
    return "".join(_K8S_ALPHABET[b % len(_K8S_ALPHABET)] for b in raw[:length])


# ------------------------------------------------------------------------- output


def compact(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def list_json(items: list[Any]) -> str:
    """A ``kind: List`` the way the collector stores ``kubectl get -o json``
    output after redaction: keys sorted, one object per line (kubectl's own
    4-space layout would make the samples several times larger)."""
    body = ",\n".join(compact(item) for item in items)
    inner = f"\n{body}\n" if items else ""
    tail = '"kind":"List","metadata":{"resourceVersion":""}}\n'
    return f'{{"apiVersion":"v1","items":[{inner}],{tail}'


def journal_line(fields: dict[str, str]) -> str:
    """One ``journalctl -o json`` line (journalctl writes ``"KEY" : "value"``)."""
    inner = ", ".join(
        f"{json.dumps(k)} : {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items()
    )
    return "{ " + inner + " }\n"


class Bundle:
    """Writes files under a bundle root and records one manifest item per step.

    The collection clock starts one second after ``created_at`` and moves on by
    each step's duration, so ``started_at`` values are increasing and stable.
    """

    def __init__(
        self,
        root: Path,
        *,
        created_at: dt.datetime,
        context: str,
        server_version: str,
        operator_namespace: str,
        options: dict[str, Any],
        redaction_counts: dict[str, int],
    ) -> None:
        self.root = root
        self.created_at = created_at
        self.head: dict[str, Any] = {
            "format": "gpu-triage-bundle",
            "format_version": 1,
            "collector": {"name": "gpu-triage-collect", "version": "0.1.0"},
            "created_at": iso(created_at),
            "cluster": {"context": context, "server_version": server_version},
            "operator_namespace": operator_namespace,
            "options": options,
            "redaction": {"enabled": bool(options.get("redact")), "counts": redaction_counts},
        }
        self.items: list[dict[str, Any]] = []
        self._clock = plus(created_at, 1)

    def now(self) -> dt.datetime:
        """The collection clock: when the next step starts."""
        return self._clock

    def _record(
        self,
        path: str,
        command: list[str],
        node: str | None,
        exit_code: int,
        size: int,
        error: str | None,
        duration_ms: int | None,
    ) -> None:
        if duration_ms is None:
            duration_ms = number(15, 90, "duration", path)
            if path.startswith("cluster/"):
                duration_ms = number(120, 480, "duration", path)
        self.items.append(
            {
                "path": path,
                "command": command,
                "node": node,
                "exit_code": exit_code,
                "started_at": iso(self._clock),
                "duration_ms": duration_ms,
                "bytes": size,
                "truncated": False,
                "error": error,
            }
        )
        self._clock = plus(self._clock, (duration_ms + number(5, 40, "gap", path)) / 1000)

    def add(
        self,
        path: str,
        content: str | bytes,
        command: list[str],
        *,
        node: str | None = None,
        duration_ms: int | None = None,
    ) -> None:
        data = content.encode() if isinstance(content, str) else content
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self._record(path, command, node, 0, len(data), None, duration_ms)

    def fail(
        self,
        path: str,
        command: list[str],
        error: str,
        *,
        exit_code: int = 1,
        node: str | None = None,
        duration_ms: int | None = None,
    ) -> None:
        """A step that produced no file; the manifest keeps the reason."""
        self._record(path, command, node, exit_code, 0, error, duration_ms)

    def write_manifest(self) -> None:
        """Header fields indented, then one item per line."""
        head = json.dumps(self.head, indent=2, ensure_ascii=False)
        items = ",\n".join("    " + json.dumps(i, ensure_ascii=False) for i in self.items)
        text = head[:-2] + ',\n  "items": [\n' + items + "\n  ]\n}\n"
        (self.root / "manifest.json").write_text(text, encoding="utf-8")
