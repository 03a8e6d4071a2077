"""The planted-secret corpus, end to end: secrets of every form in fake node roots of every
distribution and in the API objects, collected by the real collector through a real kubectl
against the loopback API server (apiserver.py), nodes over ssh (fakes/fake_ssh.py runs the
real node.sh against each root). Every byte of the decompressed bundle is searched: no secret
may be there, with or without --pseudonymize; every negative twin must still be there.

The forms and their sources are in planted.py. Node carriers: containerd drop-in backups
(.bak, .orig, .dpkg-old), k3s/RKE2/MicroK8s templates, a k0s drop-in backup, CRI-O drop-ins,
an OCI hook, a CDI spec, Docker's daemon.json `proxies`, kubelet/k3s/RKE2/k0s command lines,
a GPU host process, dmesg, journals, the k3s containerd log. API carriers: pod env values and
args (and kubectl's last-applied copy), a ConfigMap, ClusterPolicy driver and toolkit env, an
event, Helm release values, and container logs.
"""

from __future__ import annotations

import copy
import gzip
import json
import sys
import tarfile
from pathlib import Path

from apiserver import ApiServer
from collector_support import (
    FIXTURES,
    fake_ssh_env,
    helm_secret,
    make_node_root,
)
from planted import FLAG_FORMS, FLAG_NEGATIVE, FORMS, TOML_NEGATIVE, toml_dropin
from pyz_kit import python, write_pyz
from test_collector_real_kubectl import NEEDS, NEWEST, run_collector
from test_node_distros import BUILDERS, Root

LOG_FORMS = [f for f in FORMS if f.detector != "key-name"]  # shapes: found in any text
YAML_FORMS = [f for f in FORMS if f.name.startswith("yaml-")]


class Corpus:
    """Secrets planted (form, secret, where) and negatives planted (text, where)."""

    def __init__(self) -> None:
        self.secrets: list[tuple[str, str, str]] = []
        self.negatives: list[tuple[str, str]] = []
        self._n = 0

    def tag(self) -> str:
        self._n += 1
        return f"{self._n:04d}"

    def form(self, form, where: str) -> str:
        """The text of `form` with a fresh tag, its negative twin after it."""
        secret, text = form.make(self.tag())
        self.secrets.append((form.name, secret, where))
        self.negatives.append((form.negative, where))
        return f"{text}\n{form.negative}\n"

    def dropin(self, where: str) -> str:
        planted, text = toml_dropin(self.tag())
        self.secrets += [(name, secret, where) for name, secret in planted]
        self.negatives += [(n, where) for n in TOML_NEGATIVE]
        return text

    def flags(self, program: str, where: str) -> list[str]:
        argv = [program, "agent", *FLAG_NEGATIVE.split()]
        for name, flag in FLAG_FORMS:
            secret = f"PLANTEDflag{self.tag()}"
            self.secrets.append((name, secret, where))
            argv += flag.format(s=secret).split()
        self.negatives.append((FLAG_NEGATIVE, where))
        return argv


