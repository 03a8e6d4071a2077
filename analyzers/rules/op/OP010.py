"""OP010: Driver container cannot install: no image for the node's kernel, or its module fails."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.driverkernel import DRIVER_CONTAINER, DriverKernel
from analyzers.facts.evidence import field
from analyzers.facts.operands import OperandPod
from analyzers.facts.preconditions import Need
from analyzers.facts.secureboot import refusal as secure_boot_refusal
from analyzers.refs import Link
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.op._common import (
    as_evidence,
    capped,
    logs_cmd,
    namespace,
    quote,
)
from analyzers.rules.op._driverfit import named_error
from analyzers.rules.op._lifecycle import _BUILD_NEXT, _signing_without_secure_boot
from bundle import specs


class DriverKernelMismatch(Rule):
    """Driver container cannot install: no image for the node's kernel, or its module fails.

    The operator's driver pod either cannot get its image — a precompiled driver is
    tagged ``<branch>-<kernel>-<os>``, and no image exists for the node's kernel
    (``manifest unknown`` / ``not found``, pod in ``ImagePullBackOff``) — or builds the
    kernel module at start and fails. For a failed build the finding quotes the most
    specific error the container's log names, before the installer's generic hint: the
    kernel refusing the module's signature (with Secure Boot off too: ``lockdown=`` or
    ``module.sig_enforce=1``), the module's DKMS configuration, a compiler other than
    the kernel's (both versions named), no kernel packages for the running kernel. It
    says the kernel does not fit only where versions show it. The kernel comes from
    ``host/uname.txt``, else from the Node's ``status.nodeInfo.kernelVersion``.

    Why it matters:
    Without a driver every other operand on the node waits in Init; it typically
    starts right after an automatic kernel upgrade, on one node at a time.

    Remediation:
    Compare the node's kernel with the image tag
    (``kubectl get node <node> -o jsonpath='{.status.nodeInfo.kernelVersion}'``,
    ``kubectl -n gpu-operator describe pod <driver pod>``). Pin the kernel to one with a
    published image, or switch off ``driver.usePrecompiled``; for build failures read
    ``kubectl -n gpu-operator logs <driver pod> -c nvidia-driver-ctr --previous``.
    """

    id = "OP010"
    slug = "driver-kernel-mismatch"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.PODS), cluster(specs.EVENTS, optional=True), LOGS,
              node(specs.UNAME, optional=True), cluster(specs.CLUSTERPOLICIES, optional=True),
              node(specs.SECUREBOOT, optional=True))
    needs = (Need.OPERATOR,)
    tags = ("operator", "driver", "kernel")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name, driver in sorted(ctx.facts.driver_kernel.items()):
            if driver.broken:
                operand = ctx.facts.operands.get(name, {}).get("driver")
                yield self._finding(ctx, name, driver, operand)

    def _finding(self, ctx: Context, name: str, driver: DriverKernel,
                 operand: OperandPod | None) -> Finding:
        ns = namespace(ctx)
        pod = driver.pod
        kernel = driver.kernel or "unknown"
        state = f" ({operand.state})" if operand is not None else ""
        parts = []
        if driver.pulls:
            if driver.missing_tag:
                parts.append(f"the image {driver.image} does not exist in the registry")
            else:
                parts.append(f"the image {driver.image} cannot be pulled "
                             f"({quote(driver.pulls[0].message, 160)})")
            if driver.precompiled and driver.kernel and driver.tag and \
                    driver.kernel in driver.tag:
                parts.append(f"it is the precompiled tag for the node's kernel {kernel}: no "
                             "precompiled driver was published for this kernel")
            elif driver.precompiled:
                parts.append(f"precompiled drivers are enabled and the node runs kernel "
                             f"{kernel}")
        named = None
        if driver.build_errors:
            logs = [(log.path, log.text) for log in ctx.facts.pod_logs.of(pod)
                    if log.container == DRIVER_CONTAINER]
            named = named_error(driver.build_errors, logs, kernel)
            parts.append(named.text)
        summary = f"On {name}, the driver pod {pod.name}{state} cannot install: " \
                  f"{'; '.join(parts)}. Every other operand on the node waits for it."
        causes: list[Link] = []
        if secure_boot_refusal(ctx.facts, name) is not None:
            summary += (" Secure Boot refuses the module for its signature: that is the "
                        "cause, not the kernel match (see DRV004).")
            causes.append(refs.link("DRV004", name))
        elif named is not None and named.kind == "signing":
            summary += (" " + _signing_without_secure_boot(ctx, name))
        evidence: list[Evidence] = capped([p.where for p in driver.pulls], 2)
        image_index = next((i for i, c in enumerate(pod.spec.containers)
                            if c.image == driver.image), None)
        if image_index is not None and driver.image:
            evidence.append(field(pod, f"image: {driver.image}", "spec", "containers",
                                  image_index, "image"))
        if driver.kernel_where is not None:
            evidence.append(as_evidence(driver.kernel_where))
        evidence += capped(list(dict.fromkeys([*(named.where if named else ()),
                                               *driver.build_errors])), 4)
        lines = [
            sh.cmd("kubectl", "get", "node", sh.node(name), "-o",
                   sh.raw("jsonpath='{.status.nodeInfo.kernelVersion} "
                          "{.status.nodeInfo.osImage}{\"\\n\"}'")),
            sh.cmd("kubectl", "-n", sh.namespace(ns), "describe", "pod", sh.pod(pod.name),
                   tail=" | tail -20"),
            "kubectl get clusterpolicy -o jsonpath='{.items[0].spec.driver.usePrecompiled} "
            "{.items[0].spec.driver.version}{\"\\n\"}'",
        ]
        lines += [logs_cmd(ns, log, 200) for log in ctx.facts.pod_logs.of(pod)
                  if log.container == DRIVER_CONTAINER][:2]
        if driver.pulls:
            lines.append("# pin the node to a kernel that has a published image (hold kernel "
                         "upgrades), pick a driver version/OS that is published, or set "
                         "driver.usePrecompiled=false (helm upgrade --reuse-values)")
        if named is not None:
            lines.append(_BUILD_NEXT[named.kind])
        others = sorted(n for n, d in ctx.facts.driver_kernel.items()
                        if d.broken and n != name)
        if others:
            more = f" and {len(others) - 4} more" if len(others) > 4 else ""
            lines.append(sh.note("# also affected: {nodes}{more}; fix one node first",
                                 nodes=[sh.node(n) for n in others[:4]], more=sh.raw(more)))
        objects = [node_ref(name), ObjectRef(kind="Pod", namespace=pod.namespace, name=pod.name)]
        return self.finding(name, summary, nodes=[name], objects=objects, evidence=evidence,
                            remediation=sh.lines(lines), causes=[refs.link("OP001", name)],
                            caused_by=causes)
