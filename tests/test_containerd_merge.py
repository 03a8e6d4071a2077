"""Unit tests of the containerd imports-merge emulation (rule RT002).

The 1.x expectations were checked against Debian's containerd 1.6.20 (see
``test_containerd_merge_property.py`` for the generated comparison); the 2.x ones
follow the containerd 2.x source and are marked as such.
"""

from __future__ import annotations

import tomllib

import pytest

from analyzers.facts.containerd_merge import (
    CRI_GRPC,
    CRI_IMAGES,
    CRI_RUNTIME,
    Clobber,
    corrected_dropin,
    emulate,
    runtimes_in,
)
from bundle.versions import containerd

MAIN = "/etc/containerd/config.toml"
NVIDIA = "/etc/containerd/conf.d/99-nvidia.toml"
ZZ = "/etc/containerd/conf.d/zz-registry.toml"
V1_6 = (1, 6, 20)
V1_7 = (1, 7, 27)

MAIN_V2 = 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
NVIDIA_DROPIN = f"""# written by nvidia-container-toolkit
version = 2

[plugins."{CRI_GRPC}".containerd]
  default_runtime_name = "nvidia"

[plugins."{CRI_GRPC}".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"

[plugins."{CRI_GRPC}".containerd.runtimes.nvidia.options]
  BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
"""
REGISTRY_DROPIN = f"""# registry mirrors live in certs.d
[plugins."{CRI_GRPC}".registry]
  config_path = "/etc/containerd/certs.d"
"""


def _cri(config: dict[str, object], plugin: str = CRI_GRPC) -> dict[str, object]:
    plugins = config["plugins"]
    assert isinstance(plugins, dict)
    table = plugins[plugin]
    assert isinstance(table, dict)
    return table


# --------------------------------------------------------------------------- domain.md §4


def test_registry_dropin_after_nvidia_clobbers_it() -> None:
    files = {MAIN: MAIN_V2, NVIDIA: NVIDIA_DROPIN, ZZ: REGISTRY_DROPIN}
    result = emulate(files, V1_6)
    assert result.load_order == (MAIN, NVIDIA, ZZ)
    assert result.runtimes == {"runc"}
    assert result.clobbers == (
        Clobber(file=ZZ, overridden=NVIDIA, plugin=CRI_GRPC, lost_runtimes=("nvidia",)),
    )
    assert _cri(result.config) == {"registry": {"config_path": "/etc/containerd/certs.d"}}
    assert result.problems == ()
    assert result.load_error is None


def test_registry_dropin_sorting_first_keeps_nvidia() -> None:
    early = "/etc/containerd/conf.d/00-registry.toml"
    result = emulate({MAIN: MAIN_V2, NVIDIA: NVIDIA_DROPIN, early: REGISTRY_DROPIN}, V1_6)
    assert result.load_order == (MAIN, early, NVIDIA)
    # A runtimes table replaces containerd's built-in runc (checked on 1.6.20).
    assert result.runtimes == {"nvidia"}
    # The nvidia drop-in replaced the registry table instead: that is a clobber too,
    # but it drops no runtime.
    assert result.clobbers == (
        Clobber(file=NVIDIA, overridden=early, plugin=CRI_GRPC, lost_runtimes=()),
    )


def test_dropin_directory_not_imported() -> None:
    result = emulate({MAIN: "version = 2\n", NVIDIA: NVIDIA_DROPIN, ZZ: REGISTRY_DROPIN}, V1_7)
    assert result.load_order == (MAIN,)
    assert result.runtimes == {"runc"}
    assert result.clobbers == ()
    assert "nvidia" in runtimes_in(tomllib.loads(NVIDIA_DROPIN))


def test_identical_copy_is_not_a_clobber() -> None:
    """The toolkit copies the CRI table into its drop-in: nothing is lost."""
    main = MAIN_V2 + f'[plugins."{CRI_GRPC}"]\n  sandbox_image = "pause:3.9"\n'
    dropin = NVIDIA_DROPIN + f'[plugins."{CRI_GRPC}"]\n  sandbox_image = "pause:3.9"\n'
    result = emulate({MAIN: main, NVIDIA: dropin}, V1_7)
    assert result.clobbers == ()
    assert result.runtimes == {"nvidia"}


