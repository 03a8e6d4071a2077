"""containerd configuration for the samples, and real ``containerd config dump``.

The files a node holds (``config.toml``, the toolkit's ``conf.d/99-nvidia.toml``)
are produced here; the dump is not written by hand but obtained by running the
installed containerd (Debian's 1.6.20) on those files, so the merge behaviour
the analyzer judges is containerd's own.
"""

from __future__ import annotations

import copy
import json
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Any

CONTAINERD = "containerd"
EXPECTED_VERSION = "1.6.20"
CRI = "io.containerd.grpc.v1.cri"
MAIN = "/etc/containerd/config.toml"
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
TOOLKIT_DIR = "/usr/local/nvidia/toolkit"


class ContainerdUnavailable(RuntimeError):
    pass


def _run(*args: str) -> str:
    try:
        done = subprocess.run([CONTAINERD, *args], capture_output=True, text=True, check=True)
    except FileNotFoundError as exc:
        raise ContainerdUnavailable(
            f"{CONTAINERD} not found; the samples need containerd "
            f"{EXPECTED_VERSION} to produce real config dumps"
        ) from exc
    return done.stdout


def version_text() -> str:
    """Real ``containerd --version`` output; refuses other versions, since the
    committed dumps were produced with this one."""
    out = _run("--version")
    if f" {EXPECTED_VERSION}" not in out:
        raise ContainerdUnavailable(f"expected containerd {EXPECTED_VERSION}, found: {out.strip()}")
    return out


# ----------------------------------------------------------------- TOML (go-toml v1)


def _key(k: str) -> str:
    if k and all(c.isascii() and (c.isalnum() or c in "-_") for c in k):
        return k
    return json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if not v.is_integer() else f"{int(v)}.0"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"unsupported TOML value {v!r}")


def toml_dumps(tree: dict[str, Any]) -> str:
    """Serialise like the go-toml v1 encoder containerd and the NVIDIA toolkit
    use: scalar keys first, then sub-tables, both sorted; two spaces of indent
    per table level; a blank line before every table header."""
    out: list[str] = []

    def emit(table: dict[str, Any], path: list[str]) -> None:
        pad = "  " * len(path)
        for k in sorted(k for k, v in table.items() if not isinstance(v, dict)):
            out.append(f"{pad}{_key(k)} = {_value(table[k])}\n")
        for k in sorted(k for k, v in table.items() if isinstance(v, dict)):
            sub = [*path, k]
            out.append(f"\n{'  ' * len(path)}[{'.'.join(_key(p) for p in sub)}]\n")
            emit(table[k], sub)

    emit(tree, [])
    return "".join(out)


# -------------------------------------------------------------------- config files


def fresh_config() -> str:
    """``/etc/containerd/config.toml`` as a fresh install leaves it when set up
    for Kubernetes: ``containerd config default`` with the systemd cgroup driver."""
    text = _run("config", "default")
    marker = "SystemdCgroup = false"
    if text.count(marker) != 1:
        raise ContainerdUnavailable("unexpected `containerd config default` output")
    return text.replace(marker, "SystemdCgroup = true")


def toolkit_files(top_level: str, dump_before: str) -> dict[str, str]:
    """What the NVIDIA Container Toolkit (1.19, signal restart mode, CDI on)
    leaves on a containerd 1.x node.

    - ``99-nvidia.toml`` starts from the whole CRI plugin section of the loaded
      configuration (the toolkit reads ``containerd config dump``) because
      containerd 1.x replaces a plugin's table per imported file; it adds
      ``enable_cdi`` and the ``nvidia``, ``nvidia-cdi`` and ``nvidia-legacy``
      runtimes, each a copy of ``runc`` with its own BinaryName.
    - ``config.toml`` is re-serialised with the drop-in directory in ``imports``.
    """
    loaded = tomllib.loads(dump_before)
    cri = copy.deepcopy(loaded["plugins"][CRI])
    cri["enable_cdi"] = True
    runtimes = cri["containerd"]["runtimes"]
    for name, suffix in (("nvidia", ""), ("nvidia-cdi", ".cdi"), ("nvidia-legacy", ".legacy")):
        runtime = copy.deepcopy(runtimes["runc"])
        runtime["options"]["BinaryName"] = f"{TOOLKIT_DIR}/nvidia-container-runtime{suffix}"
        runtimes[name] = runtime
    drop_in = {"version": 2, "plugins": {CRI: cri}}

    top = tomllib.loads(top_level)
    pattern = str(Path(DROP_IN).parent / "*.toml")
    if pattern not in top.get("imports", []):
        top["imports"] = [*top.get("imports", []), pattern]
    return {MAIN: toml_dumps(top), DROP_IN: toml_dumps(drop_in)}


def config_dump(files: dict[str, str], main: str = MAIN) -> str:
    """Run ``containerd --config <main> config dump`` on a node's configuration files.

    ``files`` maps absolute host paths (``main``, the file containerd runs with, and
    any files it imports) to their content. They are written under a temporary root;
    the absolute paths inside ``main``'s ``imports`` are pointed into that root for the
    run (every directory holding one of ``files``), and the root prefix is removed
    from the output again, so the dump reads exactly as it would on the node.
    """
    with tempfile.TemporaryDirectory(prefix="samples-containerd-") as tmp:
        # "/etc/containerd/" covers the stock layout; longer directories below an
        # already rewritten one no longer match (their quote is followed by ``tmp``).
        dirs = sorted({str(Path(p).parent) for p in files} | {"/etc/containerd"}, key=len)
        for path, text in files.items():
            target = Path(tmp + path)
            target.parent.mkdir(parents=True, exist_ok=True)
            if path == main:
                for directory in dirs:
                    text = text.replace(f'"{directory}/', f'"{tmp}{directory}/')
            target.write_text(text, encoding="utf-8")
        # containerd lists the files it loaded in ``imports`` in Go map order,
        # which varies from run to run. Keep the first run that lists them as
        # main file then the others in name order: a real output, and a stable one.
        loaded = [main, *sorted(p for p in files if p != main)]
        wanted = "imports = [" + ", ".join(json.dumps(p) for p in loaded) + "]"
        for _ in range(64):
            out = _run("--config", f"{tmp}{main}", "config", "dump").replace(tmp, "")
            if wanted in out.splitlines():
                return out
        raise ContainerdUnavailable(f"`containerd config dump` never listed {wanted}")
