"""Tests for the known-error signature knowledge base and its matcher."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.knowledge import packaged
from analyzers.knowledge import signatures as sigs
from analyzers.knowledge.signatures import Example, Signature, SignatureMatch

ALL = sigs.load()
BY_ID = {s.id: s for s in ALL}
CATALOG_RULE = re.compile(
    r"^(RT0(0[1-9]|1[0-5])|SC00[1-7]|OP0(0[1-9]|1[0-7])|DRV0(0[1-9]|10)|CFG00[1-4]|HELM00[12]"
    r"|BND00[12])$"
)


def _examples() -> Iterator[tuple[Signature, Example]]:
    for signature in ALL:
        for example in signature.examples:
            yield signature, example


EXAMPLES = list(_examples())
EXAMPLE_IDS = [f"{s.id}#{i}" for s in ALL for i, _ in enumerate(s.examples, start=1)]


# ----------------------------------------------------------------- the data itself


def test_knowledge_base_size_and_unique_ids() -> None:
    assert 35 <= len(ALL) <= 120  # a sanity range: a lost table or a duplicated file
    assert len(BY_ID) == len(ALL)


def test_required_coverage_is_present() -> None:
    """The diagnoses the brief asks for each have at least one signature."""
    wanted = {
        "sandbox-no-runtime",
        "sandbox-no-runtime-crio",
        "runtimeclass-not-found",
        "dp-nvml-missing",
        "dp-nvml-init-failed",
        "dp-retrieving-plugins",
        "dp-xid-unhealthy",
        "kubelet-unexpected-admission-error",
        "kubelet-allocate-devices-unavailable",
        "sched-insufficient-gpu",
        "quota-exceeded-gpu",
        "dp-shared-request-too-large",
        "validator-fabric-not-initialized",
        "validator-driver-not-ready",
        "validator-toolkit-not-ready",
        "validator-cuda-failed",
        "toolkit-restart-runtime-failed",
        "toolkit-runtime-config-failed",
        "driver-image-pull-failed",
        "driver-kernel-version-unresolved",
        "kernel-gpu-claimed-by-other-driver",
        "dcgm-exporter-hostengine-unreachable",
        "fm-driver-version-mismatch",
        "nvml-driver-library-mismatch",
        "cdi-unresolvable-devices",
        "mig-manager-config-failed",
    }
    assert wanted <= set(BY_ID)


@pytest.mark.parametrize("signature", ALL, ids=[s.id for s in ALL])
def test_signature_metadata(signature: Signature) -> None:
    assert signature.component in sigs.COMPONENTS
    assert signature.kind in sigs.KINDS
    assert signature.rules and all(CATALOG_RULE.match(r) for r in signature.rules), signature.rules
    assert signature.reference.startswith("https://")
    assert signature.title.strip() and signature.explanation.strip()
    assert signature.remediation.strip() and signature.versions.strip()
    # Built-in signatures always declare a prefilter needle (user files may omit it).
    assert signature.needles
    assert all(n == n.lower() for n in signature.needles)
    if signature.containers:
        assert "log" in signature.sources


@pytest.mark.parametrize(("signature", "example"), EXAMPLES, ids=EXAMPLE_IDS)
def test_example_matches_its_signature(signature: Signature, example: Example) -> None:
    assert example.input in signature.sources
    found = sigs.match(example.text, example.input, container=example.container)
    assert signature.id in {m.signature.id for m in found}, example.text
    # The needle prefilter must not hide the example.
    assert any(n in example.text.lower() for n in signature.needles)


@pytest.mark.parametrize(("signature", "example"), EXAMPLES, ids=EXAMPLE_IDS)
def test_example_source_is_recorded(signature: Signature, example: Example) -> None:
    assert example.source.startswith("https://")
    assert len(example.source) > len("https://x.y/")
    assert " " not in example.source


@pytest.mark.parametrize(("signature", "example"), EXAMPLES, ids=EXAMPLE_IDS)
def test_no_undeclared_cross_component_match(signature: Signature, example: Example) -> None:
    found = sigs.match(example.text, example.input, container=example.container)
    strays = {
        m.signature.id
        for m in found
        if m.signature.component != signature.component
        and m.signature.id not in signature.also_matches
    }
    assert not strays, f"{signature.id} example also matches {sorted(strays)}: {example.text!r}"


@pytest.mark.parametrize(
    "signature", [s for s in ALL if s.also_matches], ids=[s.id for s in ALL if s.also_matches]
)
def test_declared_cross_matches_are_real(signature: Signature) -> None:
    """An also_matches entry must be exercised by at least one example (no stale claims)."""
    hits: set[str] = set()
    for example in signature.examples:
        hits |= {
            m.signature.id
            for m in sigs.match(example.text, example.input, container=example.container)
        }
    assert set(signature.also_matches) <= hits


@pytest.mark.parametrize(
    "signature", [s for s in ALL if s.negatives], ids=[s.id for s in ALL if s.negatives]
)
def test_signature_negatives(signature: Signature) -> None:
    for line in signature.negatives:
        for source in signature.sources:
            hits = {m.signature.id for m in sigs.match(line, source)}
            assert signature.id not in hits, line


def test_every_wording_variant_has_an_example() -> None:
    """Spot-check the multi-version signatures: each listed wording has its own example."""
    variants = {
        "sandbox-no-runtime": [
            "failed to get sandbox runtime",
            "unable to get OCI runtime for sandbox",
            '\\"nvidia\\"',
            "“nvidia”",
        ],
        "dp-nvml-missing": [
            "Detected non-NVML platform",
            "Incompatible platform detected",
            "Incompatible strategy detected",
            "Unsupported platform detected",
            "NVML not detected",
        ],
        "dp-retrieving-plugins": ["Retreiving", "Retrieving"],
        "dp-xid-unhealthy": ["marking device as unhealthy", "the device will go unhealthy"],
        "fm-driver-version-mismatch": ["don't", "doesn't", "don’t"],
        "kubelet-dp-listandwatch-ended": ["ListAndWatch ended", "listAndWatch ended"],
        "driver-image-pull-failed": ["manifest unknown", ": not found", "Back-off pulling"],
        "containerd-cri-plugin-load-failed": [
            "io.containerd.grpc.v1.cri",
            "id=io.containerd.cri.v1",
        ],
    }
    for sig_id, needles in variants.items():
        texts = [e.text for e in BY_ID[sig_id].examples]
        for needle in needles:
            assert any(needle in t for t in texts), (sig_id, needle)


def test_for_rule_and_get() -> None:
    rt001 = sigs.for_rule("RT001")
    assert {"sandbox-no-runtime", "sandbox-no-runtime-crio"} <= {s.id for s in rt001}
    assert all("RT001" in s.rules for s in rt001)
    assert "validator-fabric-not-initialized" in {s.id for s in sigs.for_rule("OP005")}
    assert sigs.for_rule("XX999") == ()
    assert sigs.get("dp-nvml-missing").component == "device-plugin"
    with pytest.raises(KeyError):
        sigs.get("no-such-signature")


def test_load_is_cached() -> None:
    assert sigs.load() is sigs.load()


def _packaged_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(packaged.DATA, copy)
    monkeypatch.setattr(packaged, "DATA", copy)
    return copy / "signatures.toml"


def test_load_reads_an_edited_toml_with_every_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toml = _packaged_copy(tmp_path, monkeypatch)
    text = toml.read_text(encoding="utf-8")
    old_title = 'title = "containerd has no runtime handler for the nvidia RuntimeClass"'
    toml.write_text(text.replace(old_title, 'title = "edited"', 1), encoding="utf-8")
    assert sigs.load.__wrapped__()[0].title == "edited"  # the TOML as it is now

    toml.write_text(text.replace('needle = "no runtime for"', 'needle = "nowhere"', 1),
                    encoding="utf-8")
    with pytest.raises(ValueError, match=r"analyzers/data/signatures\.toml: signature #1 .*"
                                         "not matched by its own pattern/needle"):
        sigs.load.__wrapped__()


def test_regexes_are_compiled_when_their_needle_hits() -> None:
    assert len(sigs.load()) == len(ALL)  # loading checks (so compiles) every pattern
    sigs._compiled.cache_clear()
    line = 'failed to get sandbox runtime: no runtime for "nvidia" is configured'
    assert [m.signature.id for m in sigs.match(line, "event")] == ["sandbox-no-runtime"]
    compiled = sigs._compiled.cache_info().currsize
    assert compiled == len(
        {s.pattern for s in ALL if "event" in s.sources and s.passes_prefilter(line.lower())})
    assert sigs.match("nothing known here", "event") == []
    assert sigs._compiled.cache_info().currsize == compiled


# ----------------------------------------------------------------- healthy lines

HEALTHY: list[tuple[str, str, str | None]] = [
    # device plugin (v0.14 - v0.20)
    (
        "I0121 12:04:24.655909       1 main.go:154] Starting FS watcher.",
        "log",
        "nvidia-device-plugin",
    ),
    (
        "I0819 07:02:54.756557       1 main.go:238] Starting FS watcher for"
        " /var/lib/kubelet/device-plugins",
        "log",
        "nvidia-device-plugin",
    ),
    (
        "I0121 12:04:24.658840       1 main.go:234] Loading configuration.",
        "log",
        "nvidia-device-plugin",
    ),
    (
        "I0121 12:04:24.666347       1 factory.go:107] Detected NVML platform: found NVML library",
        "log",
        "nvidia-device-plugin",
    ),
    (
        "I0417 07:12:59.758977       1 factory.go:107] Detected non-Tegra platform:"
        " /sys/devices/soc0/family file not found",
        "log",
        "nvidia-device-plugin",
    ),
    (
        "I0506 17:45:45.511854       1 server.go:198] Starting GRPC server for 'nvidia.com/gpu'",
        "log",
        "nvidia-device-plugin",
    ),
    (
        "I0506 17:45:45.515854       1 server.go:142] Starting to serve 'nvidia.com/gpu' on"
        " /var/lib/kubelet/device-plugins/nvidia-gpu.sock",
        "log",
        "nvidia-device-plugin",
    ),
    (
        "I0506 17:45:45.521854       1 server.go:149] Registered device plugin for"
        " 'nvidia.com/gpu' with Kubelet",
        "log",
        "nvidia-device-plugin",
    ),
    ("2023/02/19 20:54:54 Registered device plugin for 'nvidia.com/gpu' with Kubelet", "log", None),
    (
        "I0801 10:00:00.000000       1 health.go:159] Processing event"
        " {Device:{Handle:0x7e590d4986e8} EventType:8 EventData:13}",
        "log",
        "nvidia-device-plugin",
    ),
    (
        "W0801 10:00:00.000000       1 health.go:107] Device"
        " GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8 is too old to support healthchecking.",
        "log",
        None,
    ),
    # validator
    ("all validations are successful", "log", "nvidia-operator-validator"),
    (
        'time="2026-08-21T10:00:00Z" level=info msg="Detected a pre-installed driver on the host"',
        "log",
        "driver-validation",
    ),
    (
        'time="2026-08-21T10:00:00Z" level=info msg="Attempting to validate a driver container'
        ' installation"',
        "log",
        "driver-validation",
    ),
    ("cuda workload validation is successful", "log", "nvidia-cuda-validator"),
    ("device-plugin workload validation is successful", "log", None),
    # toolkit
    (
        'time="2026-08-21T10:00:09Z" level=info msg="Successfully signaled containerd"',
        "log",
        "nvidia-container-toolkit-ctr",
    ),
    (
        '''time="2026-08-21T10:00:09Z" level=info msg="Completed 'setup' for containerd"''',
        "log",
        "nvidia-container-toolkit-ctr",
    ),
    ('time="2026-08-21T10:00:01Z" level=info msg="Using config version 2"', "log", None),
    # driver container
    ("Loading NVIDIA driver kernel modules...", "log", "nvidia-driver-ctr"),
    ("Resolving Linux kernel version...", "log", "nvidia-driver-ctr"),
    ("Proceeding with Linux kernel version 5.15.0-100-generic", "log", "nvidia-driver-ctr"),
    ("Done, now waiting for signal", "log", "nvidia-driver-ctr"),
    # dcgm exporter
    (
        'time="2022-09-29T12:09:09Z" level=info msg="Starting dcgm-exporter"',
        "log",
        "nvidia-dcgm-exporter",
    ),
    (
        'time="2022-09-29T12:09:09Z" level=info msg="Attemping to connect to remote hostengine'
        ' at localhost:5555"',
        "log",
        "nvidia-dcgm-exporter",
    ),
    ('time="2021-05-08T13:03:29Z" level=info msg="DCGM successfully initialized!"', "log", None),
    # mig manager
    ("Selected MIG configuration is valid", "log", "nvidia-mig-manager"),
    ("MIG configuration applied successfully", "log", "nvidia-mig-manager"),
    (
        "Changing the 'nvidia.com/mig.config.state' node label to 'success'",
        "log",
        "nvidia-mig-manager",
    ),
    # operator
    (
        "ClusterPolicy is ready as all resources have been successfully reconciled",
        "log",
        "gpu-operator",
    ),
    # events
    (
        "Successfully assigned gpu-operator/nvidia-device-plugin-daemonset-w72xb to"
        " i-071a4e5a302e4025b",
        "event",
        None,
    ),
    (
        'Container image "nvcr.io/nvidia/k8s-device-plugin:v0.17.0" already present on machine',
        "event",
        None,
    ),
    (
        'Successfully pulled image "nvcr.io/nvidia/driver:550.90.07-ubuntu22.04" in 20.5s (20.5s'
        " including waiting)",
        "event",
        None,
    ),
    ('Pulling image "nvcr.io/nvidia/driver:550.90.07-ubuntu22.04"', "event", None),
    (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No"
        " preemption victims found for incoming pod.",
        "event",
        None,
    ),
    ("Started container nvidia-device-plugin", "event", None),
    # journals
    (
        'time="2024-03-31T11:55:16.149708885+08:00" level=info msg="loading plugin'
        ' \\"io.containerd.grpc.v1.cri\\"..." type=io.containerd.grpc.v1',
        "journal:containerd",
        None,
    ),
    (
        'time="2024-04-10T14:57:55.291345999Z" level=info msg="containerd successfully booted in'
        ' 0.051s"',
        "journal:containerd",
        None,
    ),
    ("Started containerd.service - containerd container runtime.", "journal:containerd", None),
    (
        'I1017 12:05:33.325133    1655 server.go:144] "Got registration request from device'
        ' plugin with resource" resourceName="nvidia.com/gpu"',
        "journal:kubelet",
        None,
    ),
    ("Starting NVIDIA fabric manager service...", "journal:nvidia-fabricmanager", None),
    # kernel
    (
        "[    6.252567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.148.06  Mon May  5"
        " 11:36:21 UTC 2025",
        "kernel",
        None,
    ),
    (
        "[70780.555776] nvidia-nvlink: Nvlink Core is being initialized, major device number 240",
        "kernel",
        None,
    ),
]


@pytest.mark.parametrize(("line", "source", "container"), HEALTHY, ids=[h[0][:60] for h in HEALTHY])
def test_healthy_lines_match_nothing(line: str, source: str, container: str | None) -> None:
    assert sigs.match(line, source, container=container) == []
    assert sigs.match(line, source) == []


# ----------------------------------------------------------------- matching behaviour


def test_match_on_multiline_log_reports_lines_and_spans() -> None:
    log = "\n".join(
        [
            "I0506 17:45:45.421854       1 main.go:356] Retrieving plugins.",
            "E0506 17:45:45.421956       1 factory.go:112] Incompatible strategy detected auto",
            "I0506 17:45:45.521854       1 server.go:149] Registered device plugin for"
            " 'nvidia.com/gpu' with Kubelet",
            "E0506 17:45:45.421956       1 factory.go:112] Incompatible strategy detected auto\r",
        ]
    )
    found = sigs.match(log, "log", container="nvidia-device-plugin")
    assert [(m.signature.id, m.line) for m in found] == [
        ("dp-retrieving-plugins", 1),
        ("dp-nvml-missing", 2),
        ("dp-nvml-missing", 4),
    ]
    first = found[1]
    assert isinstance(first, SignatureMatch)
    assert log[first.span[0] : first.span[1]].lower() == "incompatible strategy detected"
    assert first.text == log.splitlines()[1]
    assert not found[2].text.endswith("\r")


def test_source_and_container_filters() -> None:
    line = "E0506 17:45:45.421956       1 factory.go:112] Incompatible strategy detected auto"
    assert sigs.match(line, "event") == []
    assert sigs.match(line, "log", container="nvidia-dcgm-exporter") == []
    assert sigs.match(line, "log", container="nvidia-device-plugin-ctr")
    # Unknown container: restrictions cannot be checked, so the signature is still tried.
    assert sigs.match(line, "log", container=None)
    # Container globs do not narrow non-log sources.
    event = (
        "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox "
        'runtime: no runtime for "nvidia-cdi" is configured'
    )
    assert [m.signature.id for m in sigs.match(event, "event", container="whatever")] == [
        "sandbox-no-runtime"
    ]


def test_explicit_signature_subset() -> None:
    line = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    only = (sigs.get("quota-exceeded-gpu"),)
    assert sigs.match(line, "event", signatures=only) == []
    assert sigs.match(line, "event", signatures=()) == []


@pytest.mark.parametrize("bad", ["", None, b"Insufficient nvidia.com/gpu", 42])
def test_match_tolerates_odd_input(bad: object) -> None:
    assert sigs.match(bad, "event") == []  # type: ignore[arg-type]
    assert sigs.match("Insufficient nvidia.com/gpu", bad) == []  # type: ignore[arg-type]


SOURCES = [
    "event",
    "log",
    "kernel",
    "pod-status",
    "journal:containerd",
    "journal:kubelet",
    "journal:nvidia-fabricmanager",
    "journal:crio",
    "nonsense",
]
FRAGMENTS = sorted(
    {frag for s in ALL for e in s.examples for frag in re.split(r"(\W)", e.text) if frag}
)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(),
    source=st.sampled_from(SOURCES) | st.text(max_size=20),
    container=st.none() | st.text(max_size=30),
)
def test_match_never_raises_on_arbitrary_text(
    text: str, source: str, container: str | None
) -> None:
    result = sigs.match(text, source, container=container)
    for found in result:
        assert 0 <= found.span[0] < found.span[1] <= len(text)
        assert found.line >= 1


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(FRAGMENTS) | st.sampled_from(["\n", "\r\n", '"', "\\", "“"]), max_size=80
    ),
    source=st.sampled_from(SOURCES),
)
def test_match_never_raises_on_near_miss_text(parts: list[str], source: str) -> None:
    text = "".join(parts)
    for found in sigs.match(text, source):
        start, end = found.span
        assert found.signature.regex.fullmatch(text[start:end])
        assert "\n" not in found.text


def test_large_and_hostile_inputs_are_fast() -> None:
    healthy = "\n".join(h[0] for h in HEALTHY)
    big_log = "\n".join([healthy] * 400)  # ~17k lines
    hostile = [
        "failed to load plugin " * 5000,
        "Allocate failed due to " * 5000,
        "GRPC server for '" * 5000,
        "NVRM: Xid (PCI:0000:01:00" * 5000,
        "exceeded quota: a, requested: " * 5000,
        "no runtime for " + "nvidia" * 50000,
        "Failed to pull image " + "a" * 400000,
    ]
    start = time.perf_counter()
    for source in ("log", "event", "kernel", "journal:containerd", "journal:kubelet"):
        assert sigs.match(big_log, source) == []
        for text in hostile:
            sigs.match(text, source)
    assert time.perf_counter() - start < 10.0


# ----------------------------------------------------------------- user files and validation

USER_TOML = """
schema_version = 1

