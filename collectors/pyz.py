"""Build the one-file collector: gpu-triage-collect.pyz, a zipapp of this package.

The archive holds the package `collectors` (collect.py, redact.py, preflight.py, fleet.py,
node.sh) and a `__main__.py` that runs collectors.collect.main, so `python3
gpu-triage-collect.pyz [options]` (Python 3.8 or newer, standard library only) is the same
program as `python3 collect.py` and `gpu-triage collect`; node.sh is read from inside the
archive. The bytes depend only on the sources: members in a fixed order, each with the same
timestamp (1980-01-01, the oldest a zip can hold), permissions and compression.

    python3 -m collectors.pyz dist/gpu-triage-collect.pyz     (what `make collector` runs)
    gpu-triage collect --write-pyz PATH                        (from an installed analyzer)
"""

from __future__ import annotations

import io
import os
import sys
import zipfile

# The members, in archive order. node.sh is data; the rest are the package's modules.
SOURCES = ("__init__.py", "collect.py", "fleet.py", "preflight.py", "redact.py", "node.sh")
SHEBANG = b"#!/usr/bin/env python3\n"
MAIN = (
    b'"""gpu-triage collector, one-file form: python3 gpu-triage-collect.pyz --help"""\n'
    b"import sys\n\n"
    b"from collectors.collect import main\n\n"
    b"sys.exit(main())\n"
)
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def _source(name: str) -> bytes:
    """A member's bytes: from the installed package (or this directory), never from a pyz."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, name), "rb") as handle:
        return handle.read()


def _member(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # Unix, whatever builds it
    info.external_attr = 0o644 << 16
    archive.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)


def build() -> bytes:
    """The .pyz's bytes: a shebang line, then the zip (zipimport reads past the prefix)."""
    buffer = io.BytesIO()
    buffer.write(SHEBANG)
    with zipfile.ZipFile(buffer, "w") as archive:
        _member(archive, "__main__.py", MAIN)
        for name in SOURCES:
            _member(archive, f"collectors/{name}", _source(name))
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    """`python3 -m collectors.pyz OUT`: write the archive (mode 0755) without following a link."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python3 -m collectors.pyz OUTPUT.pyz", file=sys.stderr)
        return 2
    from collectors.collect import refused_output, write_new

    out = os.path.abspath(args[0])
    refusal = refused_output(out)
    if refusal:
        print(f"cannot write {out}: {refusal}", file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(out), exist_ok=True)
    data = build()
    write_new(out, lambda handle: handle.write(data), 0o755)
    print(f"{out}: {len(data)} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
