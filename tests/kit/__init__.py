"""The test kit: build a mini-bundle, analyse it one way, read what the rules said.

Every test that runs the rules over a bundle calls :func:`analyse`; the modules build
what it analyses, one concern each:

- :mod:`kit.bundles` — files to a bundle directory or archive, with its manifest; the one
  Node, List and ``nvidia-smi -q -x`` builders every other module uses
- :mod:`kit.objects` — small cluster objects (nodes, pods, events, ClusterPolicy,
  RuntimeClass) and containerd dumps
- :mod:`kit.cluster` — a healthy GPU Operator cluster that an OP test breaks
- :mod:`kit.driver` — GPU nodes, nvidia-smi pieces and kernel logs for the DRV tests
- :mod:`kit.gate` — workloads and scheduling events for the number gates (SC, CFG, DRV007)
- :mod:`kit.runtime` — containerd dumps, node files and pods for the RT tests
- :mod:`kit.lookalikes` — healthy clusters unlike the first one the rules were written for
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from analyzers.engine import analyze
from analyzers.engine.plugins import LoadedRule, discover
from analyzers.results.models import Finding, Report, RuleStatus
from bundle import open_bundle
from kit.bundles import Content, write_dir


class Scenario(Protocol):
    """Something that knows its bundle's files (``kit.cluster.Cluster``)."""

    failed: list[dict[str, Any]]

    def bundle_files(self) -> dict[str, Any]: ...


def analyse(source: Path | Mapping[str, Content] | Scenario,
            rules: Sequence[LoadedRule] | None = None, *, tmp: Path | None = None,
            failed: list[dict[str, Any]] | None = None) -> Report:
    """Run ``rules`` (every installed rule by default) over ``source``: a bundle directory
    or archive, the files of one (written to ``tmp/bundle``, a fresh temporary directory
    when ``tmp`` is None, with ``failed`` manifest items), or a scenario's files."""
    if not isinstance(source, Path | Mapping):
        failed = failed or source.failed or None
        source = source.bundle_files()
    chosen = discover().rules if rules is None else list(rules)
    if isinstance(source, Path):
        return _analyse_root(source, chosen)
    if tmp is None:
        with tempfile.TemporaryDirectory() as scratch:
            return _analyse_root(write_dir(Path(scratch) / "bundle", source, failed), chosen)
    return _analyse_root(write_dir(tmp / "bundle", source, failed), chosen)


def _analyse_root(root: Path, rules: Sequence[LoadedRule]) -> Report:
    with open_bundle(root) as opened:
        return analyze(opened, rules)


def findings(report: Report, rule_id: str) -> dict[str, Finding]:
    """``rule_id``'s findings by finding id."""
    return {f.id: f for f in report.findings if f.rule_id == rule_id}


def status(report: Report, rule_id: str) -> RuleStatus:
    return next(r.status for r in report.rules if r.rule_id == rule_id)


def verdict(report: Report, rule_id: str) -> tuple[str, str | None]:
    """``rule_id``'s status and the reason it gives."""
    result = next(r for r in report.rules if r.rule_id == rule_id)
    return result.status.value, result.reason


def paths(finding: Finding) -> list[tuple[str, int | None]]:
    """Where a finding's evidence lies: (path, line)."""
    return [(e.path, e.line) for e in finding.evidence]