[[signature]]
id = "site-gpu-burnin-failed"
component = "driver"
title = "Site burn-in job reports a bad GPU"
pattern = 'burn-?in FAILED on GPU \\d+'
needle = "burn"
sources = ["log"]
containers = ["burnin*"]
versions = "internal burn-in tool >= 2.0"
rules = ["DRV006"]
explanation = "Our burn-in job found a GPU that fails the stress test."
remediation = "kubectl logs -n ops job/burnin"
reference = "https://example.com/runbooks/burnin"
also_matches = ["nvml-driver-library-mismatch"]
negatives = ["burn-in PASSED on GPU 3"]

[[signature.example]]
text = "2026-01-01 burn-in FAILED on GPU 3: Driver/library version mismatch"
source = "https://example.com/runbooks/burnin"
container = "burnin-runner"
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "extra.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_load_file_user_signatures(tmp_path: Path) -> None:
    extra = sigs.load_file(_write(tmp_path, USER_TOML))
    assert [s.id for s in extra] == ["site-gpu-burnin-failed"]
    combined = sigs.combine(sigs.load(), extra)
    line = "2026-01-01 burn-in FAILED on GPU 3: Driver/library version mismatch"
    ids = {
        m.signature.id
        for m in sigs.match(line, "log", container="burnin-runner", signatures=combined)
    }
    assert ids == {"site-gpu-burnin-failed", "nvml-driver-library-mismatch"}
    assert sigs.match(line, "log", container="other", signatures=extra) == []
    with pytest.raises(ValueError, match="duplicate signature id"):
        sigs.combine(extra, extra)


