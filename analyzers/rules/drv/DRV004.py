"""DRV004: Secure Boot refuses (or will refuse) the unsigned NVIDIA kernel module."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.evidence import capped
from analyzers.facts.secureboot import refusal as secure_boot_refusal
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.drv._driver import _secure_boot_remediation
from bundle import specs


class SecureBootRefusedModule(Rule):
    """Secure Boot refuses (or will refuse) the unsigned NVIDIA kernel module.

    Fires on nodes where ``host/secureboot.txt`` (``mokutil --sb-state``) says
    ``SecureBoot enabled`` and the kernel logged a lockdown refusal
    (``Lockdown: ... unsigned module loading is restricted``), a failed module load,
    or ``module verification failed`` for an nvidia module; or the driver container
    log shows the refused ``modprobe``; or the nvidia module is absent from
    ``host/modules.txt`` while the driver is built on the node (driver container
    without precompiled, signed modules).

    Why it matters:
    With Secure Boot the kernel loads only modules signed with a trusted key. A module
    compiled on the node (DKMS or the driver container) is unsigned, so the node has
    no GPU driver and every GPU operand waits in Init. A module that loaded with a
    verification warning shows enforcement is off today and will fail once it is on.

    Remediation:
    Check on the node: ``mokutil --sb-state``, ``dmesg --time-format iso | grep -iE
    'Lockdown|module verification'``. Fix one of: use signed precompiled driver
    images (``driver.usePrecompiled=true``) or distribution-signed driver packages;
    sign the module and enrol the key with ``mokutil --import``; or disable Secure Boot
    in the firmware if policy allows. Cordon and drain the node first.
    """

    id = "DRV004"
    slug = "secure-boot-refused-module"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (
        node(specs.SECUREBOOT),
        node(specs.DMESG, optional=True),
        node(specs.MODULES, optional=True),
        cluster(specs.CLUSTERPOLICIES, optional=True),
        node(specs.JOURNALS, optional=True),
        node(specs.NVIDIA_SMI, optional=True),
        cluster(specs.PODS, optional=True),
        LOGS,
    )
    tags = ("driver", "kernel", "secure-boot")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name in ctx.facts.node_names:
            judged = secure_boot_refusal(ctx.facts, name)
            if judged is not None:
                yield self._finding(*judged)

    def _finding(self, name: str, sb_line: Evidence, refused: list[Evidence],
                 unsigned: list[Evidence], absent: bool, dkms: bool) -> Finding:
        texts = []
        if refused:
            texts.append("the kernel refused to load an unsigned module")
        if absent:
            texts.append("the nvidia module is not loaded"
                         + (" and the driver container builds it on the node, unsigned"
                            if dkms else ""))
        if unsigned:
            texts.append("the nvidia module is unsigned ('module verification failed')"
                         + ("" if refused or absent else "; it loaded only because "
                            "enforcement is off, and will be refused once it is on"))
        severity = Severity.CRITICAL if refused or absent else Severity.MEDIUM
        summary = f"On {name}, Secure Boot is enabled and " + "; ".join(texts) + "."
        evidence = [sb_line, *capped(refused, 3), *capped(unsigned, 2)]
        if absent:
            evidence.append(Evidence(path=specs.node_file(name, specs.MODULES),
                                     excerpt="(no 'nvidia' module in /proc/modules)"))
        # The refusal is the root: the driver container's failed install (OP010) and the
        # missing module (DRV003) follow from it.
        causes = [refs.link("DRV003", name)] if absent else []
        if refused or absent:
            causes.append(refs.link("OP010", name))
        return self.finding(
            name, summary, severity=severity, nodes=[name], objects=[node_ref(name)],
            evidence=evidence, causes=causes, remediation=_secure_boot_remediation(name),
            # an unsigned module that loaded: the refusal is predicted, not seen
            confidence=None if refused or absent else Confidence.LIKELY,
        )