def _append(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(text)


def _journal(path: Path, corpus: Corpus, forms, where: str) -> None:
    for form in forms:
        secret, text = form.make(corpus.tag())
        corpus.secrets.append((form.name, secret, where))
        _append(path, json.dumps({"MESSAGE": f"request failed: {text}", "PRIORITY": "4"}) + "\n")


def node_roots(base: Path, corpus: Corpus) -> dict[str, Path]:
    """One fake root per distribution, each with its secrets; node name -> root."""
    roots: dict[str, Path] = {}
    kubeadm = make_node_root(base, "kubeadm")
    for suffix in ("bak", "orig", "dpkg-old"):
        _append(kubeadm / f"etc/containerd/conf.d/99-nvidia.toml.{suffix}",
                corpus.dropin(f"kubeadm conf.d .{suffix}"))
    _append(kubeadm / "fake/dmesg.txt", "".join(
        f"[Mon Dec  1 10:00:00 2026] {corpus.form(f, 'kubeadm dmesg')}" for f in LOG_FORMS[:6]))
    _journal(kubeadm / "fake/journal/kubelet.jsonl", corpus, LOG_FORMS[6:14], "kubeadm journal")
    _append(kubeadm / "etc/cdi/vendor.yaml", "".join(
        corpus.form(f, "kubeadm CDI yaml") for f in YAML_FORMS[:1]))
    gpu_proc = corpus.flags("/usr/bin/nv-hostengine", "kubeadm gpu process")
    _append(kubeadm / "proc/5000/comm", "nv-hostengine\n")
    _append(kubeadm / "proc/5000/cmdline", "\0".join(gpu_proc) + "\0")
    roots["gpu-kubeadm"] = kubeadm
    for name, build in BUILDERS.items():
        root: Root = build(base)
        roots[f"gpu-{name}"] = root.path
        plant = {"k3s": _k3s, "rke2": _rke2, "k0s": _k0s, "microk8s": _microk8s,
                 "openshift": _openshift, "docker": _docker}[name]
        plant(root, corpus)
    return roots


def _k3s(r: Root, corpus: Corpus) -> None:
    r.process(813, "k3s-agent", *corpus.flags("/usr/local/bin/k3s", "k3s command line"))
    d = r.path / "var/lib/rancher/k3s/agent"
    _append(d / "etc/containerd/config.toml.tmpl", corpus.dropin("k3s template"))
    _append(d / "containerd/containerd.log", "".join(
        f'time="2026-12-01T10:00:00Z" level=error msg="{corpus.form(f, "k3s containerd.log")}"'
        for f in LOG_FORMS[14:20]))
    _append(r.path / "etc/containerd/conf.d/00-registry.toml.dpkg-old",
            corpus.dropin("k3s /etc/containerd conf.d .dpkg-old"))


def _rke2(r: Root, corpus: Corpus) -> None:
    r.process(701, "rke2", *corpus.flags("/usr/local/bin/rke2", "rke2 command line"))
    _append(r.path / "var/lib/rancher/rke2/agent/etc/containerd/config-v3.toml.tmpl",
            corpus.dropin("rke2 template"))
    _journal(r.path / "fake/journal/rke2-server.jsonl", corpus, LOG_FORMS[20:], "rke2 journal")


def _k0s(r: Root, corpus: Corpus) -> None:
    form = next(f for f in FORMS if f.name == "k0s-join-token")
    secret, text = form.make(corpus.tag())
    corpus.secrets.append((form.name, secret, "k0s command line"))
    r.process(301, "k0s", *text.replace("worker", "controller").split())
    _append(r.path / "etc/k0s/containerd.d/10-creds.toml.bak", corpus.dropin("k0s drop-in .bak"))


def _microk8s(r: Root, corpus: Corpus) -> None:
    join = next(f for f in FORMS if f.name == "microk8s-join")
    _append(r.path / "var/snap/microk8s/current/args/kubelet",
            "# " + corpus.form(join, "microk8s kubelet args").replace("\n", "\n# ", 1))
    _append(r.path / "var/snap/microk8s/current/args/containerd-template.toml",
            corpus.dropin("microk8s template"))


def _openshift(r: Root, corpus: Corpus) -> None:
    r.put("etc/crio/crio.conf.d/10-registry.conf", corpus.dropin("crio drop-in"))
    nested = next(f for f in FORMS if f.name == "json-nested")
    secret, text = nested.make(corpus.tag())
    corpus.secrets.append((nested.name, secret, "OCI hook"))
    corpus.negatives.append(('"token_count": 5', "OCI hook"))
    hook = {"version": "1.0.0", "hook": {"path": "/usr/bin/proxy-hook",
                                          "env": [f"HTTPS_PROXY={_proxy(corpus, 'OCI hook')}"]},
            "when": {"always": True}, "stages": ["prestart"], "extra": json.loads(text)}
    r.put("usr/share/containers/oci/hooks.d/zz-proxy.json", json.dumps(hook, indent=2))


def _proxy(corpus: Corpus, where: str) -> str:
    form = FORMS[0]
    secret, text = form.make(corpus.tag())
    corpus.secrets.append((form.name, secret, where))
    return text


def _docker(r: Root, corpus: Corpus) -> None:
    daemon = json.loads(r.path.joinpath("etc/docker/daemon.json").read_text())
    daemon["proxies"] = {"http-proxy": _proxy(corpus, "daemon.json"),
                         "https-proxy": _proxy(corpus, "daemon.json"), "no-proxy": "localhost"}
    r.put("etc/docker/daemon.json", json.dumps(daemon, indent=2))
    auth = next(f for f in FORMS if f.name == "docker-auth")
    _append(r.path / "etc/containerd/conf.d/config.json.bak", corpus.form(auth, "docker conf.d"))


# ---- the API side ---------------------------------------------------------------------------

def _fixture(name: str) -> list[dict]:
    return json.loads((FIXTURES / "cluster" / name).read_text())["items"]


def api_objects(corpus: Corpus, nodes: list[str]) -> tuple[dict[str, list[dict]], list[dict],
                                                             dict[str, str]]:
    """(objects by resource, Helm secrets, log texts) with secrets planted."""
    objects: dict[str, list[dict]] = {}
    node_items = []
    for index, name in enumerate(nodes):
        node = copy.deepcopy(_fixture("nodes.json")[1])  # gpu-a: labelled, with a GPU
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        node["status"]["addresses"] = [{"type": "InternalIP", "address": f"10.0.7.{index + 1}"},
                                       {"type": "Hostname", "address": name}]
        node_items.append(node)
    objects["nodes"] = node_items

    pods = _fixture("pods.json")
    trainer = next(p for p in pods if p["metadata"]["name"] == "train-llm-0")
    container = trainer["spec"]["containers"][0]
    env = container.setdefault("env", [])
    plain_names = ["HTTPS_PROXY", "DATABASE_URL", "REDIS_URL", "AMQP_URL", "MONGO_URI",
                   "DB_DSN", "SENTRY_DSN", "UPSTREAM_HEADER", "BASIC_HEADER", "ID_JWT", "KEY_PEM",
                   "GITHUB_PAT", "GH_FINE", "GITLAB", "SLACK_BOT", "SLACK_WEBHOOK_URL", "AWS_ID",
                   "AWS_PAIR", "BLOB_URL", "GCP_SA", "K3S_URL_JOIN", "KUBEADM_JOIN", "MK8S_JOIN",
                   "K0S_JOIN", "NGC", "HF", "MAPS", "DOCKER_CONFIG_JSON", "REGISTRY_JSON",
                   "SIGNING", "NPMRC", "NETRC", "STORAGE"]
    shaped = [f for f in FORMS if not f.name.startswith("yaml-")]
    for name, form in zip(plain_names, shaped, strict=True):
        secret, text = form.make(corpus.tag())
        corpus.secrets.append((form.name, secret, f"pod env {name}"))
        env.append({"name": name, "value": text})
    env.append({"name": "NO_PROXY_EXAMPLE", "value": FORMS[0].negative})
    corpus.negatives.append((FORMS[0].negative, "pod env"))
    db = FORMS[1]
    secret, text = db.make(corpus.tag())
    corpus.secrets.append((db.name, secret, "container args"))
    container["args"] = [f"--db={text}", "--epochs=3"]
    applied = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [
        {"name": container["name"], "env": [{"name": "REDIS_URL",
                                              "value": _proxy(corpus, "last-applied")}]}]}}
    trainer["metadata"].setdefault("annotations", {})[
        "kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(applied)
    objects["pods"] = pods

    cms = _fixture("configmaps.json")
    cms.append({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "app-settings", "namespace": "gpu-operator"},
                "data": {"values.yaml": "".join(corpus.form(f, "ConfigMap yaml")
                                                for f in YAML_FORMS),
                         "config.toml": corpus.dropin("ConfigMap toml"),
                         "sa.json": corpus.form(FORMS[19], "ConfigMap json"),
                         "pem": corpus.form(FORMS[10], "ConfigMap pem")}})
    objects["configmaps"] = cms

    policies = _fixture("clusterpolicies.nvidia.com.json")
    spec = policies[0]["spec"]
    spec["driver"]["env"].append({"name": "HTTPS_PROXY", "value": _proxy(corpus, "CP driver")})
    spec["toolkit"]["env"].append({"name": "HTTP_PROXY", "value": _proxy(corpus, "CP toolkit")})
    objects["clusterpolicies"] = policies

    events = _fixture("events.json")
    event = copy.deepcopy(events[0])
    event["metadata"]["name"] += ".planted"
    event["message"] = f"Failed to pull image from {_proxy(corpus, 'event')}"
    objects["events"] = [*events, event]

    config = {"proxy": {"url": _proxy(corpus, "helm proxy.url")},
              "driver": {"env": [{"name": "HTTPS_PROXY", "value": _proxy(corpus, "helm env")}]},
              "ngc": {"apiKey": FORMS[24].make(corpus.tag())[0]}, "token_count": 5}
    corpus.secrets.append(("helm-key", config["ngc"]["apiKey"], "helm ngc.apiKey"))
    helm = [helm_secret(1), helm_secret(2, config)]

    logs = {"gpu-operator/gpu-operator-6b8f9c7d5-x2x9q/gpu-operator": "".join(
        f"2026-12-01T10:00:{n:02d}.000000000Z {corpus.form(f, 'operator log')}"
        for n, f in enumerate(LOG_FORMS[:12]))}
    return objects, helm, logs


