"""RT002: A later containerd drop-in replaced the CRI plugin table and dropped the
nvidia runtime."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.containerd_merge import Clobber
from analyzers.facts.preconditions import Need
from analyzers.facts.runtimes import NVIDIA_HANDLER
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, node
from analyzers.rules.common import RUNTIME_FILE, node_ref
from analyzers.rules.rt._dropin import _file_evidence, _merged_dropin, _restart_line
from bundle import specs


class DropInClobber(Rule):
    """A later containerd drop-in replaced the CRI plugin table and dropped the nvidia runtime.

    containerd 1.x merges ``imports`` in sorted order and a file that sets
    ``[plugins."io.containerd.grpc.v1.cri"...]`` replaces that plugin's *whole*
    table. A three-line registry drop-in named to sort after ``99-nvidia.toml``
    silently deletes the nvidia runtime. The rule emulates the merge over the copied
    files, checks it against the loaded configuration, and names the clobbering
    file and the file it overrode.

    Why it matters:
    ``cat 99-nvidia.toml`` looks right and ``config dump`` still shows runc, so
    the trap is easy to misdiagnose twice; meanwhile every pod that needs the
    ``nvidia`` handler fails to start on the node.

    Remediation:
    Replace the two files with one drop-in that carries both settings (the finding
    shows it), keep it the last file that touches the CRI plugin, restart containerd
    on one node, and confirm ``containerd config dump | grep -c runtimes.nvidia``.
    """

    id = "RT002"
    slug = "dropin-clobber"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (node(specs.CONTAINERD_FILES), node(specs.CONTAINERD_DUMP, optional=True),
              node(specs.CONTAINERD_VERSION, optional=True), RUNTIME_FILE)
    needs = (Need.CONTAINERD,)
    tags = ("runtime", "containerd")

    def check(self, ctx: Context) -> Iterable[Finding]:
        # Nodes of one pool carry the same files: each distinct fix is built once.
        fixes: dict[tuple[Clobber, tuple[tuple[str, str], ...]], list[str]] = {}
        for node_name in ctx.facts.gpu_nodes:
            if not ctx.facts.node_runtime(node_name).containerd:
                continue  # Docker's or CRI-O's node: containerd is not its CRI
            state = ctx.facts.runtime(node_name)
            clobber = state.nvidia_clobber()
            if clobber is None or state.has_nvidia is True:
                continue
            files = ctx.facts.node(node_name).containerd_files
            version = ctx.facts.node(node_name).containerd_version or "unknown version"
            later = posixpath.basename(clobber.file)
            earlier = posixpath.basename(clobber.overridden)
            loaded = ("the loaded configuration confirms it (no runtimes.nvidia)"
                      if state.has_nvidia is False else
                      "no config dump was collected to confirm it")
            # runc survives as containerd's built-in default when no runtimes table is left
            gone = [r for r in clobber.lost_runtimes if r not in (state.loaded or ())]
            summary = (f"On {node_name}, {clobber.file} loads after {clobber.overridden} and, "
                       f"on containerd 1.x ({version}), replaces the whole {clobber.plugin} "
                       f"table: the runtimes {', '.join(gone or clobber.lost_runtimes)} are "
                       f"gone; {loaded}.")
            evidence = [
                _file_evidence(ctx, node_name, clobber.file, clobber.plugin),
                _file_evidence(ctx, node_name, clobber.overridden, f"runtimes.{NVIDIA_HANDLER}"),
                Evidence(path=state.dump_path,
                         excerpt=f"(no runtimes.{NVIDIA_HANDLER} table; loaded runtimes: "
                                 f"{', '.join(sorted(state.loaded or ())) or 'none'})"),
            ]
            key = (clobber, tuple(sorted(files.items())))
            merged = fixes.get(key)
            if merged is None:
                merged = fixes[key] = _merged_dropin(files, clobber)
            keep = " (keep config.toml itself)" if earlier == "config.toml" else ""
            remediation = sh.lines(
                sh.note("# on {node}: look first", node=sh.node(node_name)),
                sh.cmd("ls", "-l", sh.join(sh.path(posixpath.dirname(clobber.file)), "/")),
                "containerd config dump | grep -c 'runtimes.nvidia'   # 0 confirms",
                sh.note("# replace {later} and {earlier} with one file carrying both settings,",
                        later=sh.path(later), earlier=sh.path(earlier)),
                sh.note("# saved as {file} (it must stay the last file touching the CRI "
                        "plugin), then remove {overridden}{keep}:", file=sh.path(clobber.file),
                        overridden=sh.path(clobber.overridden), keep=sh.raw(keep)),
                merged,
                "# restart on this node only, then check before moving to the next",
                _restart_line(ctx.facts.node_runtime(node_name)),
            )
            yield self.finding(node_name, summary, nodes=[node_name], objects=[node_ref(node_name)],
                               evidence=evidence, remediation=remediation,
                               causes=[refs.link("RT001", node_name)])
