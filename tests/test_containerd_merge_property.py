"""The containerd merge emulation against the real binary.

Hypothesis builds a node's ``/etc/containerd`` (main config with or without
imports, version 1 or 2, drop-ins sorting before and after ``99-nvidia.toml``,
touching the CRI plugin or other plugins or nothing), writes it under a temporary
root and runs ``containerd --config <root>/etc/containerd/config.toml config dump``.
Whatever the binary says must be what :func:`emulate` predicted: whether it loads
at all, the runtime handlers, the default runtime, the registry ``config_path``,
the sandbox image and the set of files loaded. Every clobber that drops the nvidia
runtime is then repaired with :func:`corrected_dropin` and run through the binary
again.

``GPU_TRIAGE_FUZZ_EXAMPLES`` raises the number of generated cases (default 120).
Without ``containerd`` on PATH the test is skipped, unless ``CI`` is set: then a
missing binary fails. The detailed setting comparisons are written for a 1.x
binary (Debian's 1.6.20 in CI); with a 2.x binary the load result, the runtimes
and the domain case are still compared.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from analyzers.facts.containerd_merge import (
    CRI_GRPC,
    Clobber,
    MergeResult,
    corrected_dropin,
    emulate,
    runtimes_in,
)
from bundle.versions import containerd

MAIN = "/etc/containerd/config.toml"
CONFD = "/etc/containerd/conf.d"
NVIDIA = f"{CONFD}/99-nvidia.toml"
EXTRA = "/etc/containerd/extra/extra.toml"
EXAMPLES = int(os.environ.get("GPU_TRIAGE_FUZZ_EXAMPLES", "120"))

# Names around 99-nvidia.toml in byte order: "-" < "9" < "Z" < "z", dot files match "*".
DROPIN_NAMES = (
    "00-registry.toml", "10-kata.toml", "50-opt.toml", "99-a.toml", "99-zz.toml",
    "999-late.toml", "Z-upper.toml", "zz-registry.toml", ".hidden.toml",
)
TOUCHES = (
    "registry", "sandbox", "kata", "default_runtime", "opt", "scheduler", "nothing",
    "runc", "empty_runtimes",
)
CRI_TOUCHES = ("registry", "sandbox", "kata", "default_runtime", "runc", "empty_runtimes")


# --------------------------------------------------------------------------- binary


def _containerd() -> str:
    found = shutil.which("containerd")
    if found is None:
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail("containerd is not on PATH but CI is set: the property test must run")
        pytest.skip("containerd is not on PATH (install it to check the emulation)")
    return found


@dataclass(frozen=True)
class Binary:
    path: str
    version: tuple[int, int, int]
    defaults: dict[str, Any]     # CRI table of a dump of an empty config


@pytest.fixture(scope="module")
def binary() -> Iterator[Binary]:
    path = _containerd()
    text = subprocess.run([path, "--version"], capture_output=True, text=True,
                          check=True).stdout
    version = containerd(text)
    assert version is not None, text
    with tempfile.TemporaryDirectory() as root:
        config = Path(root, "config.toml")
        config.write_text("version = 2\n")
        code, dump = _dump(path, config, Path(root))
        assert code == 0
        yield Binary(path, version, dump["plugins"][CRI_GRPC])
    if _timings:  # shown with -s: each case costs one or more process spawns
        total = sum(_timings)
        print(f"\ncontainerd {'.'.join(map(str, version))}: {len(_timings)} cases in "
              f"{total:.1f} s ({1000 * total / len(_timings):.0f} ms each), "
              f"{len(_repairs)} corrected drop-ins checked")


def _dump(binary: str, config: Path, cwd: Path) -> tuple[int, dict[str, Any]]:
    done = subprocess.run([binary, "--config", str(config), "config", "dump"],
                          capture_output=True, text=True, cwd=cwd, timeout=30)
    return done.returncode, tomllib.loads(done.stdout) if done.returncode == 0 else {}


def _write(root: Path, files: Mapping[str, str]) -> None:
    for path, text in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace('"/etc/containerd/', f'"{root}/etc/containerd/'))


# --------------------------------------------------------------------------- scenarios


def _cri_lines(plugin: str, touch: str) -> list[str]:
    table = f'[plugins.{plugin}]' if plugin == "cri" else f'[plugins."{plugin}"]'
    head = table[:-1]
    if touch == "registry":
        return [f"{head}.registry]", 'config_path = "/etc/containerd/certs.d"']
    if touch == "sandbox":
        return [table, 'sandbox_image = "registry.example/pause:3.9"']
    if touch == "kata":
        return [f"{head}.containerd.runtimes.kata]", 'runtime_type = "io.containerd.kata.v2"']
    if touch == "default_runtime":
        return [f"{head}.containerd]", 'default_runtime_name = "kata"']
    if touch == "runc":
        return [f"{head}.containerd.runtimes.runc]", 'runtime_type = "io.containerd.runc.v2"']
    if touch == "empty_runtimes":
        return [f"{head}.containerd.runtimes]"]
    return []


def _other_lines(touch: str, short: bool) -> list[str]:
    if touch == "opt":
        name = "opt" if short else '"io.containerd.internal.v1.opt"'
        return [f"[plugins.{name}]", 'path = "/opt/containerd-test"']
    if touch == "scheduler":
        name = "scheduler" if short else '"io.containerd.gc.v1.scheduler"'
        return [f"[plugins.{name}]", "pause_threshold = 0.05"]
    return []


@dataclass(frozen=True)
class TopLevel:
    """Top-level values merged by mergo's rules: zero values, appended slices."""

    oom_score: int | None
    disable: bool


