"""Redaction: unit rules, then planted secrets must not survive anywhere in a bundle."""

import base64
import copy
import gzip
import hashlib
import json
import stat

import pytest
from collector_support import (
    B64_WRAPPED,
    PLANTED,
    by_path,
    helm_secret,
    on_system_path,
    read_bundle,
)

from collectors.collect import REDACTED, Redactor, decode_helm_release, reduce_release

needs_containerd = pytest.mark.skipif(not on_system_path("containerd"), reason="needs containerd")


def test_env_values_by_name_in_containers_and_init_containers():
    pod = {
        "kind": "Pod",
        "spec": {
            "initContainers": [{"name": "i", "env": [{"name": "DB_Password", "value": "x1"}]}],
            "containers": [
                {
                    "name": "c",
                    "env": [
                        {"name": "hf_token", "value": "x2"},
                        {"name": "AWS_SECRET_ACCESS_KEY", "value": "x3"},
                        {"name": "SSL_CERT_FILE", "value": "/etc/ssl/x"},
                        {"name": "MY_CREDENTIALS", "value": "x4"},
                        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                        {"name": "EMPTY_TOKEN", "value": ""},
                        {
                            "name": "FROM_SECRET",
                            "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}},
                        },
                    ],
                }
            ],
        },
    }
    redactor = Redactor(True)
    redactor.kubernetes({"kind": "List", "items": [pod]})
    env = pod["spec"]["containers"][0]["env"]
    # A name that ends in FILE, PATH or DIR names a place, not a secret: the path stays.
    assert [e.get("value") for e in env] == [
        REDACTED,
        REDACTED,
        "/etc/ssl/x",
        REDACTED,
        "all",
        "",
        None,
    ]
    assert env[6]["valueFrom"]["secretKeyRef"] == {"name": "s", "key": "k"}
    assert pod["spec"]["initContainers"][0]["env"][0]["value"] == REDACTED
    assert redactor.counts == {"env-values": 4}


def test_env_in_templates_custom_resources_and_last_applied():
    inner = {
        "kind": "DaemonSet",
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "c", "env": [{"name": "API_KEY", "value": "inner-secret"}]}
                    ]
                }
            }
        },
    }
    ds = {
        "kind": "DaemonSet",
        "metadata": {
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(inner),
                "other": "kept",
            }
        },
        "spec": copy.deepcopy(inner["spec"]),
    }
    policy = {
        "kind": "ClusterPolicy",
        "spec": {"driver": {"env": [{"name": "NGC_API_KEY", "value": "cp"}]}},
    }
    redactor = Redactor(True)
    redactor.kubernetes({"items": [ds, policy]})
    assert "inner-secret" not in json.dumps(ds) and "cp" not in json.dumps(
        policy["spec"]["driver"]["env"]
    )
    applied = json.loads(
        ds["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert applied["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == REDACTED
    assert ds["metadata"]["annotations"]["other"] == "kept"


def test_container_args_lose_secret_flag_values():
    pod = {
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "command": ["app", "--auth-token=abc", "--password", "x"],
                    "args": ["--verbose", "--db-pass=hunter2", "--image=nvcr.io/x:1"],
                }
            ]
        }
    }
    Redactor(True).kubernetes(pod)
    container = pod["spec"]["containers"][0]
    assert container["command"] == ["app", "--auth-token=<redacted>", "--password", "x"]
    assert container["args"] == ["--verbose", "--db-pass=<redacted>", "--image=nvcr.io/x:1"]


def test_configmap_keys_embedded_pairs_and_base64():
    wrapped = base64.b64encode(b"user: robot\npassword: s3cret\n").decode()
    cm = {
        "kind": "ConfigMap",
        "metadata": {"name": "x"},
        "data": {
            "registry-password": "p",
            "TLS.Cert": "-----BEGIN",
            "config.yaml": "url: https://nvcr.io\ntoken: t0k\n",
            "creds.b64": wrapped,
            "time-slicing": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
            "    - name: nvidia.com/gpu\n      replicas: 4\n",
        },
        "binaryData": {"blob": base64.b64encode(gzip.compress(b'{"auth": "xyz"}')).decode()},
    }
    original = copy.deepcopy(cm)
    redactor = Redactor(True)
    redactor.kubernetes(cm, configmaps=True)
    data = cm["data"]
    assert data["registry-password"] == REDACTED and data["TLS.Cert"] == REDACTED
    assert data["config.yaml"] == "url: https://nvcr.io\ntoken: <redacted>\n"
    assert data["creds.b64"] == REDACTED and cm["binaryData"]["blob"] == REDACTED
    assert data["time-slicing"] == original["data"]["time-slicing"]
    assert redactor.counts == {"configmap-values": 5}