def test_load_file_accepts_the_packaged_file() -> None:
    shipped = packaged.DATA / "signatures.toml"
    assert [s.id for s in sigs.load_file(shipped)] == [s.id for s in ALL]


PATTERN_LINE = next(line for line in USER_TOML.splitlines() if line.startswith("pattern"))

BROKEN = [
    (PATTERN_LINE, "pattern = 'burn-(in'", "does not compile"),
    (PATTERN_LINE, "pattern = 'x*'", "matches the empty string"),
    ('component = "driver"', 'component = "gpu-fairy"', "unknown component"),
    ('sources = ["log"]', 'sources = ["log", "syslog"]', "unknown source"),
    ('rules = ["DRV006"]', 'rules = ["drv6"]', "malformed rule"),
    ('needle = "burn"', 'needle = "BURN"', "lower case"),
    ('needle = "burn"', 'needle = "gpu burned"', "not matched by its own pattern"),
    (
        'negatives = ["burn-in PASSED on GPU 3"]',
        'negatives = ["burn-in FAILED on GPU 4"]',
        "negative line is matched",
    ),
    (
        'reference = "https://example.com/runbooks/burnin"',
        'reference = "http://example.com"',
        "https://",
    ),
    ('source = "https://example.com/runbooks/burnin"', 'source = ""', "'source' must be"),
    ('container = "burnin-runner"', 'container = "other"', "not matched by its own pattern"),
    (
        'title = "Site burn-in job reports a bad GPU"',
        'titel = "typo"',
        "missing required key(s) title",
    ),
    (
        'versions = "internal burn-in tool >= 2.0"',
        'versions = "x"\nseverity = "high"',
        "unknown key(s) severity",
    ),
    (
        'also_matches = ["nvml-driver-library-mismatch"]',
        'also_matches = ["no-such-id"]',
        "also_matches",
    ),
    ('id = "site-gpu-burnin-failed"', 'id = "Site_GPU"', "id must be"),
]


