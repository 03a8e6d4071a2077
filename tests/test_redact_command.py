"""`gpu-triage redact BUNDLE -o OUT`: an existing bundle redacted again, analysed the same.

The shipped samples hold no secret: redacted, each analyses to exactly the same findings and
rule results. A sample with secrets planted in the places an older collector left them (pod
env values, a Helm proxy URL, a TOML multi-line password, a journal line) loses every one of
them, and still analyses to the same findings. must-gather and troubleshoot trees
(samples/foreign_layouts.py) are redacted file by file, their layout kept.
"""

from __future__ import annotations

import json
import shutil
import stat
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from bundle import open_bundle
from gpu_triage.cli import cli
from samples.foreign_layouts import must_gather, troubleshoot

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CHOSEN = ["incident-toolkit-disabled", "k3s-toolkit-default-config",
          "openshift-crio-no-nvidia-handler", "rke2-template-go-directives",
          "microk8s-toolkit-edits-generated-config", "k0s-toolkit-default-paths",
          "hgx-nvswitch-sxid", "helm-dropped-values", "driver-upgrade-failed", "mig-mixed",
          "sched-taint"]


def run_redact(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["redact", *args])
    return result.exit_code, result.output


def outcome(path: Path) -> tuple[list[tuple], list[tuple]]:
    with open_bundle(path) as bundle:
        report = analyze(bundle, discover().rules)
    findings = sorted((f.id, f.rule_id, f.severity.value, f.summary, tuple(f.nodes),
                       tuple(json.dumps(e.model_dump(), sort_keys=True) for e in f.evidence))
                      for f in report.findings)
    rules = sorted((r.rule_id, r.status.value, r.reason) for r in report.rules)
    return findings, rules


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as archive:
        return {m.name: archive.extractfile(m).read() for m in archive if m.isfile()}


@pytest.mark.parametrize("name", CHOSEN)
def test_a_sample_without_secrets_analyses_the_same(name: str, tmp_path: Path) -> None:
    out = tmp_path / "redacted.tgz"
    code, text = run_redact(str(SAMPLES / name), "-o", str(out))
    assert code == 0, text
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert outcome(out) == outcome(SAMPLES / name)
    names = list(members(out))
    assert names[0] == "redacted/manifest.json"
    # a .tgz in: the same again, nothing more to redact
    again = tmp_path / "again.tgz"
    code, text = run_redact(str(out), "-o", str(again))
    assert code == 0 and "0 values redacted" in text, text
    assert outcome(again) == outcome(out)


PLANTED = {
    "pod-env": "PLANTEDpodenvSecret77",
    "proxy": "PLANTEDproxyPw88",
    "toml": "PLANTED-multiline-registry-pw",
    "journal": "ghp_PLANTED0123456789abcdefghijABCDEFGHIJ",
    "custom": "ACME-INTERNAL-PROJECT-ORION",
    "custom-re": "case-20261206-4711",
}


def _plant(root: Path) -> None:
    pods_path = root / "cluster" / "pods.json"
    pods = json.loads(pods_path.read_text())
    container = pods["items"][0]["spec"]["containers"][0]
    container.setdefault("env", []).append({"name": "DATABASE_PASSWORD",
                                            "value": PLANTED["pod-env"]})
    container["env"].append({"name": "HTTPS_PROXY",
                             "value": f"http://svc:{PLANTED['proxy']}@proxy.corp:3128"})
    container["env"].append({"name": "PROJECT", "value": PLANTED["custom"]})
    pods_path.write_text(json.dumps(pods, indent=1))
    node = sorted((root / "nodes").iterdir())[0]
    dropin = node / "containerd" / "files" / "etc" / "containerd" / "conf.d" / "50-reg.toml.bak"
    dropin.parent.mkdir(parents=True, exist_ok=True)
    dropin.write_text('[plugins."io.containerd.grpc.v1.cri".registry.configs."r.example".auth]\n'
                      f'  password = """\n{PLANTED["toml"]}\n"""\n')
    journal = node / "journal" / "kubelet.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    with journal.open("a") as handle:
        handle.write(json.dumps({"MESSAGE": f"git clone https://{PLANTED['journal']}@github.com"
                                            f"/x/y ticket {PLANTED['custom-re']}"}) + "\n")


def test_planted_secrets_go_and_the_findings_stay(tmp_path: Path) -> None:
    root = tmp_path / "sample"
    shutil.copytree(SAMPLES / "incident-toolkit-disabled", root)
    _plant(root)
    patterns = tmp_path / "mine.txt"
    patterns.write_text(f"# our project name\n{PLANTED['custom']}\n\nregex:case-\\d{{8}}-\\d+\n")
    out = tmp_path / "out.tgz"
    code, text = run_redact(str(root), "-o", str(out), "--redact-file", str(patterns))
    assert code == 0, text
    for name, data in members(out).items():
        for secret in PLANTED.values():
            assert secret.encode() not in data, (secret, name)
    assert "customer-pattern 2" in text and "url-userinfo 2" in text
    assert outcome(out) == outcome(root)
    manifest = json.loads(members(out)["out/manifest.json"])
    assert manifest["redaction"]["reapplied"]["custom_patterns"] == 2
    assert manifest["redaction"]["reapplied"]["kinds"]["key-name"] >= 2
    # the drop-in still parses, as TOML, with its password gone
    import tomllib

    dropins = [d for n, d in members(out).items() if n.endswith("50-reg.toml.bak")]
    parsed = tomllib.loads(dropins[0].decode())
    auth = parsed["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["configs"]["r.example"]
    assert auth["auth"]["password"] == "<redacted>"


@pytest.mark.parametrize("layout", [must_gather, troubleshoot])
def test_foreign_layouts_keep_their_layout(layout, tmp_path: Path) -> None:
    root = tmp_path / "src"
    shutil.copytree(SAMPLES / "incident-toolkit-disabled", root)
    _plant(root)
    tree = tmp_path / "tree"
    tree.mkdir()
    layout(root, tree)
    out = tmp_path / "tree-redacted.tgz"
    code, text = run_redact(str(tree), "-o", str(out))
    assert code == 0, text
    for name, data in members(out).items():
        for key in ("pod-env", "proxy"):
            assert PLANTED[key].encode() not in data, (key, name)
    with open_bundle(out) as redacted, open_bundle(tree) as original:
        assert redacted.layout == original.layout
    assert outcome(out) == outcome(tree)


def test_bad_redact_file_and_a_link_as_output(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("regex:([unclosed\n")
    code, text = run_redact(str(SAMPLES / "mig-mixed"), "-o", str(tmp_path / "o.tgz"),
                            "--redact-file", str(bad))
    assert code == 2 and "bad.txt:1: not a regular expression" in text
    link = tmp_path / "link.tgz"
    link.symlink_to(tmp_path / "elsewhere")
    code, text = run_redact(str(SAMPLES / "mig-mixed"), "-o", str(link))
    assert code == 2 and "symbolic link" in text and not (tmp_path / "elsewhere").exists()
    code, text = run_redact(str(tmp_path / "missing"), "-o", str(tmp_path / "o.tgz"))
    assert code == 3 and "cannot read bundle" in text
