"""DRV003 (driver not usable) and DRV004 (Secure Boot): their remediations; the verdicts
are the facts' (analyzers/facts/driver.py, analyzers/facts/secureboot.py)."""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from analyzers import commands as sh


def _driver_remediation(name: str, kinds: AbstractSet[str]) -> str:
    node = sh.node(name)
    lines = [
        sh.node_shell(node),
        "lsmod | grep -E '^(nvidia|nouveau)'; cat /proc/driver/nvidia/version",
        "dmesg --time-format iso | grep -iE 'NVRM|nouveau|nova' | tail -30",
        sh.cmd("kubectl", "cordon", node, sh.raw(";"), "kubectl", "drain", node,
               "--ignore-daemonsets", "--delete-emptydir-data"),
    ]
    if "nouveau" in kinds:
        lines += [
            "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' > "
            "/etc/modprobe.d/blacklist-nouveau.conf",
            "update-initramfs -u   # dracut -f on RHEL-family hosts; then reboot",
        ]
    if "mismatch" in kinds:
        lines.append("# reboot (or rmmod and reload the nvidia modules) so the kernel module "
                     "matches the libraries; with the driver container, remove host driver "
                     "packages")
    if "not-loaded" in kinds:
        lines.append("modprobe nvidia && dmesg | tail -20   # the refusal reason, if any")
    lines.append(sh.cmd("kubectl", "uncordon", node, tail="   # after nvidia-smi works again"))
    return sh.lines(lines)


def _secure_boot_remediation(name: str) -> str:
    node = sh.node(name)
    return sh.lines(
        sh.node_shell(node),
        "mokutil --sb-state",
        "dmesg --time-format iso | grep -iE 'Lockdown|module verification' | tail -20",
        "# then, one node at a time (cordon and drain it first): signed precompiled driver",
        "# images (driver.usePrecompiled=true) or distribution-signed driver packages; or",
        "# sign the module and enrol its key (mokutil --import); or turn Secure Boot off",
        "# in the firmware where policy allows",
    )