@pytest.mark.parametrize(("old", "new", "message"), BROKEN, ids=[b[2] for b in BROKEN])
def test_validation_errors_name_the_entry(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert old in USER_TOML, old
    path = _write(tmp_path, USER_TOML.replace(old, new, 1))
    with pytest.raises(ValueError) as caught:
        sigs.load_file(path)
    text = str(caught.value)
    assert message in text
    assert str(path) in text
    assert "signature #1" in text


def test_duplicate_ids_are_rejected(tmp_path: Path) -> None:
    body = USER_TOML.split("[[signature]]", 1)[1]
    path = _write(tmp_path, USER_TOML + "\n[[signature]]" + body)
    with pytest.raises(
        ValueError, match=r"signature #2 \(id='site-gpu-burnin-failed'\): duplicate id"
    ):
        sigs.load_file(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not = [valid", "not valid TOML"),
        ("schema_version = 2\n[[signature]]\nid='x'", "unsupported schema_version"),
        ("schema_version = 1\n", "expected one or more [[signature]]"),
        ("[[signature]]\nid = 'lonely-one'\n", "id='lonely-one'"),
    ],
)
def test_file_level_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        sigs.load_file(_write(tmp_path, text))


def test_parse_requires_examples() -> None:
    document = {
        "signature": [
            {
                "id": "no-examples",
                "component": "kernel",
                "title": "t",
                "pattern": "abc",
                "sources": ["kernel"],
                "versions": "v",
                "rules": ["DRV001"],
                "explanation": "e",
                "remediation": "r",
                "reference": "https://example.com",
                "example": [],
            }
        ]
    }
    with pytest.raises(ValueError, match=r"id='no-examples'.*at least one"):
        sigs.parse(document, "inline")