def test_main_config_clobbered_by_dropin_names_main() -> None:
    main = MAIN_V2 + (f'[plugins."{CRI_GRPC}".containerd.runtimes.nvidia]\n'
                      '  runtime_type = "io.containerd.runc.v2"\n')
    result = emulate({MAIN: main, ZZ: REGISTRY_DROPIN}, V1_7)
    assert result.clobbers == (
        Clobber(file=ZZ, overridden=MAIN, plugin=CRI_GRPC, lost_runtimes=("nvidia",)),
    )
    assert result.runtimes == {"runc"}


# --------------------------------------------------------------------------- 2.x (source)


def test_2x_deep_merge_keeps_both_v3_dropins() -> None:
    nvidia = (f'version = 3\n[plugins."{CRI_RUNTIME}".containerd.runtimes.nvidia]\n'
              '  runtime_type = "io.containerd.runc.v2"\n')
    registry = f'version = 3\n[plugins."{CRI_IMAGES}".registry]\n  config_path = "/certs"\n'
    main = 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
    result = emulate({MAIN: main, NVIDIA: nvidia, ZZ: registry}, (2, 1, 4))
    assert result.runtimes == {"runc", "nvidia"}
    assert result.clobbers == ()
    assert _cri(result.config, CRI_IMAGES) == {"registry": {"config_path": "/certs"}}


def test_2x_migrates_version_2_dropins_and_keeps_both() -> None:
    files = {MAIN: MAIN_V2, NVIDIA: NVIDIA_DROPIN, ZZ: REGISTRY_DROPIN}
    for version in ((2, 0, 2), (2, 1, 4), (2, 2, 0), (2, 3, 0)):
        result = emulate(files, version)
        assert result.runtimes == {"runc", "nvidia"}, version
        assert result.clobbers == (), version
        assert result.config["version"] == 3
        assert _cri(result.config, CRI_IMAGES) == {
            "registry": {"config_path": "/etc/containerd/certs.d"}
        }
        runtime = _cri(result.config, CRI_RUNTIME)
        assert runtime["containerd"] == {
            "default_runtime_name": "nvidia",
            "runtimes": {"nvidia": {
                "runtime_type": "io.containerd.runc.v2",
                "options": {"BinaryName": "/usr/local/nvidia/toolkit/nvidia-container-runtime"},
            }},
        }
        assert _cri(result.config) == {}  # only streaming-server settings stay there


def test_2x_version_2_dropin_under_version_3_main_differs_by_release() -> None:
    main = ('version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
            f'[plugins."{CRI_RUNTIME}".containerd.runtimes.kata]\n'
            '  runtime_type = "io.containerd.kata.v2"\n')
    files = {MAIN: main, NVIDIA: NVIDIA_DROPIN}
    # 2.0.2-2.2: the merged version becomes 2, then one migration keeps the runtime
    # plugin's existing runtimes table and drops nvidia.
    old = emulate(files, (2, 1, 4))
    assert old.runtimes == {"runc", "kata"}
    assert old.problems == (
        "merged config (version 2): the 2.x migration of plugins."
        f"'{CRI_GRPC}' keeps the runtimes table already under '{CRI_RUNTIME}' "
        "and drops runtimes ['nvidia']",
    )
    # 2.3+: each file is migrated on its own, then deep-merged.
    assert emulate(files, (2, 3, 0)).runtimes == {"runc", "kata", "nvidia"}


