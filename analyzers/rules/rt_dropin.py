"""RT002 and RT003: why the toolkit's drop-in did not reach the loaded configuration."""

from __future__ import annotations

import posixpath
import tomllib
from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.containerd_merge import Clobber, corrected_dropin
from analyzers.facts.distro import NodeRuntime
from analyzers.facts.preconditions import Need
from analyzers.facts.runtimes import NVIDIA_HANDLER
from analyzers.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, OPERATOR_SETTINGS, RUNTIME_FILE, RUNTIME_FILES, node_ref
from bundle.evidence import first_line
from bundle.tomlsafe import loads as toml_loads


def _file_evidence(ctx: Context, node_name: str, host_path: str, needle: str) -> Evidence:
    artifacts = ctx.bundle.node(node_name)
    path = artifacts.path("containerd/files" + host_path)
    text = artifacts.containerd_files.get(host_path, "")
    hit = first_line(path, text, needle)
    if hit is None:
        return Evidence(path=path, excerpt=f"({posixpath.basename(host_path)})")
    return Evidence(path=hit.path, line=hit.line, excerpt=hit.excerpt)


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
    inputs = (node("containerd/files/*"), node("containerd/config-dump.toml", optional=True),
              node("containerd/version.txt", optional=True), RUNTIME_FILE)
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
            files = ctx.bundle.node(node_name).containerd_files
            version = ctx.bundle.node(node_name).containerd_version or "unknown version"
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
                               causes=[refs.RT001(node_name)])


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


def _relative_imports(text: str | None) -> list[str]:
    try:
        imports = toml_loads(text or "").get("imports", [])
    except tomllib.TOMLDecodeError:
        return []
    return [str(i) for i in imports if isinstance(i, str) and not i.startswith("/")]


class DropInNotImported(Rule):
    """The nvidia drop-in exists but containerd does not import it.

    ``/etc/containerd/conf.d/99-nvidia.toml`` defines the runtime, but
    ``config.toml`` has no ``imports`` covering it, so the loaded configuration
    (whose ``imports`` list names every file it read) never includes it. Not judged
    on a node whose containerd runs with another file than the one the toolkit was
    told to edit (k3s, k0s: the toolkit's drop-in under ``/etc/containerd`` is then
    RT008's evidence, not a missing import).

    Why it matters:
    The toolkit wrote its configuration and reported success, yet containerd runs
    without the ``nvidia`` handler; operand pods fail with ``no runtime for "nvidia"``.

    Remediation:
    Add the drop-in directory to the top of ``/etc/containerd/config.toml``
    (``imports = ["/etc/containerd/conf.d/*.toml"]``, keeping any existing entries),
    restart containerd on one node and check ``containerd config dump``.
    """

    id = "RT003"
    slug = "dropin-not-imported"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (node("containerd/files/*"), node("containerd/config-dump.toml"), *RUNTIME_FILES,
              *OPERATOR_SETTINGS, cluster("pods.json", optional=True), LOGS)
    needs = (Need.CONTAINERD,)
    tags = ("runtime", "containerd")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for node_name in ctx.facts.gpu_nodes:
            if not ctx.facts.node_runtime(node_name).containerd:
                continue  # Docker's or CRI-O's node: containerd is not its CRI
            state = ctx.facts.runtime(node_name)
            if state.has_nvidia is not False or not state.unimported_dropins:
                continue
            gate = ctx.facts.runtime_gate.get(node_name)
            if gate is not None and gate.misdirection is not None:
                continue  # the toolkit's own drop-in, written where this runtime never looks: RT008
            dropin = state.unimported_dropins[0]
            imports = ", ".join(state.imports) or "none"
            dump_text = ctx.bundle.node(node_name).config_dump_text or ""
            dump_line = first_line(state.dump_path, dump_text, "imports")
            evidence = [_file_evidence(ctx, node_name, dropin, f"runtimes.{NVIDIA_HANDLER}"),
                        Evidence(path=state.dump_path, line=dump_line.line if dump_line else None,
                                 excerpt=dump_line.excerpt if dump_line else "(no imports)")]
            main = state.main
            if main in ctx.bundle.node(node_name).containerd_files:
                evidence.append(_file_evidence(ctx, node_name, main, "version"))
            summary = (f"On {node_name}, {dropin} defines the nvidia runtime but containerd "
                       f"never read it: the loaded configuration imports {imports}.")
            relative = _relative_imports(ctx.bundle.node(node_name).containerd_files.get(main))
            if relative:
                summary += (f" config.toml imports {', '.join(relative)} by a relative path; "
                            "containerd before 1.6.29 / 1.7.16 resolves that against its working "
                            "directory (/ under systemd), not /etc/containerd — use an absolute "
                            "path.")
            glob = posixpath.dirname(dropin) + "/*.toml"
            where = ctx.facts.node_runtime(node_name)
            # k3s, RKE2 and MicroK8s rebuild the file from a template at every start
            edit = where.layout.templates[0] if where.layout.regenerated else main
            if not where.layout.stock and where.layout.dropin_dir is not None:
                # k0s generates its file and imports its own drop-in directory
                directory = where.layout.dropin_dir
                yield self.finding(
                    node_name, summary, nodes=[node_name], objects=[node_ref(node_name)],
                    evidence=evidence, causes=[refs.RT001(node_name)], remediation=sh.lines(
                        sh.note("# on {node}: {main} is generated and imports {dir}/*.toml",
                                node=sh.node(node_name), main=sh.path(main),
                                dir=sh.path(directory)),
                        sh.cmd("ls", "-l", sh.path(directory)),
                        sh.cmd("cp", sh.path(dropin), sh.path(directory + "/")),
                        _restart_line(where)))
                continue
            remediation = sh.lines(
                sh.note("# on {node}", node=sh.node(node_name)),
                sh.cmd("grep", "-n", "^imports", sh.path(main), tail=" || echo 'no imports line'"),
                sh.note("# add (or extend) at the top of {file}:", file=sh.path(edit)),
                sh.note("# ({main} is rebuilt from it at every start)", main=sh.path(main))
                if edit != main else [],
                sh.commented(f'imports = ["{glob}"]') if sh.path(glob).ok
                else sh.path(glob).refusal(),
                _restart_line(where),
            )
            yield self.finding(node_name, summary, nodes=[node_name],
                               objects=[node_ref(node_name)], evidence=evidence,
                               remediation=remediation, causes=[refs.RT001(node_name)])
