"""Analysis: result models, the rule base, the engine, shared facts and the rules."""

__version__ = "0.1.0"