top_levels = st.builds(TopLevel, st.sampled_from([None, None, 0, -500, -999]), st.booleans())


def _file(version: int | None, plugin: str, touches: list[str], imports: list[str],
          comment: str, top_level: TopLevel) -> str:
    top = [f"# {comment}"]
    if version is not None:
        top.append(f"version = {version}")
    if top_level.oom_score is not None:
        top.append(f"oom_score = {top_level.oom_score}")
    if top_level.disable:
        name = "aufs" if plugin == "cri" else "io.containerd.snapshotter.v1.aufs"
        top.append(f'disabled_plugins = ["{name}"]')
    if imports:
        top.append("imports = [" + ", ".join(f'"{i}"' for i in imports) + "]")
    body: list[str] = []
    short = plugin == "cri"
    for touch in touches:
        lines = _cri_lines(plugin, touch) or _other_lines(touch, short)
        if lines and not lines[0].startswith("["):
            top.extend(lines)
        else:
            body.extend(["", *lines])
    return "\n".join([*top, *body]) + "\n"


def _nvidia(version: int | None, plugin: str, default: bool, extra: bool,
            copy_sandbox: bool) -> str:
    head = f"[plugins.{plugin}" if plugin == "cri" else f'[plugins."{plugin}"'
    lines = ["# written by nvidia-container-toolkit"]
    if version is not None:
        lines.append(f"version = {version}")
    if copy_sandbox:
        lines += ["", f"{head}]", 'sandbox_image = "registry.example/pause:3.9"']
    if default:
        lines += ["", f"{head}.containerd]", 'default_runtime_name = "nvidia"']
    for name in ("nvidia", "nvidia-cdi", "nvidia-legacy") if extra else ("nvidia",):
        suffix = name.removeprefix("nvidia")
        lines += [
            "", f"{head}.containerd.runtimes.{name}]",
            'runtime_type = "io.containerd.runc.v2"',
            "", f"{head}.containerd.runtimes.{name}.options]",
            f'BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime{suffix}"',
        ]
    return "\n".join(lines) + "\n"


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, str]:
    main_version = draw(st.sampled_from([None, 2, 2, 2, 3]))
    v1 = main_version is None
    main_plugin = "cri" if v1 and draw(st.booleans()) else CRI_GRPC

    def dropin_plugin() -> str:
        return draw(st.sampled_from(["cri", *[CRI_GRPC] * 11]))

    # A version 1 main config mostly keeps version 1 drop-ins (2 in one makes it 2).
    dropin_versions = [None, None, None, 2] if v1 else [None, 2]
    files: dict[str, str] = {}
    if draw(st.integers(0, 9)) < 8:
        files[NVIDIA] = _nvidia(
            draw(st.sampled_from(dropin_versions)), main_plugin if v1 else dropin_plugin(),
            draw(st.booleans()), draw(st.booleans()), draw(st.booleans()),
        )
    for name in draw(st.lists(st.sampled_from(DROPIN_NAMES), max_size=3, unique=True)):
        nested = []
        if draw(st.booleans()):
            nested = [draw(st.sampled_from([EXTRA, "../extra/extra.toml", "99-nvidia.toml",
                                            "../config.toml"]))]
        files[f"{CONFD}/{name}"] = _file(
            draw(st.sampled_from(dropin_versions)), main_plugin if v1 else dropin_plugin(),
            draw(st.lists(st.sampled_from(TOUCHES), min_size=1, max_size=2, unique=True)),
            nested, f"drop-in {name}", draw(top_levels),
        )
    if any(EXTRA in text or "extra/extra.toml" in text for text in files.values()):
        files[EXTRA] = _file(
            None, main_plugin if v1 else CRI_GRPC,
            draw(st.lists(st.sampled_from(CRI_TOUCHES), min_size=1, max_size=2, unique=True)),
            [], "extra", draw(top_levels),
        )
    dropins = sorted(p for p in files if p.startswith(CONFD))
    import_choices: list[list[str]] = [
        [], [f"{CONFD}/*.toml"], [f"{CONFD}/*.toml"], ["conf.d/*.toml"],
        [f"{CONFD}/9*.toml"], [f"{CONFD}/[0-9]*.toml"],
    ]
    if dropins:
        explicit = draw(st.permutations(dropins))
        import_choices.append(list(explicit))
        import_choices.append([f"{CONFD}/*.toml", explicit[0]])
        import_choices.append(["conf.d/" + explicit[0].rsplit("/", 1)[1]])
    imports = draw(st.sampled_from(import_choices))
    files[MAIN] = _file(
        main_version, main_plugin,
        draw(st.lists(st.sampled_from(TOUCHES), max_size=3, unique=True)),
        imports, "main config", draw(top_levels),
    )
    return files