def test_helm_configmap_release_records_are_dropped():
    cm = {
        "kind": "ConfigMap",
        "metadata": {"name": "sh.helm.release.v1.x.v1", "labels": {"owner": "helm"}},
        "data": {"release": base64.b64encode(gzip.compress(b'{"config": {}}')).decode()},
    }
    Redactor(True).kubernetes({"items": [cm]}, configmaps=True)
    assert cm["data"]["release"] == REDACTED


def test_helm_values_at_any_depth():
    values = {
        "ngcApiKey": "a",
        "driver": {
            "enabled": False,
            "licensingConfig": {"nlsEnabled": True},
            "repository": "nvcr.io/nvidia",
            "deep": {"deeper": [{"Secret_Name": "b"}]},
        },
        "toolkit": {"env": [{"name": "MY_TOKEN", "value": "c"}, {"name": "PLAIN", "value": "d"}]},
        "extra": {
            "blob": B64_WRAPPED,
            "double": base64.b64encode(B64_WRAPPED.encode()).decode(),
            "gz": base64.b64encode(gzip.compress(b"api_key=zzz")).decode(),
        },
        "auth": {"user": "u", "pass": "p"},
        "certConfig": {"name": ""},
        "useCert": False,
        "tokenTTL": None,
        "imagePullSecrets": [],
    }
    redactor = Redactor(True)
    out = redactor.helm_values(values)
    assert out["ngcApiKey"] == REDACTED and out["auth"] == REDACTED
    assert out["driver"]["enabled"] is False and out["driver"]["licensingConfig"] == {
        "nlsEnabled": True
    }
    assert out["driver"]["repository"] == "nvcr.io/nvidia"
    assert out["driver"]["deep"]["deeper"][0]["Secret_Name"] == REDACTED
    assert out["toolkit"]["env"] == [
        {"name": "MY_TOKEN", "value": REDACTED},
        {"name": "PLAIN", "value": "d"},
    ]
    assert out["extra"] == {"blob": REDACTED, "double": REDACTED, "gz": REDACTED}
    assert out["certConfig"] == REDACTED
    assert out["useCert"] is False and out["tokenTTL"] is None and out["imagePullSecrets"] == []
    assert values["ngcApiKey"] == "a"  # the input is not modified
    assert redactor.counts == {"helm-values": 8}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Authorization: Bearer abc.def", "Authorization: <redacted>"),
        ('{"password": "x", "user": "y"}', '{"password": "<redacted>", "user": "y"}'),
        ("https://h/path?access_token=abc&x=1", "https://h/path?access_token=<redacted>&x=1"),
        ("export GITHUB_TOKEN='ghp_1'", "export GITHUB_TOKEN='<redacted>'"),
        ('enableAuth: true\nkey: ""', 'enableAuth: true\nkey: ""'),
        ("nvidia.com/gpu: 1\nreplicas: 4", "nvidia.com/gpu: 1\nreplicas: 4"),
        # the device plugin's setting is a boolean, quoted or at the end of a sentence
        ('PASS_DEVICE_SPECS: "true"', 'PASS_DEVICE_SPECS: "true"'),
        ("- name: PASS_DEVICE_SPECS\n  value: 'false'",
         "- name: PASS_DEVICE_SPECS\n  value: 'false'"),
        ("deployed with PASS_DEVICE_SPECS=True.", "deployed with PASS_DEVICE_SPECS=True."),
        # a quoted number may be a PIN; a quoted word that is not a boolean is a secret
        ('password: "123456"', 'password: "<redacted>"'),
        ("PASS_PHRASE='true story'", "PASS_PHRASE='<redacted>'"),
    ],
)
def test_scrub_free_text(text, expected):
    assert Redactor(True).scrub(text, "x") == expected


def test_containerd_toml_registry_credentials():
    toml = (
        '[plugins."io.containerd.grpc.v1.cri".registry.configs."nvcr.io".auth]\n'
        '  username = "$oauthtoken"\n  password = "p4ss"\n  auth = ""\n  identitytoken = "tok"\n'
        '  env = ["OCICRYPT_KEYPROVIDER_CONFIG=/etc/x.conf"]\n'
        '  BinaryName = "/usr/bin/nvidia-container-runtime"\n'
    )
    redactor = Redactor(True)
    out = redactor.file("containerd/config-dump.toml", toml.encode(), "containerd-values").decode()
    assert 'password = "<redacted>"' in out and 'identitytoken = "<redacted>"' in out
    assert (
        'auth = ""' in out
        and "OCICRYPT_KEYPROVIDER_CONFIG=/etc/x.conf" in out
        and "BinaryName" in out
    )
    assert redactor.counts == {"containerd-values": 2}
    # Every file by content, whatever its name: a kernel log too, where the Xid line survives.
    xid = b"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
    assert redactor.file("dmesg.txt", xid + b"password = x\n") == xid + b"password = <redacted>\n"


