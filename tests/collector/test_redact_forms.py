"""collectors/redact.py, form by form: every planted form goes, its negative twin stays, and
a file that parsed before redaction parses after it (JSON, TOML, YAML).

The module must run on the customer's python3 (3.8 or newer, standard library only): the same
corpus is redacted by a Python 3.8 interpreter where one is installed, with the same result.
"""

from __future__ import annotations

import ast
import glob
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from planted import FLAG_FORMS, FLAG_NEGATIVE, FORMS, TOML_NEGATIVE, toml_dropin

from collectors.redact import REDACTED, CustomPatterns, Redactor

REDACT_PY = Path(__file__).resolve().parents[2] / "collectors" / "redact.py"


# YAML key rules (block scalars, next-line values, env pairs) apply to config text, not logs.
CASES = [pytest.param(form, mode, id=f"{mode}-{form.name}") for form in FORMS
         for mode in ("config", "log") if mode == "config" or not form.name.startswith("yaml-")]


@pytest.mark.parametrize(("form", "mode"), CASES)
def test_each_form_goes_and_its_twin_stays(form, mode: str) -> None:
    secret, text = form.make("0042")
    redactor = Redactor(True)
    out = redactor.scrub(f"before {text} after", "x", strict=mode == "log") if "\n" not in text \
        else redactor.scrub(text, "x", strict=mode == "log")
    assert secret not in out and REDACTED in out, out
    # the form's own detector, or the key rule where the text also names the key
    assert redactor.kinds.get(form.detector, 0) + redactor.kinds.get("key-name", 0) >= 1, (
        redactor.kinds, form.detector)
    twin = Redactor(True)
    assert twin.scrub(form.negative, "x", strict=mode == "log") == form.negative
    assert twin.kinds == {}


