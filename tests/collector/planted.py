"""The planted-secret corpus: secrets of many forms, each with a negative twin that must survive.

Every form is a function of a tag (so that each planted copy is a distinct string) that returns
(secret, text): `secret` must never appear in a redacted bundle, `text` is what is written
where it is planted. `negative` is text of the same look that is evidence, not a secret.

Where the shapes come from (the values here are made up):
- GPU Operator proxy env (HTTPS_PROXY in driver.env/toolkit.env):
  https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/install-gpu-operator-proxy.html
- URL user info: RFC 3986 section 3.2.1; Go MySQL DSN `user:pass@tcp(host)/db` and the k3s
  datastore endpoint: https://docs.k3s.io/datastore
- token prefixes: GitHub
  https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/
  GitLab https://docs.gitlab.com/security/tokens/ ,
  Slack https://api.slack.com/authentication/token-types ,
  AWS access key ids https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html ,
  Azure SAS `sig=` https://learn.microsoft.com/en-us/rest/api/storageservices/create-service-sas ,
  GCP service-account key JSON https://cloud.google.com/iam/docs/keys-create-delete
- k3s join token `K10<ca hash>::server:<password>`: https://docs.k3s.io/cli/token
- kubeadm bootstrap token `[a-z0-9]{6}.[a-z0-9]{16}`:
  https://kubernetes.io/docs/reference/access-authn-authz/bootstrap-tokens/
- MicroK8s join string `IP:25000/<token>/<hash>`: https://canonical.com/microk8s/docs/command-reference
- k0s positional join token: https://docs.k0sproject.io/v1.25.2+k0s.0/cli/k0s_worker/
- k3s/RKE2 secret flags (-t/--token, --agent-token, --vpn-auth, --etcd-s3-access-key,
  --etcd-s3-secret-key, --datastore-endpoint): https://docs.k3s.io/cli/server ,
  https://docs.k3s.io/cli/agent , https://docs.rke2.io/reference/server_config
- Docker >= 23 daemon.json `proxies`: https://docs.docker.com/engine/daemon/proxy/
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import NamedTuple


class Form(NamedTuple):
    name: str
    detector: str
    make: Callable[[str], tuple[str, str]]
    negative: str


def _pad(text: str, n: int, fill: str = "abcdefghijklmnopqrstuvwxyz0123456789") -> str:
    return (text + fill * 4)[:n]


def _pem(tag: str) -> tuple[str, str]:
    body = f"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCPLANTEDpem{tag}"
    return body, (f"-----BEGIN PRIVATE KEY-----\n{body}\nAbCdEf0123456789==\n"
                  "-----END PRIVATE KEY-----\n")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


FORMS = [
    Form("proxy-url", "url-userinfo",
         lambda t: (f"PLANTEDproxy{t}", f"http://svc-proxy:PLANTEDproxy{t}@proxy.corp.example:3128"),
         "http://proxy.corp.example:3128"),
    Form("postgres-url", "url-userinfo",
         lambda t: (f"PLANTEDpg{t}", f"postgres://app:PLANTEDpg{t}@db.corp.example:5432/app"),
         "postgres://db.corp.example:5432/app"),
    Form("redis-url", "url-userinfo",
         lambda t: (f"PLANTEDredis{t}", f"redis://:PLANTEDredis{t}@redis.corp.example:6379/0"),
         "redis://redis.corp.example:6379/0"),
    Form("amqp-url", "url-userinfo",
         lambda t: (f"PLANTEDamqp{t}", f"amqp://guest:PLANTEDamqp{t}@rabbit.corp.example:5672/"),
         "amqp://rabbit.corp.example:5672/"),
    Form("mongo-uri", "url-userinfo",
         lambda t: (f"PLANTEDmongo{t}", f"mongodb+srv://u:PLANTEDmongo{t}@c0.example.net/db"),
         "mongodb+srv://c0.example.net/db"),
    Form("mysql-dsn", "dsn-password",
         lambda t: (f"PLANTEDdsn{t}", f"k3s:PLANTEDdsn{t}@tcp(mysql.corp.example:3306)/k3s"),
         "tcp(mysql.corp.example:3306)/k3s"),
    Form("sentry-dsn", "url-userinfo",
         lambda t: (f"PLANTEDsentry{t}abcdef0123",
                    f"https://PLANTEDsentry{t}abcdef0123@o12.ingest.sentry.io/4501"),
         "ssh://git@github.com/nvidia/gpu-operator"),
    Form("bearer", "authorization",
         lambda t: (f"PLANTEDbearer{t}xyz", f"Authorization: Bearer PLANTEDbearer{t}xyz"),
         "Bearer tokens are required"),
    Form("basic", "authorization",
         lambda t: (_b64(f"admin:PLANTEDbasic{t}"), f"Basic {_b64(f'admin:PLANTEDbasic{t}')}"),
         "Basic authentication failed"),
    Form("jwt", "jwt",
         lambda t: (f"PLANTEDjwtsig{t}_abc",
                    "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJrdWJlcm5ldGVzIn0."
                    f"PLANTEDjwtsig{t}_abc"),
         "a JWT has three parts separated by dots"),
    Form("pem-private-key", "pem-private-key", _pem,
         "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUNOTSECRET\n-----END CERTIFICATE-----"),
    Form("github-pat", "github-token",
         lambda t: (_pad(f"ghp_PLANTED{t}", 40), _pad(f"ghp_PLANTED{t}", 40)),
         "GITHUB_ORG=nvidia"),
    Form("github-fine-grained", "github-token",
         lambda t: (_pad(f"github_pat_PLANTED{t}_", 93), _pad(f"github_pat_PLANTED{t}_", 93)),
         "github_pat is a GitHub token prefix"),
    Form("gitlab-pat", "gitlab-token",
         lambda t: (_pad(f"glpat-PLANTED{t}", 26), _pad(f"glpat-PLANTED{t}", 26)),
         "gitlab.example/group/project"),
    Form("slack-bot-token", "slack-token",
         lambda t: (f"xoxb-PLANTED{t}-1234567890", f"xoxb-PLANTED{t}-1234567890"),
         "xoxb is a Slack bot token prefix"),
    Form("slack-webhook", "slack-webhook",
         lambda t: (f"T0PLANTED{t}/B0PLANTED/abcdefABCDEF123456",
                    f"https://hooks.slack.com/services/T0PLANTED{t}/B0PLANTED/abcdefABCDEF123456"),
         "https://api.slack.com/apps"),
    Form("aws-access-key-id", "aws-access-key",
         lambda t: (_pad(f"AKIAPLANTED{t}", 20, "QRSTUVWXYZ234567"),
                    _pad(f"AKIAPLANTED{t}", 20, "QRSTUVWXYZ234567")),
         "AKIA is an AWS access key prefix"),
    Form("aws-secret-key", "aws-secret-key",
         lambda t: (_pad(f"PLANTEDaws{t}/K7MDENG", 40, "bPxRfiCYEXAMPLEKEYwJalrXUtnFEMI"),
                    f"{_pad('AKIAPLANTEDSECRETX', 20, 'QRSTUVWXYZ')} "
                    f"{_pad(f'PLANTEDaws{t}/K7MDENG', 40, 'bPxRfiCYEXAMPLEKEYwJalrXUtnFEMI')}"),
         "region=us-east-1"),
    Form("azure-sas", "azure-sas",
         lambda t: (f"PLANTEDsig{t}abcdef%2B0123",
                    "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&ss=b&"
                    f"sig=PLANTEDsig{t}abcdef%2B0123"),
         "sv=2022-11-02&ss=b"),
    Form("gcp-service-account", "key-name",
         lambda t: (f"PLANTEDgcp{t}",
                    '{"type": "service_account", "project_id": "lab", "private_key_id": '
                    f'"PLANTEDgcp{t}", "client_email": "sa@lab.iam.gserviceaccount.com"}}'),
         '"type": "service_account"'),
    Form("k3s-join-token", "k3s-token",
         lambda t: (f"PLANTEDk3s{t}", f"K10{'0123456789abcdef' * 4}::server:PLANTEDk3s{t}"),
         "K10 is the prefix of a k3s token"),
    Form("kubeadm-token", "kubeadm-token",
         lambda t: (f"pl{t}.plantedsecret{t[-3:]}", f"pl{t}.plantedsecret{t[-3:]}"),
         "discovery-token-ca-cert-hash sha256:0123"),
    Form("microk8s-join", "microk8s-join-token",
         lambda t: (f"feedface{int(t):024x}",
                    f"microk8s join 10.0.9.1:25000/feedface{int(t):024x}/2c0cb3284b05"),
         "microk8s join --worker"),
    Form("k0s-join-token", "k0s-join-token",
         lambda t: (f"H4sIAAAAAAAC_PLANTEDk0s{t}abcdefghijklmnop",
                    f"/usr/local/bin/k0s worker H4sIAAAAAAAC_PLANTEDk0s{t}abcdefghijklmnop"),
         "--token-file=/etc/k0s/k0stoken"),
    Form("nvidia-api-key", "nvidia-api-key",
         lambda t: (_pad(f"nvapi-PLANTED{t}", 40), _pad(f"nvapi-PLANTED{t}", 40)),
         "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
    Form("huggingface-token", "huggingface-token",
         lambda t: (_pad(f"hf_PLANTED{t}", 37), _pad(f"hf_PLANTED{t}", 37)),
         "huggingface.co/meta-llama"),
    Form("google-api-key", "google-api-key",
         lambda t: (_pad(f"AIzaPLANTED{t}", 39), _pad(f"AIzaPLANTED{t}", 39)),
         "maps.googleapis.com"),
    Form("docker-auth", "docker-auth",
         lambda t: (_b64(f"robot:PLANTEDdocker{t}"),
                    f'{{"auths": {{"nvcr.io": {{"auth": "{_b64(f"robot:PLANTEDdocker{t}")}"}}}}}}'),
         '"credsStore": "desktop"'),
    Form("json-nested", "key-name",
         lambda t: (f"PLANTEDnested{t}",
                    f'{{"registry": {{"credentials": {{"user": "bot", "pass": '
                    f'"PLANTEDnested{t}"}}}}, "token_count": 5}}'),
         '"token_count": 5'),
    Form("pgp-private-key", "pem-private-key",
         lambda t: (f"lQOYBGPLANTEDpgp{t}",
                    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
                    f"lQOYBGPLANTEDpgp{t}\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----\n"),
         "-----BEGIN PGP PUBLIC KEY BLOCK-----"),
    Form("npm-token", "token-prefix",
         lambda t: (_pad(f"npm_PLANTED{t}", 40), _pad(f"npm_PLANTED{t}", 40)),
         "npm_config_registry=https://registry.npmjs.org/"),
    Form("netrc", "netrc-password",
         lambda t: (f"PLANTEDnetrc{t}",
                    f"machine registry.corp.example login ci password PLANTEDnetrc{t}"),
         "machine registry.corp.example login ci"),
    Form("azure-account-key", "key-name",
         lambda t: (f"PLANTEDacctkey{t}==",
                    "DefaultEndpointsProtocol=https;AccountName=lab;"
                    f"AccountKey=PLANTEDacctkey{t}==;EndpointSuffix=core.windows.net"),
         "EndpointSuffix=core.windows.net"),
    Form("yaml-block-scalar", "key-name",
         lambda t: (f"PLANTEDblock{t}",
                    f"password: |\n  PLANTEDblock{t}\n  second-line\nreplicas: 2\n"),
         "token_count: 5"),
    Form("yaml-next-line", "key-name",
         lambda t: (f"PLANTEDnext{t}", f"clientSecret:\n  PLANTEDnext{t}\nreplicas: 2\n"),
         "enableAuth: true"),
    Form("yaml-env-pair", "key-name",
         lambda t: (f"PLANTEDenvpair{t}",
                    f"env:\n- name: DB_PASSWORD\n  value: PLANTEDenvpair{t}\n"
                    "- name: NVIDIA_VISIBLE_DEVICES\n  value: all\n"),
         "value: all"),
]

# TOML forms, each a whole drop-in; their negatives are the containerd keys rules read.
TOML_NEGATIVE = ('runtime_type = "io.containerd.runc.v2"', "SystemdCgroup = true",
                 'BinaryName = "/usr/bin/nvidia-container-runtime"',
                 'key_file = "/etc/containerd/certs.d/client.key"')


def toml_forms(tag: str) -> list[tuple[str, str, str]]:
    """(form, secret, text) of every TOML string form in one containerd drop-in."""
    head = '[plugins."io.containerd.grpc.v1.cri".registry.configs'
    return [
        ("toml-multiline-basic", f"PLANTEDtomlml{tag}",
         f'{head}."a.example".auth]\n  password = """\nPLANTEDtomlml{tag}\n"""\n'),
        ("toml-literal-quoted-key", f"PLANTEDtomllit{tag}",
         f"{head}.\"b.example\".auth]\n  'identitytoken' = 'PLANTEDtomllit{tag}'\n"),
        ("toml-multiline-literal", f"PLANTEDtomlmll{tag}",
         f"{head}.\"c.example\".auth]\n  auth = '''PLANTEDtomlmll{tag}'''\n"),
        ("toml-dotted-quoted-key", f"PLANTEDtomldot{tag}",
         f'[plugins."io.containerd.grpc.v1.cri".registry]\n'
         f'  configs."d.example".auth.password = "PLANTEDtomldot{tag}"\n'),
        ("toml-inline-table", f"PLANTEDtomlinl{tag}",
         f'[plugins."io.containerd.grpc.v1.cri".registry.configs."e.example"]\n'
         f'  auth = {{ username = "bot", password = "PLANTEDtomlinl{tag}" }}\n'),
    ]


def toml_dropin(tag: str) -> tuple[list[tuple[str, str]], str]:
    """A drop-in holding every TOML form plus the negatives; ([(form, secret)], text)."""
    parts = toml_forms(tag)
    text = "version = 2\n" + "".join(p[2] for p in parts) + (
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        '  runtime_type = "io.containerd.runc.v2"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
        '  BinaryName = "/usr/bin/nvidia-container-runtime"\n  SystemdCgroup = true\n'
        '[plugins."io.containerd.grpc.v1.cri".registry.configs."f.example".tls]\n'
        '  key_file = "/etc/containerd/certs.d/client.key"\n')
    return [(p[0], p[1]) for p in parts], text


# Command-line flags (k3s, RKE2, kubeadm): (form, flag text with {s}).
FLAG_FORMS = [
    ("flag-t", "-t {s}"),
    ("flag-agent-token", "--agent-token {s}"),
    ("flag-vpn-auth", "--vpn-auth name=tailscale,joinKey={s}"),
    ("flag-etcd-s3-access-key", "--etcd-s3-access-key {s}"),
    ("flag-etcd-s3-secret-key", "--etcd-s3-secret-key={s}"),
    ("flag-datastore-endpoint", "--datastore-endpoint=postgres://k3s:{s}@db.corp.example/k3s"),
]
FLAG_NEGATIVE = "--server https://k3s.corp.example:6443"
