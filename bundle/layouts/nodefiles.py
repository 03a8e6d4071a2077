"""Node evidence without a cluster: the node script's own tar, and NVIDIA bug reports.

Two things a customer sends when the collector cannot run against the cluster:

- ``sudo sh node.sh > node.tar`` (collectors/README.md): the node directory of a bundle
  (``dmesg.txt``, ``host/``, ``containerd/``, ``journal/``, ``nvidia-smi.xml``...) plus
  ``steps.tsv``, at the top of the tar (or one directory down, when the customer tarred a
  directory holding it). Each file is presented unchanged as ``nodes/<node>/<path>``; the
  node is the host name in ``host/uname.txt`` (``uname -a``), else ``node``.
- ``nvidia-bug-report.log.gz`` (or ``.log``), alone or several in a directory or archive:
  each report's kernel log, command line, module list and ``uname`` become that node's
  files (:mod:`bundle.layouts.bugreport`); the node is the name in
  ``nvidia-bug-report_<node>.log.gz``, else the host name in the report's prologue.

Nothing of the cluster is in either, so the cluster rules report ``skipped``.
"""

from __future__ import annotations

import re

from bundle import specs
from bundle.container import Limits, Source
from bundle.layouts import bugreport
from bundle.layouts.base import Adapted, LayoutReport, VirtualSource, missing_paths
from bundle.manifest import Manifest
from bundle.problems import ProblemLog

NAME = "node files"
STEPS = "steps.tsv"
_REPORT = re.compile(r"(?:^|/)nvidia-bug-report(?:_(?P<node>[^/]+?))?\.log(?:\.gz)?$")
_NODE = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")


def _reports(names: list[str]) -> list[str]:
    return sorted(n for n in names if n.count("/") <= 1 and _REPORT.search(n))


def root(names: list[str]) -> str | None:
    """The directory of ``steps.tsv`` (top or one down), else of the bug reports."""
    steps = sorted(n for n in names if n.rpartition("/")[2] == STEPS and n.count("/") <= 1)
    if steps:
        return steps[0][: -len(STEPS)]
    reports = _reports(names)
    if not reports:
        return None
    top = reports[0].rpartition("/")[0]
    return top + "/" if top else ""


def detect(paths: list[str]) -> bool:
    return STEPS in paths or bool(_reports(paths))


def adapt(inner: Source, problems: ProblemLog, limits: Limits) -> Adapted:
    source = VirtualSource(inner, problems, limits)
    paths = inner.paths()
    notes: list[tuple[str, str]] = []
    nodes: list[str] = []
    if STEPS in paths:
        node = _node_name(source.text(specs.UNAME), "node")
        nodes.append(node)
        for path in paths:
            if path != STEPS:
                source.passthrough(specs.node_file(node, path), path)
        notes.append((STEPS, "the node script's step log: read by gpu-triage collect, not "
                             "here; a failed step shows as a missing file"))
        collector = "collectors/node.sh"
    else:
        for index, name in enumerate(_reports(paths), start=1):
            report = bugreport.BugReport(source, name)
            found = _REPORT.search(name)
            named = found["node"] if found and found["node"] else None
            node = _node_name(named, "") or \
                _node_name(bugreport.hostname(report.sections), f"node-{index}")
            if node in nodes:
                node = f"{node}-{index}"
            nodes.append(node)
            report.present(node)
        collector = "nvidia-bug-report.sh"
    manifest = Manifest(format=NAME, collector={"name": collector})
    return Adapted(source=source, layout=f"{NAME} ({collector})", manifest=manifest,
                   origins=source.origins(),
                   report=LayoutReport(missing=missing_paths(source.paths()),
                                       notes=tuple(notes)))


def _node_name(text: str | None, fallback: str) -> str:
    """A node name: the host name of ``uname -a`` text (or ``text`` itself when it is
    one word), lowercased, when it is a valid Kubernetes node name; else ``fallback``."""
    words = (text or "").split()
    name = (words[1] if len(words) > 1 and words[0] == "Linux" else
            words[0] if len(words) == 1 else "").lower()
    return name if _NODE.match(name) else fallback