def test_2x_v1_config_runtimes_ignored_before_2_3() -> None:
    main = "[plugins.cri.containerd.runtimes.nvidia]\n  runtime_type = \"io.containerd.runc.v2\"\n"
    old = emulate({MAIN: main}, (2, 1, 4))
    assert old.runtimes == {"runc"}
    assert old.problems == (
        f"runtimes under plugins.'{CRI_GRPC}' are ignored by containerd 2.x "
        f"(config version 3 reads them from '{CRI_RUNTIME}')",
    )
    assert emulate({MAIN: main}, (2, 3, 0)).runtimes == {"runc", "nvidia"}


def test_2_3_refuses_dropin_newer_than_main() -> None:
    dropin = f'version = 3\n[plugins."{CRI_RUNTIME}".containerd.runtimes.kata]\n'
    result = emulate({MAIN: MAIN_V2, ZZ: dropin}, (2, 3, 1))
    assert result.load_error == (
        f"{ZZ}: drop-in config version 3 higher than root config version 2"
    )
    assert result.runtimes == frozenset()
    assert emulate({MAIN: MAIN_V2, ZZ: dropin}, (2, 2, 0)).load_error is None


def test_2x_empty_runtimes_table_keeps_runc_and_slices_dedupe() -> None:
    main = ('version = 3\ndisabled_plugins = ["io.containerd.snapshotter.v1.aufs"]\n'
            'imports = ["conf.d/a.toml"]\n'
            f'[plugins."{CRI_RUNTIME}".containerd.runtimes]\n')
    dropin = 'disabled_plugins = ["io.containerd.snapshotter.v1.aufs"]\n'
    result = emulate({MAIN: main, "/etc/containerd/conf.d/a.toml": dropin}, (2, 1, 0))
    assert result.runtimes == {"runc"}
    assert result.config["disabled_plugins"] == ["io.containerd.snapshotter.v1.aufs"]


# --------------------------------------------------------------------------- imports


def test_glob_order_is_bytewise_and_matches_dot_files() -> None:
    names = ["b.toml", "Z.toml", ".hidden.toml", "99-nvidia.toml", "999.toml", "a.txt"]
    files = {f"/etc/containerd/conf.d/{n}": "" for n in names}
    files[MAIN] = MAIN_V2
    result = emulate(files, V1_7)
    assert result.load_order == (
        MAIN,
        "/etc/containerd/conf.d/.hidden.toml",
        "/etc/containerd/conf.d/99-nvidia.toml",
        "/etc/containerd/conf.d/999.toml",
        "/etc/containerd/conf.d/Z.toml",
        "/etc/containerd/conf.d/b.toml",
    )


@pytest.mark.parametrize(("pattern", "expected"), [
    ("conf.d/[0-9]*.toml", ("10.toml", "99.toml")),
    ("conf.d/[^0-9]*.toml", ("a.toml",)),
    ("conf.d/?0*.toml", ("10.toml",)),
    ("*/[a9]*.toml", ("99.toml", "a.toml")),
    ("conf.d/\\a*.toml", ("a.toml",)),
])
def test_glob_classes(pattern: str, expected: tuple[str, ...]) -> None:
    files = {f"/etc/containerd/conf.d/{n}": "" for n in ("10.toml", "99.toml", "a.toml")}
    files[MAIN] = f"version = 2\nimports = ['/etc/containerd/{pattern}']\n"
    result = emulate(files, V1_7)
    assert result.load_order == (MAIN, *(f"/etc/containerd/conf.d/{n}" for n in expected))


def test_pattern_without_star_is_a_plain_path() -> None:
    """containerd globs only imports that contain ``*`` (checked on 1.6.20)."""
    files = {MAIN: "imports = ['/etc/containerd/conf.d/?0.toml']\n",
             "/etc/containerd/conf.d/10.toml": ""}
    result = emulate(files, V1_6)
    assert result.load_error == (
        "/etc/containerd/conf.d/?0.toml: imported but not among the copied files"
    )


def test_malformed_glob_stops_containerd() -> None:
    result = emulate({MAIN: 'imports = ["/etc/containerd/conf.d/[*.toml"]\n'}, V1_7)
    assert result.load_error == (
        f"{MAIN}: import '/etc/containerd/conf.d/[*.toml' is not a valid glob pattern"
    )
    assert result.runtimes == frozenset()


