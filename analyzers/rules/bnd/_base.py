"""BND: the bundle itself — what was not collected, and what could not be read."""

from __future__ import annotations

import re
from collections.abc import Iterable
from fnmatch import fnmatchcase

from analyzers.facts.smi import recognised as smi_failed
from analyzers.knowledge.gaps import MEANINGS, kind_of
from analyzers.results.models import Severity
from analyzers.rule import Context
from bundle.manifest import ManifestItem

_MEANINGS = dict(MEANINGS)


# nvidia-smi ran on the node and said its driver or GPU is not usable: a finding (DRV009,
# which this group links to), not something the collector failed to do.
SMI_FAILED = "nvidia-smi-failed"


_MEANINGS[SMI_FAILED] = "ran nvidia-smi, which failed on the node (a finding, see DRV009)"


# Gaps where nothing was lost: no rule is "left without" its input.
_NOTHING_LOST = ("not-started", "previous-log-missing")


_SEVERITY = {"not-started": Severity.INFO, SMI_FAILED: Severity.INFO,
             "previous-log-missing": Severity.INFO, "missing-command": Severity.LOW,
             "not-found": Severity.LOW}


# What to do about a gap of another kind, and about unreadable bundle parts (BND002).
_OTHER_GAP = ("# as the collecting identity: what may it read?\n"
              "kubectl auth can-i list events --all-namespaces\n"
              "# re-run the collector with the missing permission or access; a node it could "
              "not reach:\ngpu-triage collect --nodes <node> --node-mode ssh")


_UNREADABLE = ("gzip -t bundle.tgz && tar -tzf bundle.tgz | tail   # check the archive you "
               "received\n# ask for the bundle again (its size against the collector's final "
               "line) or re-collect the named files;\n# a big but genuine bundle is read with "
               "higher caps: --max-member-mib, --max-total-gib, --max-members, --max-ratio, "
               "--max-nodes")


# What to do about each kind of gap: the first line is the first step shown.
_REMEDIATION = {
    "unauthorized": "kubectl get --raw /version   # as the collecting identity: are its "
                    "credentials still accepted?\n# log in again or renew the token or "
                    "certificate, then collect again",
    "forbidden": "kubectl auth can-i list events --all-namespaces   # as the collecting "
                 "identity\n# grant read (get, list) on what was refused, then collect again",
    "previous-log-missing": "kubectl describe pod -n <namespace> <pod>   # 'Last State' says "
                            "why the container restarted\n# the kubelet keeps one earlier "
                            "run's log per container, and none once the pod is replaced;\n"
                            "# the current log was collected: nothing more to collect",
    "timeout": "gpu-triage collect --step-timeout 180 --node-timeout 1200   # more time "
               "per step and per node",
    "unreachable": "kubectl get nodes -o wide   # is the node Ready and reachable?\n"
                   "gpu-triage collect --nodes <node> --node-mode ssh   # or reach it by ssh",
    "not-found": "kubectl api-resources   # the resource types the cluster serves (a GPU "
                 "Operator CRD may not be installed)\n# what the cluster does not have has "
                 "nothing to collect",
    "skipped": "gpu-triage collect --nodes <node>,<node>   # collect the nodes named here "
               "(or raise --max-nodes)\n# the collector visits nodes with problems first, "
               "then one of each kind; these came later",
    "no-shell": "kubectl get node <node> -o jsonpath='{.status.nodeInfo.osImage}'   # Talos "
                "or Bottlerocket: no host shell\n# Talos: `talosctl -n <node> dmesg` reads "
                "the kernel log through its API; Bottlerocket:\n# enter the admin container, "
                "then `sudo sheltie` for a root shell; the node's pods,\n# events and logs "
                "were collected as usual",
    "missing-command": "# the command or file does not exist on the node: nothing more to "
                       "collect;\n# the rules named above could not check what it shows",
    SMI_FAILED: "# nvidia-smi ran and reported the driver or GPU unusable: follow DRV009 "
                "on each node named",
    "not-started": "kubectl get pods -A --field-selector=status.phase=Pending   # the "
                   "containers have not started\n# collect again once they run to get "
                   "their logs",
}


def _kind(item: ManifestItem) -> tuple[str, str]:
    """The kind of gap (analyzers.knowledge.gaps); an nvidia-smi failure DRV009 explains is
    its own."""
    if smi_failed(item):
        return SMI_FAILED, _MEANINGS[SMI_FAILED]
    kind = kind_of(item)
    return kind, _MEANINGS[kind]


def _affected_rules(ctx: Context, items: Iterable[ManifestItem]) -> list[str]:
    """IDs of loaded rules that read any of the failed paths.

    One collection step failing on every node fails the same file under each node's
    directory: each distinct node-relative path is matched once, not once per node."""
    failed = {item.path for item in items}
    on_nodes = {parts[2] for path in failed
                if len(parts := path.split("/", 2)) == 3 and parts[0] == "nodes"}
    affected = set()
    for rule in ctx.rules:
        for needed in rule.inputs:
            if any(fnmatchcase(path, needed.path)
                   for path in (on_nodes if needed.per_node else failed)):
                affected.add(rule.id)
    return sorted(affected)


def _line_of(where: str | None) -> int | None:
    match = re.match(r"line (\d+)", where or "")
    return int(match.group(1)) if match else None
