"""Exit codes of gpu-triage, listed in ``--help``."""

from enum import IntEnum


class Exit(IntEnum):
    OK = 0              # nothing at or above --fail-on
    FINDINGS = 1        # findings at or above --fail-on
    USAGE = 2           # bad command line (or the collector could not reach the cluster)
    UNREADABLE = 3      # the bundle cannot be read at all
    INTERNAL = 4        # an unexpected error outside a rule; rerun with --verbose

    @classmethod
    def help_text(cls) -> str:
        meanings = {
            cls.OK: "no finding at or above --fail-on",
            cls.FINDINGS: "findings at or above --fail-on",
            cls.USAGE: "usage error",
            cls.UNREADABLE: "the bundle cannot be read at all",
            cls.INTERNAL: "unexpected internal error (rerun with --verbose)",
        }
        return "\n".join(f"  {code.value}  {meanings[code]}" for code in cls)
