"""What kind of collection gap a failed manifest item is, and whether data was lost.

The collector records every step, failed ones with their error. Newer collectors also
record the kind themselves (``error_kind``, from kubectl's own error); the patterns here
sort the rest: node.sh's steps and bundles from older collectors. BND001 groups the gaps
by kind; the engine (analyzers/engine/coverage.py) counts a gap of a :data:`LOST` kind against
the rules that needed that path, so a rule that could not see one node's file says
``partial``, not ``passed``.
"""

from __future__ import annotations

import re

from bundle.manifest import ManifestItem

# (category, what it means, pattern over the error text); first match wins. Newer collectors
# record the kind themselves (error_kind, from kubectl's own error); these patterns sort the
# rest: node.sh's steps and bundles from older collectors.
GAP_KINDS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("unauthorized", "refused: the API server did not accept the collecting identity's "
     "credentials (401)",
     re.compile(r"must be logged in to the server|unauthori[sz]ed|provide credentials", re.I)),
    ("forbidden", "refused by RBAC (the collecting identity lacks permission)",
     re.compile(r"forbidden|permission denied|not permitted", re.I)),
    ("skipped", "node not visited: left out by the collector's --max-nodes, so it has no "
     "node files", re.compile(r"node not visited|left out by --max-nodes", re.I)),
    ("no-shell", "node not visited: its OS (Talos, Bottlerocket) has no host shell for the "
     "node script, so it has no node files; judged from its pods",
     re.compile(r"has no shell on the host", re.I)),
    ("previous-log-missing", "previous container log not kept by the kubelet",
     re.compile(r"previous terminated container .* not found", re.I)),
    ("unreachable", "node or API server unreachable",
     re.compile(r"unreachable|no route to host|connection refused|could not resolve|"
                r"unable to connect|connection reset|host key verification|no such host|"
                r"i/o timeout|tls handshake|x509:|was refused", re.I)),
    ("timeout", "timed out",
     re.compile(r"time[d ]?out|deadline exceeded|timed out", re.I)),
    ("not-found", "not in the cluster (a resource type or object that does not exist)",
     re.compile(r"\(NotFound\)|doesn't have a resource type|"
                r"could not find the requested resource", re.I)),
    ("missing-command", "command or file missing on the node",
     re.compile(r"not found|no such file|command not found|executable file", re.I)),
    ("not-started", "container had not started, so it has no log yet",
     re.compile(r"waiting to start|podinitializing|containercreating", re.I)),
    ("other", "failed for another reason", re.compile(r".")),
)
MEANINGS = {name: meaning for name, meaning, _pattern in GAP_KINDS}

# klog lines (`E1201 18:58:57.180923 23949 memcache.go:265] ...`): kubectl's discovery noise,
# which older collectors kept in place of kubectl's own error.
_KLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d")

# Kinds where the data existed and was not collected. Not among them: a file or command
# missing on the node (nothing to collect: an absent conf.d has no drop-ins), a container
# that had not started or a previous log the kubelet did not keep (no log existed yet), a
# resource type the cluster does not have.
LOST = frozenset({"unauthorized", "forbidden", "unreachable", "timeout", "skipped", "no-shell",
                  "other"})


def kind_of(item: ManifestItem) -> str:
    """The collector's error_kind when it recorded one we know, else a pattern's verdict."""
    recorded = (item.model_extra or {}).get("error_kind")
    if isinstance(recorded, str) and recorded in MEANINGS:
        return recorded
    lines = (item.error or "").splitlines()
    error = "\n".join(line for line in lines if not _KLOG.match(line)) or (item.error or "")
    for name, _meaning, pattern in GAP_KINDS:
        if pattern.search(error):
            return name
    return "other"
