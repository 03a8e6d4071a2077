"""Knowledge: the packaged data files (``analyzers/data``) and their loaders.

The lowest room of analyzers after the result models: facts, rules and the engine
read it; it reads none of them (tests/test_layering.py)."""