def test_glob_matching_a_directory_stops_containerd() -> None:
    files = {MAIN: MAIN_V2, "/etc/containerd/conf.d/old.toml/x.toml": ""}
    result = emulate(files, V1_6)
    assert result.load_error == (
        "/etc/containerd/conf.d/old.toml: is a directory, not a config file"
    )


def test_missing_explicit_import_stops_containerd() -> None:
    main = 'version = 2\nimports = ["/etc/containerd/conf.d/99-nvidia.toml"]\n'
    result = emulate({MAIN: main}, V1_6)
    assert result.load_error == f"{NVIDIA}: imported but not among the copied files"
    assert result.problems == (f"containerd would not start: {result.load_error}",)
    assert result.runtimes == frozenset()
    assert result.load_order == (MAIN,)


def test_missing_glob_import_is_fine() -> None:
    result = emulate({MAIN: MAIN_V2}, V1_6)
    assert (result.load_order, result.runtimes, result.load_error) == ((MAIN,), {"runc"}, None)


def test_duplicate_and_circular_imports_load_once_breadth_first() -> None:
    a = "/etc/containerd/conf.d/a.toml"
    b = "/etc/containerd/conf.d/b.toml"
    extra = "/etc/containerd/extra/x.toml"
    files = {
        MAIN: f'imports = ["{b}", "conf.d/a.toml", "./conf.d/a.toml"]\n',
        a: 'imports = ["../config.toml", "a.toml"]\n',
        b: 'imports = ["../extra/x.toml", "b.toml"]\n',
        extra: 'imports = ["/etc/containerd/conf.d/*.toml"]\n',
    }
    assert emulate(files, V1_6).load_order == (MAIN, b, a, extra)


def test_relative_glob_follows_the_release() -> None:
    main = 'version = 2\nimports = ["conf.d/*.toml"]\n'
    files = {MAIN: main, NVIDIA: NVIDIA_DROPIN}
    # Before 1.6.29 / 1.7.16 a relative glob is relative to the working directory.
    assert emulate(files, V1_6).load_order == (MAIN,)
    assert emulate(files, V1_6, cwd="/etc/containerd").load_order == (MAIN, NVIDIA)
    assert emulate(files, (1, 6, 29)).load_order == (MAIN, NVIDIA)
    assert emulate(files, V1_7).load_order == (MAIN, NVIDIA)
    assert emulate(files, (1, 7, 15)).load_order == (MAIN,)


def test_main_config_missing_means_defaults() -> None:
    result = emulate({NVIDIA: NVIDIA_DROPIN}, V1_7)
    assert result.load_order == ()
    assert result.runtimes == {"runc"}
    assert result.load_error is None
    assert result.problems == (
        f"{MAIN}: main config not among the copied files; containerd started without "
        "--config runs on its built-in defaults",
    )


# --------------------------------------------------------------------------- versions 1 / 2


def test_version_1_reads_short_plugin_names() -> None:
    main = 'imports = ["conf.d/*.toml"]\n[plugins.cri.containerd.runtimes.nvidia]\n'
    assert emulate({MAIN: main}, V1_7).runtimes == {"nvidia"}


def test_version_1_ignores_full_uri() -> None:
    main = f'[plugins."{CRI_GRPC}".containerd.runtimes.nvidia]\n'
    result = emulate({MAIN: main}, V1_7)
    assert result.runtimes == {"runc"}
    assert result.problems == (
        "config version 1 is deprecated: plugins are read by short name (plugins.cri), "
        "full plugin URIs are ignored",
        f"version 1 config: plugins.'{CRI_GRPC}' is ignored; containerd 1.x reads plugins.cri",
    )


def test_short_name_in_a_version_2_config_stops_containerd() -> None:
    dropin = "[plugins.cri.containerd.runtimes.nvidia]\n"
    result = emulate({MAIN: MAIN_V2, NVIDIA: dropin}, V1_6)
    assert result.load_error == "invalid plugin key URI 'cri' expect io.containerd.x.vx"
    assert result.runtimes == frozenset()


