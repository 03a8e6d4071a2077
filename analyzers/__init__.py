"""Analysis: from an opened bundle to a report, in rooms that import only downwards.

- ``results/``: the models an analysis, a diff or a batch run returns (what reports read);
- ``knowledge/``: the packaged data files (``data/``) and their loaders: Xid and SXid
  catalogs, signatures, releases, products, operand versions, known issues;
- ``facts/``: what the bundle says, parsed and judged once, shared by the rules;
- ``rule.py`` (the rule base), ``refs.py``, ``commands.py`` and ``rules/<family>/<ID>.py``;
- ``speed/``: worker processes that parse node files ahead of the rules (optional);
- ``engine/``: runs the rules and assembles the report (selection, plugins, coverage,
  grouping, overview, timeline, suppressions, diff, the case harness).

``tests/test_layering.py`` holds the order: results -> knowledge -> facts -> rules ->
engine, with speed beside the rules, read only by the engine.
"""

__version__ = "0.1.0"
