"""BND002: Partial bundle: members refused, the archive cut short, or files that do not parse."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule
from analyzers.rules.bnd._base import _UNREADABLE, _line_of


class UnreadableBundleParts(Rule):
    """Partial bundle: members refused, the archive cut short, or files that do not parse.

    Why it matters:
    What could not be read was not analysed. A truncated upload or a corrupt file
    silently narrows every rule that depends on it.

    Remediation:
    Ask for the bundle again (check its size against the collector's final line), or
    re-collect the named files. Verify the archive locally with:
      gzip -t bundle.tgz && tar -tzf bundle.tgz | tail
    A bundle that is big but genuine can be read with higher caps:
    --max-member-mib, --max-total-gib, --max-members, --max-ratio and --max-nodes.
    """

    id = "BND002"
    slug = "unreadable-bundle-parts"
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    phase = 1

    def check(self, ctx: Context) -> Iterable[Finding]:
        grouped: dict[str, list[Evidence]] = defaultdict(list)
        for problem in ctx.facts.problems:
            line = _line_of(problem.where)
            excerpt = problem.message if problem.where is None or line is not None \
                else f"{problem.where}: {problem.message}"
            grouped[problem.kind].append(Evidence(path=problem.path, line=line, excerpt=excerpt))
        titles = {
            "truncated": ("The archive ends early; it was analysed up to the cut",
                          Severity.HIGH),
            "refused": ("Archive members were refused for safety or size", Severity.MEDIUM),
            "corrupt": ("The archive's checksum does not match; what was read may be damaged",
                        Severity.HIGH),
            "trailing": ("Data after the end of the archive was not read", Severity.MEDIUM),
            "parse": ("Files in the bundle could not be parsed", Severity.MEDIUM),
        }
        for kind, evidence in sorted(grouped.items()):
            title, severity = titles.get(kind, (f"Bundle problems ({kind})", Severity.MEDIUM))
            paths = sorted({e.path for e in evidence})
            shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5
                                            else "")
            yield self.finding(
                kind,
                f"{len(evidence)} problem(s) in {len(paths)} file(s): {shown}. "
                + evidence[0].excerpt,
                severity=severity,
                title=title,
                evidence=evidence[:20],
                remediation=_UNREADABLE,
            )