def test_the_toml_forms_redacted_inside_the_structure() -> None:
    planted, text = toml_dropin("0007")
    before = tomllib.loads(text)
    redactor = Redactor(True)
    out = redactor.file("containerd/files/etc/containerd/conf.d/50-reg.toml.dpkg-old",
                        text.encode()).decode()
    after = tomllib.loads(out)  # still TOML
    for _form, secret in planted:
        assert secret not in out
    for negative in TOML_NEGATIVE:
        assert negative in out
    configs = after["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["configs"]
    assert configs["a.example"]["auth"]["password"] == REDACTED
    assert configs["b.example"]["auth"]["identitytoken"] == REDACTED
    assert configs["c.example"]["auth"]["auth"] == REDACTED
    assert configs["d.example"]["auth"]["password"] == REDACTED
    assert configs["e.example"]["auth"] == {"username": "bot", "password": REDACTED}
    assert redactor.kinds == {"key-name": 5}
    # everything else is the same structure
    before_configs = before["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["configs"]
    assert set(before_configs) == set(configs)
    assert after["plugins"]["io.containerd.grpc.v1.cri"]["containerd"] == \
        before["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]


def test_a_template_falls_back_to_lines_and_keeps_its_directives() -> None:
    planted, text = toml_dropin("0008")
    template = '{{ template "base" . }}\n' + text + '{{ if .NodeConfig }}x = {{ .Y }}{{ end }}\n'
    out = Redactor(True).file("containerd/files/x/config.toml.tmpl", template.encode()).decode()
    for _form, secret in planted:
        assert secret not in out
    assert out.startswith('{{ template "base" . }}\n')
    assert "{{ if .NodeConfig }}x = {{ .Y }}{{ end }}" in out
    for negative in TOML_NEGATIVE:
        assert negative in out


def test_json_and_yaml_files_still_parse() -> None:
    redactor = Redactor(True)
    for form in FORMS:
        secret, text = form.make("0009")
        if text.startswith("{"):
            out = redactor.file("cdi/x.json", text.encode()).decode()
            assert json.loads(out) is not None and secret not in out
        elif "\n" in text and isinstance(yaml.safe_load(text), dict):
            before = yaml.safe_load(text)
            out = redactor.file("cdi/x.yaml", text.encode()).decode()
            after = yaml.safe_load(out)
            assert secret not in out and set(after) == set(before), (form.name, out)
    daemon = {"proxies": {"http-proxy": "http://u:PLANTEDdaemon@proxy:3128",
                          "no-proxy": "localhost"}, "runtimes": {"nvidia": {"path": "x"}}}
    out = json.loads(redactor.file("docker/files/etc/docker/daemon.json",
                                   json.dumps(daemon).encode()))
    assert out["proxies"] == {"http-proxy": f"http://u:{REDACTED}@proxy:3128",
                              "no-proxy": "localhost"}
    assert out["runtimes"] == daemon["runtimes"]


def test_secret_flags_on_command_lines() -> None:
    line = " ".join(["/usr/local/bin/k3s agent", FLAG_NEGATIVE] +
                    [flag.format(s=f"PLANTEDflag{n}") for n, (_f, flag) in enumerate(FLAG_FORMS)])
    out = Redactor(True).file("host/kubelet.txt", f"==> process 1 k3s <==\n{line}\n".encode())
    assert out is not None and b"PLANTEDflag" not in out and FLAG_NEGATIVE.encode() in out
    # --kubelet-arg / --kube-apiserver-arg values: a secret-named argument loses its value,
    # a file argument keeps its path
    args = ("k3s agent --kubelet-arg=--token=PLANTEDka1 --kubelet-arg bootstrap-token=PLANTEDka2 "
            "--kube-apiserver-arg=oidc-client-secret=PLANTEDka3 "
            "--kube-apiserver-arg=service-account-key-file=/var/lib/sa.key\n")
    out = Redactor(True).file("host/kubelet.txt", args.encode())
    assert out == (b"k3s agent --kubelet-arg=--token=<redacted> --kubelet-arg "
                   b"bootstrap-token=<redacted> --kube-apiserver-arg=oidc-client-secret=<redacted> "
                   b"--kube-apiserver-arg=service-account-key-file=/var/lib/sa.key\n")
    # -t is only k3s/RKE2/MicroK8s' short --token; elsewhere it stays
    assert Redactor(True).scrub("docker run -t ubuntu", "x") == "docker run -t ubuntu"
    # a path-valued flag names a place
    assert Redactor(True).scrub("k0s worker --token-file=/etc/k0s/k0stoken", "x") == \
        "k0s worker --token-file=/etc/k0s/k0stoken"


def test_logs_keep_their_evidence() -> None:
    lines = ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
             'E1201 kubelet.go:1] "x509: certificate signed by unknown authority" key="gpu"\n'
             "taint nvidia.com/gpu:NoSchedule key: nvidia.com/gpu\n"
             "image nvcr.io/nvidia/k8s-device-plugin:v0.17.0@sha256:0123abcd\n")
    assert Redactor(True).file("dmesg.txt", lines.encode()) == lines.encode()
    assert Redactor(True).file("logs/ns/pod/c.log", lines.encode()) == lines.encode()


def test_journal_lines_are_redacted_inside_their_json() -> None:
    line = json.dumps({"MESSAGE": 'pull "x" with password="PLANTEDj\\"x" from '
                                  "https://u:PLANTEDjournal@r.example", "PRIORITY": "3"})
    out = Redactor(True).file("journal/kubelet.jsonl", (line + "\n").encode()).decode()
    parsed = json.loads(out.splitlines()[0])
    assert "PLANTEDjournal" not in out and "PLANTEDj" not in out and parsed["PRIORITY"] == "3"


def test_binary_files_are_not_copied_but_logs_with_a_nul_are() -> None:
    assert Redactor(True).file("containerd/files/etc/containerd/conf.d/x.bin", b"a\x00b") is None
    assert Redactor(True).file("logs/ns/p/c.log", b"a\x00b") == b"a\x00b"


def test_customer_patterns() -> None:
    custom = CustomPatterns.parse("# ours\nProject Orion\nregex:case-\\d+\n\n", "mine.txt")
    redactor = Redactor(True, custom)
    assert redactor.scrub("Project Orion case-4711 ok", "x") == f"{REDACTED} {REDACTED} ok"
    assert redactor.kinds == {"customer-pattern": 2}
    with pytest.raises(ValueError, match="mine.txt:2: not a regular expression"):
        CustomPatterns.parse("ok\nregex:(\n", "mine.txt")


def _python38() -> str | None:
    found = shutil.which("python3.8")
    if found and subprocess.run([found, "-c", "pass"], capture_output=True).returncode == 0:
        return found
    versions = sorted(glob.glob("/root/.pyenv/versions/3.8*/bin/python3.8")) + sorted(
        glob.glob("/usr/bin/python3.8"))
    return versions[0] if versions else None


RUN_38 = """
import json, sys
sys.path.insert(0, sys.argv[1])
import redact
texts = json.load(sys.stdin)
r = redact.Redactor(True)
print(json.dumps([[r.scrub(t, "x"), r.scrub(t, "x", strict=True)] for t in texts]
                 + [r.file("containerd/files/d.toml", texts[0].encode()).decode()]))
"""


def test_the_module_is_python38_and_stdlib_only() -> None:
    source = REDACT_PY.read_text()
    tree = ast.parse(source, feature_version=(3, 8))
    modules = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}
    modules |= {node.module.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module}
    assert modules <= set(sys.stdlib_module_names) | {"__future__"}
    for banned in ("removeprefix", "removesuffix", "tomllib", "zoneinfo"):
        assert banned not in source, banned


def test_python38_redacts_the_same() -> None:
    python = _python38()
    if python is None:
        pytest.skip("no Python 3.8 interpreter here")
    texts = [toml_dropin("0010")[1]] + [f.make("0010")[1] for f in FORMS]
    proc = subprocess.run([python, "-c", RUN_38, str(REDACT_PY.parent)],
                          input=json.dumps(texts), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    redactor = Redactor(True)
    here = [[redactor.scrub(t, "x"), redactor.scrub(t, "x", strict=True)] for t in texts]
    here.append(redactor.file("containerd/files/d.toml", texts[0].encode()).decode())
    assert json.loads(proc.stdout) == here


@pytest.mark.parametrize("which", ["python3.8", "this python"])
def test_the_three_files_travel_together(which: str, tmp_path: Path) -> None:
    """collect.py run as a file imports its modules from beside it, and needs nothing else;
    one missing is named in one line (the one-file .pyz avoids the question)."""
    python = _python38() if which == "python3.8" else sys.executable
    if python is None:
        pytest.skip("no Python 3.8 interpreter here")
    loose = ("collect.py", "redact.py", "preflight.py", "fleet.py", "node.sh")
    for name in loose:
        shutil.copy(REDACT_PY.with_name(name), tmp_path / name)
    proc = subprocess.run([python, str(tmp_path / "collect.py"), "--dry-run"], cwd="/",
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "kubectl version -o json" in proc.stdout
    for gone in ("redact.py", "fleet.py"):
        (tmp_path / gone).rename(tmp_path / f"{gone}.away")
        proc = subprocess.run([python, str(tmp_path / "collect.py"), "--dry-run"], cwd="/",
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1 and proc.stderr == (
            f"gpu-triage collect: {gone} must sit beside collect.py (with redact.py, "
            "preflight.py, fleet.py and node.sh), or use the one file "
            "gpu-triage-collect.pyz\n"), proc.stderr
        (tmp_path / f"{gone}.away").rename(tmp_path / gone)


def test_a_toleration_or_a_key_reference_keeps_its_key() -> None:
    values = {"daemonsets": {"tolerations": [
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]},
        "driver": {"licensingConfig": {"secretKeyRef": {"name": "lic", "key": "token"}}},
        "license": {"key": "PLANTEDlicense"}}
    redactor = Redactor(True)
    out = redactor.helm_values(values)
    assert out["daemonsets"] == values["daemonsets"]
    assert out["driver"]["licensingConfig"]["secretKeyRef"] == {"name": "lic", "key": "token"}
    assert out["license"] == {"key": REDACTED}
    as_json = json.dumps(values).encode()
    redacted = json.loads(Redactor(True).file("cdi/values.json", as_json))
    assert redacted["daemonsets"] == values["daemonsets"] and redacted["license"]["key"] == REDACTED
