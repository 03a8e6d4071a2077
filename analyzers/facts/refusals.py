"""DaemonSets that cannot create their pods, and the refusal that stops them.

A DaemonSet whose pods are refused at creation has no pod to show a state or a log:
``kubectl get pods`` shows nothing, and a rule that reads only pods blames whatever
the missing pods would have done (NFD's configuration, for a missing NFD worker). The
DaemonSet itself says it: ``desiredNumberScheduled`` above ``currentNumberScheduled``,
and the controller's ``FailedCreate`` events quote the refusal. Wordings, from public
threads:

- Pod Security admission: ``Error creating: pods "debug-ghjw9" is forbidden: violates
  PodSecurity "restricted:latest": ... restricted volume types (volume "host" uses
  restricted volume type "hostPath") ...``
  (https://github.com/redhat-best-practices-for-k8s/certsuite/issues/547; NFD's worker:
  https://github.com/kubernetes-sigs/node-feature-discovery/pull/1002)
- PodSecurityPolicy: ``Error creating: pods "<name>-" is forbidden: PodSecurityPolicy:
  unable to admit pod: [... "hostPath": hostPath volumes are not allowed to be used ...]``
  (https://github.com/kubeshark/kubeshark/issues/1364; the GPU Operator's NFD worker:
  https://github.com/NVIDIA/gpu-operator/issues/314)
- OpenShift: ``Error creating: pods "nfd-worker-" is forbidden: unable to validate
  against any security context constraint``
  (https://github.com/openshift/cluster-nfd-operator/issues/247)
- an admission webhook: ``Error creating: admission webhook "<name>" denied the request:
  Using hostPath Volume with '/tsi-secure' is not allowed``
  (https://github.com/IBM/trusted-service-identity/issues/38)
- a ResourceQuota: ``... is forbidden: exceeded quota: ...``
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bundle.kube import DaemonSet, Event

_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"violates PodSecurity", re.I), "Pod Security admission"),
    (re.compile(r"PodSecurityPolicy", re.I), "a PodSecurityPolicy"),
    (re.compile(r"security context constraint", re.I), "OpenShift's SecurityContextConstraints"),
    (re.compile(r"exceeded quota", re.I), "a ResourceQuota"),
    (re.compile(r"admission webhook .{0,200}denied the request", re.I), "an admission webhook"),
)


@dataclass(frozen=True, slots=True)
class CreateRefusal:
    """A DaemonSet with fewer pods than nodes it wants, and why creating them fails."""

    daemonset: DaemonSet
    events: tuple[Event, ...]     # its FailedCreate events, in bundle order
    by: str                       # what refuses: "Pod Security admission", ...

    @property
    def key(self) -> str:
        return f"{self.daemonset.metadata.namespace}/{self.daemonset.metadata.name}"

    @property
    def latest(self) -> Event:
        return max(self.events, key=lambda e: e.time or "")

    def counts(self) -> str:
        status = self.daemonset.status
        return f"desired {status.desired}, current {status.current}, ready {status.ready}"


def refused_by(message: str) -> str:
    for pattern, by in _KINDS:
        if pattern.search(message):
            return by
    return "the API server"


def refused_daemonsets(daemonsets: Iterable[DaemonSet],
                       events_by_object: Mapping[tuple[str, str, str], list[Event]]
                       ) -> dict[str, CreateRefusal]:
    """``namespace/name`` → the refusal, for each DaemonSet that wants more pods than it
    has and whose controller reports ``FailedCreate``. A DaemonSet that has all its pods
    again (a refusal since lifted) is not listed."""
    found = {}
    for ds in daemonsets:
        status = ds.status
        if status.desired <= status.current:
            continue
        key = ("DaemonSet", ds.metadata.namespace or "", ds.metadata.name)
        failed = tuple(e for e in events_by_object.get(key, [])
                       if e.reason == "FailedCreate" and e.message)
        if failed:
            latest = max(failed, key=lambda e: e.time or "")
            refusal = CreateRefusal(ds, failed, refused_by(latest.message or ""))
            found[refusal.key] = refusal
    return found