# --------------------------------------------------------------------------- checks


def _cri_table(result: MergeResult) -> dict[str, Any]:
    config = result.config
    key = "cri" if int(str(config.get("version") or 1)) < 2 else CRI_GRPC
    plugins = config.get("plugins")
    assert isinstance(plugins, dict)
    table = plugins.get(key, {})
    assert isinstance(table, dict)
    return table


def _dig(table: Mapping[str, Any], *keys: str) -> Any:
    value: Any = table
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def _compare(binary: Binary, files: Mapping[str, str], root: Path) -> MergeResult:
    _write(root, files)
    code, dump = _dump(binary.path, root / MAIN.lstrip("/"), root)
    result = emulate(files, binary.version)
    described = "\n".join(f"--- {p}\n{t}" for p, t in sorted(files.items()))
    assert (code == 0) == (result.load_error is None), (code, result.problems, described)
    if code != 0:
        return result
    assert result.runtimes == runtimes_in(dump), described
    assert dump["oom_score"] == result.config.get("oom_score", 0), described
    if binary.version[0] >= 2:
        return result  # the settings below are where 1.x keeps them
    loaded_cri = dump["plugins"][CRI_GRPC]
    emulated = _cri_table(result)
    for keys in (("containerd", "default_runtime_name"), ("registry", "config_path"),
                 ("sandbox_image",)):
        expected = _dig(emulated, *keys)
        if expected is None:
            expected = _dig(binary.defaults, *keys)
        loaded_value = _dig(loaded_cri, *keys)
        if isinstance(loaded_value, str):
            loaded_value = loaded_value.replace(f"{root}/etc/", "/etc/")
        assert loaded_value == expected, (keys, described)
    assert dump["disabled_plugins"] == result.config.get("disabled_plugins", []), described
    loaded = {os.path.normpath(os.path.join(root, p)) for p in dump["imports"]}
    assert loaded == {str(root) + p for p in result.load_order}, described
    return result


