"""KI: the known-issues base run over the bundle — a failure seen before in a public
thread, recognised by its own words (``analyzers/data/known_issues/``, matched by
``facts.known_issue_lines`` and judged in context by ``facts.known_issue_conditions``).

Each rule lives alone in ``KI<nnn>.py``. ``RULES`` (the ``gpu_triage.rules`` entry
point) is found from the files, in ID order.
"""

from analyzers.rules import family_getattr

__getattr__ = family_getattr(__name__, __path__)