def test_version_in_a_dropin_makes_the_merge_version_2() -> None:
    main = 'imports = ["/etc/containerd/conf.d/*.toml"]\n'
    assert emulate({MAIN: main, NVIDIA: NVIDIA_DROPIN}, V1_6).runtimes == {"nvidia"}


def test_version_3_on_1x() -> None:
    main = f'version = 3\n[plugins."{CRI_GRPC}".containerd.runtimes.kata]\n'
    assert emulate({MAIN: main}, V1_6).runtimes == {"kata"}  # read as 2
    refused = emulate({MAIN: main}, V1_7)
    assert refused.load_error == "unsupported config version `3` (1.x reads 1 or 2)"


def test_1_7_requires_io_containerd_prefix() -> None:
    main = 'version = 2\n[plugins."com.example.foo.bar"]\n x = 1\n'
    assert emulate({MAIN: main}, V1_6).load_error is None
    assert emulate({MAIN: main}, V1_7).load_error == (
        "invalid plugin key URI 'com.example.foo.bar' expect io.containerd.x.vx"
    )


# --------------------------------------------------------------------------- merge details


def test_top_level_zero_does_not_override_and_slices_append() -> None:
    main = ('version = 2\noom_score = -999\nroot = "/data"\n'
            'disabled_plugins = ["io.containerd.snapshotter.v1.aufs"]\n'
            'imports = ["/etc/containerd/conf.d/*.toml"]\n'
            '[grpc]\n  address = "/run/a.sock"\n')
    dropin = ('oom_score = 0\nroot = ""\n'
              'disabled_plugins = ["io.containerd.snapshotter.v1.aufs"]\n'
              '[grpc]\n  address = ""\n  uid = 5\n'
              '[timeouts]\n  "io.containerd.timeout.shim.cleanup" = "5s"\n')
    result = emulate({MAIN: main, ZZ: dropin}, V1_6)
    config = result.config
    assert config["oom_score"] == -999
    assert config["root"] == "/data"
    assert config["grpc"] == {"address": "/run/a.sock", "uid": 5}
    assert config["disabled_plugins"] == ["io.containerd.snapshotter.v1.aufs"] * 2
    assert config["timeouts"] == {"io.containerd.timeout.shim.cleanup": "5s"}
    assert config["imports"] == [MAIN, ZZ]  # 1.x lists the files loaded


def test_cri_disabled_leaves_no_runtime() -> None:
    main = f'version = 2\ndisabled_plugins = ["{CRI_GRPC}"]\n'
    result = emulate({MAIN: main}, V1_7)
    assert result.runtimes == frozenset()
    assert result.problems == (
        f"the CRI plugin ({CRI_GRPC}) is disabled: no CRI runtimes load",
    )


def test_empty_runtimes_table_removes_runc_on_1x() -> None:
    main = f'version = 2\n[plugins."{CRI_GRPC}".containerd.runtimes]\n'
    assert emulate({MAIN: main}, V1_6).runtimes == frozenset()
    main = f'version = 2\n[plugins."{CRI_GRPC}".containerd]\n  snapshotter = "native"\n'
    assert emulate({MAIN: main}, V1_6).runtimes == {"runc"}


def test_unparsable_file_is_a_problem_not_an_exception() -> None:
    result = emulate({MAIN: MAIN_V2, ZZ: '[plugins."io.containerd.grpc.v1.cri"\n'}, V1_6)
    assert result.load_error is not None
    assert result.load_error.startswith(f"{ZZ}: not valid TOML (")
    assert result.load_order == (MAIN,)
    assert result.runtimes == frozenset()


def test_wrong_types_stop_containerd() -> None:
    result = emulate({MAIN: 'imports = "/etc/containerd/conf.d/*.toml"\n'}, V1_7)
    assert result.load_error == f"{MAIN}: `imports` must be an array of strings"
    result = emulate({MAIN: 'version = "2"\n'}, V1_7)
    assert result.load_error == f"{MAIN}: `version` must be int, got '2'"


