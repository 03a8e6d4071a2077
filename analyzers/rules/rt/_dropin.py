"""RT002 and RT003: why the toolkit's drop-in did not reach the loaded configuration."""

from __future__ import annotations

import posixpath

from analyzers import commands as sh
from analyzers.facts.containerd_merge import Clobber, corrected_dropin
from analyzers.facts.distro import NodeRuntime
from analyzers.results.models import Evidence
from analyzers.rule import Context
from bundle import specs
from bundle.evidence import first_line


def _file_evidence(ctx: Context, node_name: str, host_path: str, needle: str) -> Evidence:
    artifacts = ctx.facts.node(node_name)
    path = artifacts.path(specs.containerd_file(host_path))
    text = artifacts.containerd_files.get(host_path, "")
    hit = first_line(path, text, needle)
    if hit is None:
        return Evidence(path=path, excerpt=f"({posixpath.basename(host_path)})")
    return Evidence(path=hit.path, line=hit.line, excerpt=hit.excerpt)


def _restart_line(where: NodeRuntime) -> str:
    """How to restart containerd on the node and check that it loaded the runtime."""
    if where.layout.stock:
        return "systemctl restart containerd && containerd config dump | grep -c 'runtimes.nvidia'"
    layout = where.layout
    return sh.note("# restart {units} (the service that runs containerd), then: {binary} "
                   "--config {config} config dump | grep -c runtimes.nvidia",
                   units=sh.raw(" or ".join(layout.units)), binary=sh.path(layout.binary),
                   config=sh.path(where.config))


def _merged_dropin(files: dict[str, str], clobber: Clobber) -> list[str]:
    """The drop-in that replaces both files (:func:`corrected_dropin`) as comment lines
    (file content to write, not commands), or why there is none."""
    try:
        return sh.commented(corrected_dropin(files, clobber).rstrip())
    except Exception as exc:  # noqa: BLE001 - the advice must not hide the finding
        return [sh.note("# could not build a merged drop-in: {why}", why=sh.text(exc))]