def test_disabled_redactor_changes_nothing():
    pod = {"spec": {"containers": [{"env": [{"name": "TOKEN", "value": "x"}]}]}}
    redactor = Redactor(False)
    redactor.kubernetes(pod)
    assert pod["spec"]["containers"][0]["env"][0]["value"] == "x"
    assert redactor.helm_values({"password": "y"}) == {"password": "y"}
    assert redactor.counts == {}


def test_helm_release_secret_decodes_and_reduces():
    secret = helm_secret(2)
    release = decode_helm_release(secret["data"]["release"])
    assert release["version"] == 2 and release["config"]["ngcApiKey"] == "PLANTED-helm-top"
    entry = reduce_release(release, Redactor(True))
    assert set(entry) == {
        "revision",
        "status",
        "chart",
        "app_version",
        "updated",
        "description",
        "values",
    }
    assert "manifest" not in json.dumps(entry) and "PLANTED" not in json.dumps(entry)


def assert_no_planted_secrets(files):
    for name, data in files.items():
        for secret in PLANTED:
            assert secret.encode() not in data, (secret, name)
        assert b"PLANTED" not in data, name


@needs_containerd
def test_planted_secrets_never_reach_the_bundle(cluster):
    code, path = cluster.collect()
    assert code == 0
    _names, files, manifest = read_bundle(path)
    assert_no_planted_secrets(files)
    counts = manifest["redaction"]["counts"]
    assert (
        counts["env-values"] >= 6 and counts["helm-values"] == 4 and counts["configmap-values"] == 2
    )
    assert counts["containerd-values"] >= 2 and counts["args-values"] >= 1


@needs_containerd
def test_planted_secrets_with_the_helm_binary(cluster_with_helm):
    code, path = cluster_with_helm.collect("--node-mode", "none")
    assert code == 0
    _names, files, manifest = read_bundle(path)
    assert_no_planted_secrets(files)
    calls = cluster_with_helm.invocations("helm")
    assert [argv[0] for argv in calls] == ["list", "history", "get", "get"]
    assert not any(
        argv[:2] == ["get", "secrets"] for argv in cluster_with_helm.invocations("kubectl")
    )
    item = by_path(manifest)["cluster/helm/gpu-operator.json"]
    assert item["command"] == [
        "helm",
        "history",
        "gpu-operator",
        "-n",
        "gpu-operator",
        "-o",
        "json",
    ]
    top = path.name[:-4]
    history = json.loads(files[top + "/cluster/helm/gpu-operator.json"])
    assert [h["status"] for h in history] == ["superseded", "deployed"]
    assert history[1]["values"]["driver"]["env"][0]["value"] == REDACTED
    assert history[1]["values"]["toolkit"]["enabled"] is True


@needs_containerd
def test_no_redact_keeps_values_and_says_so(cluster):
    code, path = cluster.collect("--no-redact", "--node-mode", "none")
    assert code == 0
    _names, files, manifest = read_bundle(path)
    assert manifest["redaction"] == {"enabled": False, "counts": {}, "kinds": {},
                                     "pseudonymized": False}
    assert any(b"hf_PLANTEDtoken0001" in data for data in files.values())
    # Secrets are still reduced to history and values: never the chart defaults or manifests.
    assert not any(
        b"PLANTED-helm-manifest" in data or b"PLANTED-opaque" in data for data in files.values()
    )


@needs_containerd
def test_the_bundle_is_0600_and_the_last_lines_say_what_was_redacted(cluster, capsys):
    code, path = cluster.collect("--node-mode", "none")
    assert code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    _names, _files, manifest = read_bundle(path)
    kinds = manifest["redaction"]["kinds"]
    every = capsys.readouterr().err.splitlines()
    lines = every[-5:-1]
    assert every[-1] == f"gpu-triage collect: next: send {path.name} to support"
    total = sum(kinds.values())
    shown = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
    assert lines[0] == (f"gpu-triage collect: redacted {total} values ({shown}); "
                        "values are never shown")
    assert lines[1] == f"gpu-triage collect: bundle {path} (mode 0600)"
    assert lines[2] == "gpu-triage collect: sha256 " + hashlib.sha256(path.read_bytes()).hexdigest()
    assert lines[3].startswith("gpu-triage collect: you may open it and check it before sending")
    assert "PLANTED" not in "\n".join(lines)


@needs_containerd
def test_no_redact_says_so_at_the_end(cluster, capsys):
    code, _path = cluster.collect("--no-redact", "--node-mode", "none")
    assert code == 0
    err = capsys.readouterr().err
    assert "gpu-triage collect: redaction was OFF (--no-redact): secret values are in the bundle" \
        in err