def test_unknown_version_is_guessed_and_said() -> None:
    files = {MAIN: MAIN_V2, NVIDIA: NVIDIA_DROPIN, ZZ: REGISTRY_DROPIN}
    result = emulate(files, None)
    assert result.problems == ("containerd version unknown: emulating containerd 1.7.27",)
    assert [c.lost_runtimes for c in result.clobbers] == [("nvidia",)]
    v3 = emulate({MAIN: "version = 3\n"}, None)
    assert v3.problems == (
        "containerd version unknown: emulating containerd 2.2.0 (a file declares version 3)",
    )


# --------------------------------------------------------------------------- runtimes_in


def test_runtimes_in_dumps_and_files() -> None:
    dump_1x = {"version": 2, "plugins": {CRI_GRPC: {"containerd": {"runtimes": {
        "runc": {}, "nvidia": {}}}}}}
    dump_2x = {"version": 3, "plugins": {
        CRI_GRPC: {"disable_tcp_service": True},
        CRI_RUNTIME: {"containerd": {"runtimes": {"runc": {}, "nvidia-cdi": {}}}},
    }}
    v1_file = {"plugins": {"cri": {"containerd": {"runtimes": {"kata": {}}}}}}
    assert runtimes_in(dump_1x) == {"runc", "nvidia"}
    assert runtimes_in(dump_2x) == {"runc", "nvidia-cdi"}
    assert runtimes_in(v1_file) == {"kata"}
    assert runtimes_in({}) == frozenset()
    assert runtimes_in({"plugins": {CRI_GRPC: {"containerd": {"runtimes": "x"}}}}) == frozenset()


# --------------------------------------------------------------------------- versions


@pytest.mark.parametrize(("text", "expected"), [
    ("containerd github.com/containerd/containerd v1.7.27 "
     "05044ec0a9a75232cad458027ca83437aae3f4da", (1, 7, 27)),
    ("containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3", (1, 6, 20)),
    ("containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da", (1, 7, 27)),
    ("containerd github.com/containerd/containerd/v2 v2.0.0 "
     "207ad711eabd375a01713109a8a197d197ff6542", (2, 0, 0)),
    ("containerd github.com/containerd/containerd/v2 v2.1.0-rc.1 abc", (2, 1, 0)),
    ("containerd github.com/k3s-io/containerd v1.7.23-k3s2 \n", (1, 7, 23)),
    ("containerd github.com/containerd/containerd 1.7.12 ", (1, 7, 12)),
    ("WARN[0000] something\ncontainerd github.com/containerd/containerd v1.6.33 d2d58213",
     (1, 6, 33)),
    ("v2.2.1\n", (2, 2, 1)),
    ("containerd: command not found", None),
    ("", None),
])
def test_parse_version(text: str, expected: tuple[int, int, int] | None) -> None:
    assert containerd(text) == expected


# --------------------------------------------------------------------------- corrected drop-in


def test_corrected_dropin_for_the_domain_case() -> None:
    files = {MAIN: MAIN_V2, NVIDIA: NVIDIA_DROPIN, ZZ: REGISTRY_DROPIN}
    [clobber] = emulate(files, V1_6).clobbers
    text = corrected_dropin(files, clobber)
    assert "# written by nvidia-container-toolkit" in text
    assert "# registry mirrors live in certs.d" in text
    assert text.startswith(f"# Written by gpu-triage: {ZZ} replaced the whole\n")
    assert f"# Install it as {ZZ} and delete {NVIDIA}.\n" in text
    assert tomllib.loads(text) == {
        "version": 2,
        "plugins": {CRI_GRPC: {
            "containerd": {
                "default_runtime_name": "nvidia",
                "runtimes": {"nvidia": {
                    "runtime_type": "io.containerd.runc.v2",
                    "options": {
                        "BinaryName": "/usr/local/nvidia/toolkit/nvidia-container-runtime"},
                }},
            },
            "registry": {"config_path": "/etc/containerd/certs.d"},
        }},
    }
    repaired = emulate({MAIN: MAIN_V2, ZZ: text}, V1_6)
    assert repaired.runtimes == {"nvidia"}
    assert repaired.clobbers == ()


