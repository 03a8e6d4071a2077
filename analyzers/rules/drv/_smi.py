"""DRV009: nvidia-smi itself failed on the node, and why (read in analyzers/facts/smi.py)."""

from __future__ import annotations

from analyzers import refs
from analyzers.facts.secureboot import refusal as secure_boot_refusal
from analyzers.facts.stages import Stage
from analyzers.refs import Link
from analyzers.rule import Context
from analyzers.rules.drv.DRV003 import DriverNotUsable


def _explanations(ctx: Context, name: str) -> list[tuple[Link, str]]:
    """(finding id, sentence) of the findings that explain the failure."""
    found: list[tuple[Link, str]] = []
    if secure_boot_refusal(ctx.facts, name) is not None:
        found.append((refs.DRV004(name), "Secure Boot refuses the unsigned nvidia module "
                                         "(see DRV004)"))
    if DriverNotUsable.explains(ctx, name):
        found.append((refs.DRV003(name), "the driver is not usable on the node (see DRV003)"))
    driver = ctx.facts.driver_kernel.get(name)
    if driver is not None and driver.broken:
        found.append((refs.OP010(name), "the driver container cannot install for the node's "
                                        "kernel (see OP010)"))
    if driver_container_failing(ctx, name):
        found.append((refs.OP001(name), "the operator's driver stage is failing on the node "
                                        "(see OP001)"))
    return found


def driver_container_failing(ctx: Context, name: str) -> bool:
    """Whether the node's operand stack stops at the driver container itself. Where
    the stage is only the validator waiting on a host driver, nvidia-smi failing is
    the explanation of that stage, not its consequence."""
    stages = ctx.facts.operand_stages.get(name)
    return (stages is not None and stages.first is Stage.DRIVER
            and any(b.operand.component == "driver" for b in stages.at_first))