def _bundle_bytes(path: Path) -> dict[str, bytes]:
    """Every member, decompressed, and any gzip member decompressed again."""
    out = {}
    with tarfile.open(path, "r:gz") as archive:
        for member in archive:
            if member.isfile():
                data = archive.extractfile(member).read()
                out[member.name] = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    return out


def _collect(tmp: Path, api: ApiServer, roots: dict[str, Path], *extra: str,
             program: list[str] | None = None) -> Path:
    env = fake_ssh_env(tmp, {"ssh_roots": {f"host-{n}": str(r) for n, r in roots.items()}})
    hosts = [arg for name in roots for arg in ("--ssh-host", f"{name}=host-{name}")]
    code, stderr, path = run_collector(
        NEWEST, tmp, api, "--node-mode", "ssh", "--nodes", ",".join(roots), *hosts, *extra,
        env_extra=env, program=program)
    assert code == 0 and path is not None, stderr
    return path


@NEEDS
def test_no_planted_secret_reaches_the_bundle(tmp_path: Path) -> None:
    corpus = Corpus()
    roots = node_roots(tmp_path / "roots", corpus)
    objects, helm, logs = api_objects(corpus, list(roots))
    forms = {form for form, _s, _w in corpus.secrets}
    assert len(corpus.secrets) >= 60 and len(forms) >= 25, (len(corpus.secrets), len(forms))
    with ApiServer(objects=objects, secrets=helm) as api:
        api.log_text.update(logs)
        plain = _collect(tmp_path / "plain", api, roots)
        pseudo = _collect(tmp_path / "pseudo", api, roots, "--pseudonymize")
        # the one-file form, on the oldest Python it promises where this machine has it
        pyz = write_pyz(tmp_path / "handed-over")
        oldest = python("3.8") or sys.executable
        one_file = _collect(tmp_path / "pyz", api, roots, program=[oldest, str(pyz)])
    for path in (plain, pseudo, one_file):
        files = _bundle_bytes(path)
        nodes = {name.split("/")[2] for name in files if "/nodes/" in name}
        assert len(nodes) == len(roots), nodes  # every distribution was collected
        for name, data in files.items():
            for form, secret, where in corpus.secrets:
                assert secret.encode() not in data, (form, where, name)
            assert b"PLANTED" not in data, name
    files = _bundle_bytes(plain)
    everything = b"\n".join(files.values())
    for negative, where in corpus.negatives:  # as written, or inside a JSON string
        forms = (negative.encode(), json.dumps(negative)[1:-1].encode())
        assert any(form in everything for form in forms), (negative, where)
    manifest = json.loads(next(d for n, d in files.items() if n.endswith("/manifest.json")))
    kinds = manifest["redaction"]["kinds"]
    assert {f.detector for f in FORMS} - {"docker-auth"} <= set(kinds) | {"key-name"}, kinds
    assert kinds["secret-flag"] >= 1 and kinds["url-userinfo"] >= 20
    k3s = next(d for n, d in files.items() if n.endswith("/nodes/gpu-k3s/host/kubelet.txt"))
    assert (b"/usr/local/bin/k3s agent --server https://k3s.corp.example:6443 -t <redacted> "
            b"--agent-token <redacted> --vpn-auth <redacted> "
            b"--etcd-s3-access-key <redacted> --etcd-s3-secret-key=<redacted> "
            b"--datastore-endpoint=<redacted>\n") in k3s


def test_the_corpus_is_large_enough(tmp_path: Path) -> None:
    """Counted without a kubectl: the corpus itself has 60 secrets of 25 forms or more."""
    corpus = Corpus()
    roots = node_roots(tmp_path / "roots", corpus)
    api_objects(corpus, list(roots))
    forms = {form for form, _s, _w in corpus.secrets}
    assert len(roots) == 7 and len(corpus.secrets) >= 60 and len(forms) >= 25

