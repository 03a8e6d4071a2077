"""JSON Schemas of the findings report and of the suppression file, generated from their
pydantic models (:class:`analyzers.results.models.Report`,
:class:`analyzers.engine.suppress.SuppressionFile`) into ``docs/schemas/``, so that other
tools can validate without Python.

``python -m analyzers.engine.schemas`` writes them; ``--check`` exits 1 when a file is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from analyzers.engine.suppress import SuppressionFile
from analyzers.results.models import Report

DIRECTORY = Path(__file__).resolve().parents[2] / "docs" / "schemas"
SCHEMAS: dict[str, type[BaseModel]] = {
    "findings.schema.json": Report,
    "suppressions.schema.json": SuppressionFile,
}


def text(model: type[BaseModel]) -> str:
    """``model``'s schema (draft 2020-12) as the file holds it."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              **model.model_json_schema()}
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    stale = []
    for name, model in SCHEMAS.items():
        path = DIRECTORY / name
        wanted = text(model)
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == wanted:
            continue
        if check:
            stale.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(wanted, encoding="utf-8")
            print(f"wrote {path}")
    for name in stale:
        print(f"{DIRECTORY / name} is stale: run python -m analyzers.engine.schemas",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
