"""gpu-triage: the command-line composition root (bundle → facts → rules → reports)."""
