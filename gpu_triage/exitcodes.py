"""Exit codes of gpu-triage, listed in ``--help``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzers.results.models import Finding, Report


class Exit(IntEnum):
    OK = 0              # nothing at or above --fail-on
    FINDINGS = 1        # findings at or above --fail-on
    USAGE = 2           # bad command line (or the collector could not reach the cluster)
    UNREADABLE = 3      # the bundle cannot be read at all
    INTERNAL = 4        # an unexpected error outside a rule; rerun with --verbose
    INCOMPLETE = 5      # analysed, but rules ended in `error`: the findings may be incomplete

    @classmethod
    def help_text(cls) -> str:
        meanings = {
            cls.OK: "no finding at or above --fail-on",
            cls.FINDINGS: "findings at or above --fail-on",
            cls.USAGE: "usage error",
            cls.UNREADABLE: "the bundle cannot be read at all",
            cls.INTERNAL: "unexpected internal error (rerun with --verbose)",
            cls.INCOMPLETE: "the analysis is incomplete: rules ended in error (rerun with "
                            "--verbose); the findings may not be all there are",
        }
        return "\n".join(f"  {code.value}  {meanings[code]}" for code in cls)


def exit_code(findings: Iterable[Finding], fail_on: str, *,
              errored: Sequence[str] = ()) -> Exit:
    """The exit code of every command that judges findings (``analyze``, each bundle of a
    batch, ``diff`` over its new findings): :attr:`Exit.INCOMPLETE` when rules ended in
    ``error`` (``errored``, from :func:`errored_rules`: an incomplete analysis must never
    look clean, nor merely "findings"), else :attr:`Exit.FINDINGS` when a finding is at
    or above ``fail_on``, else OK."""
    from analyzers.results.models import Severity

    if errored:
        return Exit.INCOMPLETE
    threshold = Severity(fail_on)
    if any(f.severity.at_least(threshold) for f in findings):
        return Exit.FINDINGS
    return Exit.OK


def errored_rules(report: Report) -> list[str]:
    """The IDs of the rules that ended in ``error``, in report order."""
    from analyzers.results.models import RuleStatus

    return [r.rule_id for r in report.rules if r.status is RuleStatus.ERROR]
