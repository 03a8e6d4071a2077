"""``python -m analyzers.datafiles``: regenerate the JSON twins of the packaged TOML
data files (:mod:`analyzers.knowledge.packaged`) after an edit.

The signatures are checked first, every check of :mod:`analyzers.knowledge.signatures`, because a
run trusts a current twin without checking it again; a file that fails a check leaves
every twin as it was.
"""

from __future__ import annotations

from analyzers.knowledge import packaged, signatures


def main() -> int:
    """Check the signature knowledge base, then write every twin."""
    signatures.load_file(packaged.DATA / "signatures.toml")
    for name in packaged.TWINNED:
        packaged.twin_path(name).write_bytes(packaged.render_twin(name))
        print(f"wrote {packaged.twin_path(name)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
