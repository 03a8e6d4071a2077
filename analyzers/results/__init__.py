"""Results: the models of what an analysis, a diff or a batch run produces.

The contract the reports read (and the only part of analyzers they may import);
it imports nothing of analyzers."""