def _repair(binary: Binary, files: Mapping[str, str], result: MergeResult) -> None:
    """Repair nvidia clobbers with the corrected drop-in until none is left.

    Each corrected drop-in goes under the clobbering file's name; the overridden
    file is emptied (not deleted, so an explicit import of it still resolves), the
    main config is left alone. A later file may clobber the corrected one again;
    that clobber is repaired the same way. Every step goes through the binary, and
    at the end the binary must load the nvidia runtime together with the settings
    of every file that had clobbered it.
    """
    fixed = dict(files)
    current = result
    chain: list[Clobber] = []
    for _ in range(len(files)):
        clobber = next((c for c in current.clobbers if "nvidia" in c.lost_runtimes), None)
        if clobber is None:
            break
        fixed[clobber.file] = corrected_dropin(fixed, clobber)
        if clobber.overridden != MAIN:
            fixed[clobber.overridden] = _emptied(fixed[clobber.overridden], clobber.file)
        chain.append(clobber)
        with tempfile.TemporaryDirectory() as tmp:
            current = _compare(binary, fixed, Path(tmp))
    if not chain or current.load_error is not None:
        return
    version = int(str(current.config.get("version") or 1))
    if chain[-1].plugin != ("cri" if version < 2 else CRI_GRPC):
        return  # the table that was repaired is not the one this config version reads
    assert "nvidia" in current.runtimes, fixed[chain[-1].file]
    final = tomllib.loads(fixed[chain[-1].file])["plugins"][chain[-1].plugin]
    expected: dict[str, Any] = {}
    for clobber in chain:  # each clobbering file's table, later files winning
        _merge_into(expected, tomllib.loads(files[clobber.file])["plugins"][clobber.plugin])
    assert _contains(final, expected), fixed[chain[-1].file]
    _repairs.append(chain[-1].file)
    event(f"corrected drop-in checked after {len(chain)} repairs")


def _emptied(text: str, moved_to: str) -> str:
    """The overridden file once its settings moved; its imports still hold."""
    imports = tomllib.loads(text).get("imports")
    kept = f"imports = {json.dumps(imports)}\n" if imports else ""
    return f"# moved into {moved_to}\n{kept}"


def _merge_into(into: dict[str, Any], newer: Mapping[str, Any]) -> None:
    for key, value in newer.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge_into(into[key], value)
        else:
            into[key] = value


def _contains(data: Mapping[str, Any], part: Mapping[str, Any]) -> bool:
    for key, value in part.items():
        if key == "imports":
            continue
        if isinstance(value, Mapping):
            if not isinstance(data.get(key), Mapping) or not _contains(data[key], value):
                return False
        elif data.get(key) != value:
            return False
    return True


_timings: list[float] = []
_repairs: list[str] = []


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(files=scenarios())
def test_emulation_matches_containerd(binary: Binary, files: dict[str, str]) -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = _compare(binary, files, Path(tmp))
    event("containerd refuses the config" if result.load_error else "config loads")
    event(f"nvidia loaded: {'nvidia' in result.runtimes}")
    event(f"clobbers: {len(result.clobbers)}")
    event(f"nvidia clobbered: {any('nvidia' in c.lost_runtimes for c in result.clobbers)}")
    _repair(binary, files, result)
    _timings.append(time.perf_counter() - started)


def test_domain_case_through_binary(binary: Binary) -> None:
    """domain.md §4 exactly: zz-registry.toml drops nvidia; the repair brings it back."""
    nvidia = _nvidia(2, CRI_GRPC, True, True, False)
    registry = ("# registry mirrors\n"
                f'[plugins."{CRI_GRPC}".registry]\n'
                'config_path = "/etc/containerd/certs.d"\n')
    files = {MAIN: f'version = 2\nimports = ["{CONFD}/*.toml"]\n', NVIDIA: nvidia,
             f"{CONFD}/zz-registry.toml": registry}
    with tempfile.TemporaryDirectory() as tmp:
        result = _compare(binary, files, Path(tmp))
    if binary.version[0] >= 2:  # 2.x merges plugin tables key by key (from its source)
        assert result.runtimes == {"runc", "nvidia", "nvidia-cdi", "nvidia-legacy"}
        assert result.clobbers == ()
        return
    assert "nvidia" not in result.runtimes
    [clobber] = result.clobbers
    fixed = {MAIN: files[MAIN], clobber.file: corrected_dropin(files, clobber)}
    with tempfile.TemporaryDirectory() as tmp:
        _write(Path(tmp), fixed)
        code, dump = _dump(binary.path, Path(tmp, MAIN.lstrip("/")), Path(tmp))
    assert code == 0
    assert runtimes_in(dump) == {"nvidia", "nvidia-cdi", "nvidia-legacy"}
    cri = dump["plugins"][CRI_GRPC]
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    assert cri["registry"]["config_path"] == f"{tmp}/etc/containerd/certs.d"  # rewritten root
