"""OP015: The driver container cannot build or load its module on this OS."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts import driver
from analyzers.facts.driver import DENIED, HEADERS, PACKAGES, SELINUX_FILE, BuildFailure
from analyzers.facts.preconditions import Need
from analyzers.facts.stages import Stage
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS_REQUIRED, node_ref
from analyzers.rules.op._driverbuild import _ENFORCING, _remediation
from bundle import specs


class DriverBuildFails(Rule):
    """The driver container cannot build or load its module on this OS.

    Per node, the driver container's log: the packages to build for the running kernel
    are missing — ``Error: Unable to find a match: kernel-devel-<kernel>`` (dnf on RHEL,
    RHCOS, CentOS) or ``/lib/modules/<kernel>/build: No such file or directory`` — or
    another package the build installs is (``Unable to find a match:
    elfutils-libelf-devel``, a repository not reachable or not entitled) — or
    the built module is refused with ``could not insert 'nvidia': Permission denied``,
    which on a host whose ``host/selinux.txt`` says ``Enforcing`` is SELinux. The
    kernel version (Node ``nodeInfo``) and SELinux state are quoted. This is the build
    case; a missing image tag or precompiled image is OP010, a Secure Boot refusal
    (``Operation not permitted``, ``Key was rejected``) DRV004. The finding causes
    OP001's driver stage on the node, and DRV003's "driver not usable" finding when the
    module it could not build is missing.

    Why it matters:
    Without the module the node has no driver: the driver pod restarts forever and the
    validator, toolkit, device plugin and every GPU pod wait behind it.

    Remediation:
    Headers: use precompiled driver images for this kernel (``driver.usePrecompiled``),
    give the container a repository with this kernel's ``kernel-devel``
    (``driver.repoConfig``, RHEL entitlement), or run a kernel whose headers are
    published. SELinux: follow the operator's documented SELinux setup for the OS, or
    set the node Permissive while you confirm the AVC denial (``ausearch -m avc``).
    """

    id = "OP015"
    slug = "driver-build-fails"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (
        LOGS_REQUIRED,
        node(SELINUX_FILE, optional=True),
        cluster(specs.NODES, optional=True),
        cluster(specs.PODS, optional=True),
        cluster(specs.EVENTS, optional=True),
    )
    needs = (Need.OPERATOR,)
    tags = ("operator", "driver")

    def check(self, ctx: Context) -> Iterable[Finding]:
        names = sorted(set(ctx.facts.node_names) | ctx.facts.gpu_node_set
                       | set(ctx.facts.operands))
        for name in names:
            failure = driver.build_failure(ctx.facts, name)
            if failure is not None:
                yield self._finding(ctx, name, failure)

    def _finding(self, ctx: Context, name: str, failure: BuildFailure) -> Finding:
        hits = failure.hits
        node_obj = ctx.facts.nodes.get(name)
        info = node_obj.status.node_info if node_obj is not None else None
        kernel = info.kernel_version if info is not None and info.kernel_version else ""
        os_image = info.os_image if info is not None and info.os_image else ""
        evidence = list(hits.values())
        reasons = []
        if HEADERS in hits:
            on = f"kernel {kernel}" + (f" ({os_image})" if os_image else "") if kernel \
                else "the running kernel"
            reasons.append(f"the headers to build the module for {on} are not available "
                           "to it")
        if PACKAGES in hits:
            package = hits[PACKAGES].excerpt.rsplit("match:", 1)[-1].strip()
            reasons.append(f"a package it needs to build the module ({package}) is not in the "
                           "repositories it reaches")
        state, where = failure.selinux, failure.selinux_line
        if DENIED in hits:
            if state is not None and state.lower() in _ENFORCING:
                reasons.append(f"SELinux ({state}) denies loading the built module")
            else:
                shown = f"SELinux is {state}" if state else "SELinux state not collected"
                reasons.append(f"loading the built module is denied ({shown})")
            if where is not None:
                evidence.append(where)
        summary = (f"On {name}, the driver container cannot install the driver: "
                   + "; ".join(reasons) + ".")
        causes = []
        stages = ctx.facts.operand_stages.get(name)
        if stages is not None and stages.first is Stage.DRIVER:
            causes.append(refs.link("OP001", name))
        if driver.unusable(ctx.facts, name) is not None:  # the module it never built is not loaded
            causes.append(refs.link("DRV003", name))
        return self.finding(name, summary, nodes=[name], objects=[node_ref(name)],
                            evidence=evidence, causes=causes,
                            remediation=_remediation(name, set(hits)))
