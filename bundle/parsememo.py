"""Parse a text once even when many nodes carry the same text.

On a large cluster nearly every node holds the same ``containerd config dump`` (a few
configuration variants for thousands of nodes). :func:`toml_loads` keeps the parsed
result of recent texts pickled and hands every caller a fresh copy (unpickling is some
50 times faster than :mod:`tomllib`), so callers still own what they get back. Errors
are not remembered: a text that does not parse raises every time, and every caller
records its own problem.
"""

from __future__ import annotations

import pickle
import tomllib
from collections import OrderedDict
from typing import Any

_LIMIT = 64
_TOML: OrderedDict[str, bytes] = OrderedDict()


def toml_loads(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)``, from the memo when the same text was parsed recently."""
    blob = _TOML.get(text)
    if blob is not None:
        _TOML.move_to_end(text)
        value: dict[str, Any] = pickle.loads(blob)
        return value
    parsed = tomllib.loads(text)
    try:
        _TOML[text] = pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL)
    except (RecursionError, pickle.PicklingError):
        return parsed  # too deep to keep; tomllib managed, so the caller gets it
    if len(_TOML) > _LIMIT:
        _TOML.popitem(last=False)
    return parsed