def test_corrected_dropin_when_main_was_clobbered() -> None:
    main = (MAIN_V2 + "oom_score = -999\n"
            f'[plugins."{CRI_GRPC}".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2"  # from the toolkit\n'
            '[plugins."io.containerd.internal.v1.opt"]\n  path = "/opt/x"\n')
    registry = 'version = 2\noom_score = 0\n' + REGISTRY_DROPIN
    files = {MAIN: main, ZZ: registry}
    [clobber] = emulate(files, V1_7).clobbers
    text = corrected_dropin(files, clobber)
    assert "# from the toolkit" in text
    assert f"# Install it as {ZZ}; keep {MAIN}.\n" in text
    assert tomllib.loads(text) == {
        "version": 2,
        "oom_score": 0,
        "plugins": {CRI_GRPC: {
            "containerd": {"runtimes": {"nvidia": {"runtime_type": "io.containerd.runc.v2"}}},
            "registry": {"config_path": "/etc/containerd/certs.d"},
        }},
    }


def test_corrected_dropin_keeps_top_level_semantics() -> None:
    earlier = 'version = 2\noom_score = -999\ndisabled_plugins = ["a.b.c.d"]\n'
    later = 'oom_score = 0\ndisabled_plugins = ["e.f.g.h"]\n[plugins."x.y.z.w"]\n  k = 1\n'
    files = {NVIDIA: earlier + NVIDIA_DROPIN.replace("version = 2\n", ""), ZZ: later}
    clobber = Clobber(file=ZZ, overridden=NVIDIA, plugin=CRI_GRPC, lost_runtimes=("nvidia",))
    data = tomllib.loads(corrected_dropin(files, clobber))
    assert data["oom_score"] == -999
    assert data["disabled_plugins"] == ["a.b.c.d", "e.f.g.h"]
    assert data["plugins"]["x.y.z.w"] == {"k": 1}
    assert "nvidia" in data["plugins"][CRI_GRPC]["containerd"]["runtimes"]


def test_corrected_dropin_with_out_of_order_tables_keeps_data_and_comments() -> None:
    earlier = (f'# toolkit\nversion = 2\n[plugins."{CRI_GRPC}".containerd.runtimes.nvidia]\n'
               'runtime_type = "io.containerd.runc.v2"\n'
               '[plugins."io.containerd.internal.v1.opt"]\npath = "/opt/x"\n'
               f'[plugins."{CRI_GRPC}"]\nsandbox_image = "pause:3.9"\n')
    files = {NVIDIA: earlier, ZZ: REGISTRY_DROPIN}
    clobber = Clobber(file=ZZ, overridden=NVIDIA, plugin=CRI_GRPC, lost_runtimes=("nvidia",))
    text = corrected_dropin(files, clobber)
    assert "toolkit" in text and "registry mirrors live in certs.d" in text
    assert tomllib.loads(text)["plugins"] == {
        CRI_GRPC: {
            "sandbox_image": "pause:3.9",
            "containerd": {"runtimes": {"nvidia": {"runtime_type": "io.containerd.runc.v2"}}},
            "registry": {"config_path": "/etc/containerd/certs.d"},
        },
        "io.containerd.internal.v1.opt": {"path": "/opt/x"},
    }


def test_corrected_dropin_needs_both_files() -> None:
    clobber = Clobber(file=ZZ, overridden=NVIDIA, plugin=CRI_GRPC, lost_runtimes=("nvidia",))
    with pytest.raises(ValueError, match="is not among the files"):
        corrected_dropin({ZZ: REGISTRY_DROPIN}, clobber)
