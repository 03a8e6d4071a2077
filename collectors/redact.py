"""gpu-triage redaction: customer secrets never leave the cluster.

One module, standard library only (Python 3.8 or newer), shared by everything that writes
bundle bytes: the collector (cluster JSON, env values, container args, ConfigMaps, Helm values,
node files, command lines, logs) and `gpu-triage redact` (an existing bundle, redacted again).

Two kinds of detectors, both counted per kind (never with the value):

* by key: a value under a key that looks secret (`password`, `token`, `auth`, `*_key`, ...)
  in env lists, JSON, YAML-like text (including block scalars, values on the next line and
  `name:`/`value:` pairs), TOML (every string form, quoted and dotted keys, inline tables)
  and `key=value` text;
* by shape: URL user info, Authorization values, JWTs, PEM private keys, well-known token
  prefixes, k3s join tokens, Azure SAS signatures, database DSNs, and the values of command
  line flags known to carry secrets.

Structured formats are redacted inside their parsed structure (JSON parses; TOML is scanned
by a small scanner that knows every string form) so that a redacted file still parses; line
patterns are only the fallback for files that do not parse (templates). docs/security.md
lists every detector, what it does not catch and why.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import re
import threading
from collections.abc import Iterable
from re import Pattern
from typing import Any

REDACTED = "<redacted>"

# ---- key names -------------------------------------------------------------------------------

SECRET_WORDS = "pass|secret|token|key|credential|auth|cert"
SECRET_KEY_RE = re.compile(f"({SECRET_WORDS})", re.IGNORECASE)
# In logs, journals and kernel text only the unambiguous words: `key`, `auth` and `cert` are
# everywhere in evidence there (taint keys, "x509: certificate signed by unknown authority").
STRICT_WORDS = (r"pass(?![a-z])|passw|passphrase|secret|token|credential|api[_-]?key|"
                r"access[_-]?key|private[_-]?key|auth[_-]?key|client[_-]?key|account[_-]?key|"
                r"shared[_-]?access[_-]?key")
STRICT_KEY_RE = re.compile(f"({STRICT_WORDS})", re.IGNORECASE)
# Substrings every match of the key words holds (lower case): a fast test before the regexes.
SECRET_HINTS = ("pass", "secret", "token", "key", "credential", "auth", "cert")
STRICT_HINTS = ("pass", "secret", "token", "credential", "key")
# Keys that name a file or a place, not a secret: key_file, cert_file, --token-file, ca_path.
PATH_KEY_RE = re.compile(r"(?:file|path|dir|directory|_ttl|ttl)$", re.IGNORECASE)
# Keys with a secret-looking word that rules read as evidence: containerd's stream-processor
# `key_model` ("node", "container"), a kubelet's `authentication:`/`authorization:` sections.
NON_SECRET_KEYS = frozenset(["key_model", "authorization_mode", "authorization-mode"])
SECTION_KEYS = frozenset(["authentication", "authorization"])
NOT_SECRET = frozenset(['""', "''", "true", "false", "null", "none", "~", REDACTED,
                        f'"{REDACTED}"', f"'{REDACTED}'", "[]", "{}"])
BLOCK_INDICATOR_RE = re.compile(r"^[|>][-+0-9]*$")  # a YAML block scalar's header
NUMBER_RE = re.compile(r"^[-+]?\d+(?:\.\d+)?$")
# An absolute file path under a secret-looking key in free text (OCICRYPT_KEYPROVIDER_CONFIG=
# /etc/x.conf, --cert-dir /var/lib/kubelet/pki) names a place; the path stays.
PATH_VALUE_RE = re.compile(r"^([\"']?)/[A-Za-z0-9._/-]*\1$")


def secret_key(key: Any, strict: bool = False) -> bool:
    """True when a key (env name, JSON/YAML/TOML key, flag) names a secret."""
    text = str(key).strip("\"'")
    if PATH_KEY_RE.search(text) or text.lower() in NON_SECRET_KEYS:
        return False
    return bool((STRICT_KEY_RE if strict else SECRET_KEY_RE).search(text))


def section_key(key: Any, value: Any) -> bool:
    """An object under a secret-looking key that holds settings or a reference, not secrets:
    a kubelet's `authentication:`/`authorization:`, a `secretKeyRef:`/`secretRef:`."""
    return isinstance(value, dict) and (str(key).lower() in SECTION_KEYS
                                        or str(key).endswith(("KeyRef", "Ref")))


def reference_key(node: dict[str, Any], key: Any) -> bool:
    """`key` of a toleration or an affinity term ({key, operator, effect|values}) or of a
    secretKeyRef/configMapKeyRef ({name, key}): a name, not a secret."""
    if key != "key":
        return False
    others = set(node) - {"key"}
    return bool(others & {"operator", "effect"}) or ("name" in others
                                                     and others <= {"name", "optional"})


def plain_value(value: str) -> bool:
    """Values that are never secrets, whatever their key: empty, booleans and null (quoted
    or not, and with the full stop that ends a sentence in free text: the device plugin's
    `PASS_DEVICE_SPECS: "true"` is not a password) and bare numbers."""
    text = value.strip()
    if text.lower() in NOT_SECRET or BLOCK_INDICATOR_RE.match(text):
        return True
    if NUMBER_RE.match(text):
        return True
    if len(text) > 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]  # a quoted number stays a possible PIN; a quoted boolean does not
    return (text[:-1] if text.endswith(".") else text).lower() in NOT_SECRET


def _key_pattern(words: str) -> str:
    return f"[A-Za-z0-9_.-]{{0,60}}(?:{words})[A-Za-z0-9_.-]{{0,60}}"


def _embedded(words: str) -> Pattern[str]:
    # `key: value`, `key = value`, `--key=value`, `"key": "value"` inside free text.
    return re.compile(
        rf"(?<![A-Za-z0-9_.-])(?P<key>{_key_pattern(words)})(?P<quote>\\?[\"']?)"
        r"(?P<sep>[ \t]*[:=][ \t]*)"
        r"(?P<value>(?:(?:Bearer|Basic|[Tt]oken|Digest|Negotiate)[ \t]+)?(?:\"[^\"\n]*\"|'[^'\n]*'|"
        # a JSON string inside a quoted log field: \"password\":\"value\"
        r"\\\"(?:[^\"\\\n]|\\(?!\"))*\\\"|"
        r"(?:[^\s\"',;&{}\[\]\\]|\\(?!\"))+))",
        re.IGNORECASE,
    )


EMBEDDED_SECRET_RE = _embedded(SECRET_WORDS)
EMBEDDED_STRICT_RE = _embedded(STRICT_WORDS)
BASE64_RE = re.compile(r"[A-Za-z0-9+/]+={0,2}")

# ---- value shapes ------------------------------------------------------------------------------

# (kind, quick substring test or None, pattern, group kept in front of the redaction or None)
_SHAPES: list[tuple[str, tuple[str, ...] | None, Pattern[str], str | None]] = [
    ("pem-private-key", ("PRIVATE KEY",), re.compile(
        r"(?P<keep>-----BEGIN (?P<kind>[A-Z0-9 ]{0,40})PRIVATE KEY(?P<block>(?: BLOCK)?)-----)"
        r"(?:(?!-----END)[\s\S]){0,65536}?"
        r"(?=-----END (?P=kind)PRIVATE KEY(?P=block)-----)"), "keep"),
    ("pem-private-key", ("PRIVATE KEY",), re.compile(
        r"(?P<keep>-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)(?![\s\S]*?-----END)"
        r"[\s\S]+"),
     "keep"),
    ("slack-webhook", ("hooks.slack.com",), re.compile(
        r"(?P<keep>https?://hooks\.slack\.com/(?:services|workflows|triggers)/)"
        r"[A-Za-z0-9/_-]+"), "keep"),
    ("url-userinfo", ("://",), re.compile(
        r"(?P<keep>\b[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/?#@\"'<>\\]{0,256}:)"
        r"[^\s/?#@\"'<>\\]{1,256}(?=@)"), "keep"),
    ("url-userinfo", ("://",), re.compile(
        r"(?P<keep>\b[A-Za-z][A-Za-z0-9+.-]{0,30}://)[A-Za-z0-9_-]{16,256}(?=@)"), "keep"),
    ("dsn-password", ("@",), re.compile(
        r"(?P<keep>(?:^|(?<=[\s=\"'(,]))[A-Za-z0-9._%+-]{1,64}:)(?!//)"
        r"[^\s:/@\"'<>\\]{1,128}(?=@(?!sha\d{3}:)(?:tcp\(|unix\(|[A-Za-z0-9.-]+:\d))"), "keep"),
    ("docker-auth", ('"auth"',), re.compile(
        r'(?P<keep>"auth"[ \t]*:[ \t]*")(?!<redacted>)[A-Za-z0-9+/=]{8,}(?=")'), "keep"),
    ("jwt", ("eyJ",), re.compile(
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), None),
    ("authorization", ("earer", "asic", "EARER", "ASIC"), re.compile(
        r"(?P<keep>\b(?:Bearer|Basic|BEARER|BASIC|bearer|basic)(?:[ \t]+|%20))"
        r"(?=[A-Za-z0-9._~+/=-]{8,})(?=[A-Za-z0-9._~+/=-]{20,}|[A-Za-z._~-]*[0-9+/=])"
        r"(?!<redacted>)[A-Za-z0-9._~+/=-]+"), "keep"),
    ("github-token", ("gh", "github_pat_"), re.compile(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{30,255})\b"), None),
    ("gitlab-token", ("gl",), re.compile(
        r"\bgl(?:pat|ptt|rt|dt|oas|cbt|ft|imt|agent|soat)-[A-Za-z0-9_-]{20,}"), None),
    ("slack-token", ("xox", "xapp-"), re.compile(
        r"\b(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}"), None),
    ("aws-secret-key", ("AKIA", "ASIA"), re.compile(
        r"(?P<keep>\b(?:AKIA|ASIA)[A-Z0-9]{16}\b[^\n]{0,80}?)(?<![A-Za-z0-9/+])"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), "keep"),
    ("aws-access-key", ("AKIA", "ASIA", "ABIA", "ACCA"), re.compile(
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"), None),
    ("azure-sas", ("sig=",), re.compile(
        r"(?P<keep>(?<![A-Za-z0-9_])sig=)(?!<redacted>)[A-Za-z0-9%+/=_-]{16,}"), "keep"),
    ("k3s-token", ("K10",), re.compile(
        r"\bK10[0-9a-f]{16,}::[A-Za-z0-9._-]{1,64}:[A-Za-z0-9._-]+"), None),
    ("kubeadm-token", (".",), re.compile(
        r"(?<![A-Za-z0-9.-])[a-z0-9]{6}\.[a-z0-9]{16}(?![A-Za-z0-9.-])"), None),
    ("microk8s-join-token", (":25000/",), re.compile(
        r"(?P<keep>:25000/)[0-9a-f]{16,}(?:/[0-9a-f]{6,})?"), "keep"),
    ("nvidia-api-key", ("nvapi-",), re.compile(r"\bnvapi-[A-Za-z0-9_-]{20,}"), None),
    ("huggingface-token", ("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{20,}"), None),
    ("google-api-key", ("AIza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), None),
    # Other registries' and services' prefixed tokens: npm, PyPI, Docker Hub, HashiCorp Vault,
    # Stripe live keys, OpenAI keys.
    # Review additions: Stripe test keys, SendGrid (`SG.<22>.<43>`), Google OAuth access
    # tokens (`ya29.`), Databricks (`dapi` + 32 hex), Grafana service accounts (`glsa_`),
    # age secret keys (`AGE-SECRET-KEY-1`).
    ("token-prefix", ("npm_", "pypi-", "dckr_pat_", "hvs.", "_live_", "_test_", "sk-", "SG.",
                      "ya29.", "dapi", "glsa_", "AGE-SECRET-KEY-1"), re.compile(
        r"\b(?:npm_[A-Za-z0-9]{36}|pypi-AgE[A-Za-z0-9_-]{40,}|dckr_pat_[A-Za-z0-9_-]{20,}|"
        r"hvs\.[A-Za-z0-9_-]{24,}|[sr]k_(?:live|test)_[A-Za-z0-9]{20,}|"
        r"sk-(?:proj-)?[A-Za-z0-9_-]{32,}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|"
        r"ya29\.[A-Za-z0-9_-]{20,}|dapi[0-9a-f]{32}(?:-[0-9])?|glsa_[A-Za-z0-9]{32}_[0-9a-fA-F]{8}|"
        r"AGE-SECRET-KEY-1[0-9A-Z]{50,})"),
     None),
    # An HTTP Authorization header with any scheme (`token …`, `Bearer …`, `Digest …`), and
    # Cookie/Set-Cookie headers, to the end of the header value.
    ("authorization", ("uthorization", "UTHORIZATION"), re.compile(
        r"(?P<keep>(?<![A-Za-z0-9_-])(?:[Aa]uthorization|AUTHORIZATION)[ \t]*[:=][ \t]*[\"']?"
        r"[A-Za-z][A-Za-z0-9_-]{0,20}[ \t]+)(?!<redacted>)(?=[A-Za-z0-9._~+/=-]{8,})"
        r"[A-Za-z0-9._~+/=-]+"), "keep"),
    ("cookie", ("ookie", "OOKIE"), re.compile(
        r"(?P<keep>(?<![A-Za-z0-9_-])(?:[Ss]et-|SET-)?(?:[Cc]ookie|COOKIE)[ \t]*:[ \t]*)"
        r"(?!<redacted>)[^\r\n\"'\\]+"), "keep"),
    # PuTTY private key files: the lines after `Private-Lines: N` up to `Private-MAC:`.
    ("putty-private-key", ("Private-Lines:",), re.compile(
        r"(?P<keep>\bPrivate-Lines:[ \t]*[0-9]{1,4}[ \t]*\r?\n)(?!<redacted>)"
        r"(?:(?!Private-MAC:)[A-Za-z0-9+/=\r\n])+"), "keep"),
    # ~/.netrc: `machine HOST login USER password SECRET`
    ("netrc-password", ("machine",), re.compile(
        r"(?P<keep>\bmachine[ \t]+\S+[ \t\n]+login[ \t]+\S+[ \t\n]+password[ \t]+)"
        r"(?!<redacted>)\S+"), "keep"),
]

# Command-line flags that carry a secret (the value follows `=` or a space), documented by:
# k3s server/agent: https://docs.k3s.io/cli/server https://docs.k3s.io/cli/agent
#   (--token/-t, --agent-token, --vpn-auth, --etcd-s3-access-key, --etcd-s3-secret-key,
#   --datastore-endpoint; RKE2 takes the same: https://docs.rke2.io/reference/server_config);
# kubeadm join: --token, --discovery-token, --tls-bootstrap-token, --certificate-key;
# MicroK8s add-node: -t/--token (https://canonical.com/microk8s/docs/command-reference).
SECRET_FLAGS = ("token", "agent-token", "vpn-auth", "etcd-s3-access-key", "etcd-s3-secret-key",
                "etcd-s3-session-token", "datastore-endpoint", "discovery-token",
                "tls-bootstrap-token", "certificate-key", "password", "join-token",
                # review additions: OAuth clients (oauth2-proxy, dex), databases, registries
                "client-secret", "secret-key", "secret-access-key", "api-key", "access-token",
                "auth-token", "passphrase", "docker-password", "bind-password")
SECRET_FLAG_RE = re.compile(
    r"(?P<keep>(?<![\w-])--(?:" + "|".join(re.escape(f) for f in SECRET_FLAGS) +
    r")(?:=|[ \t]+)[\"']?)(?!<redacted>)(?P<value>[^\s\"']+)")
# `-t VALUE` is the short --token of k3s, RKE2 and MicroK8s; only on their command lines.
SHORT_TOKEN_RE = re.compile(
    r"(?P<keep>(?:^|\s)(?:\S*/)?(?:k3s|rke2|microk8s(?:\.add-node| add-node)?)(?:-server|-agent)?"
    r"\b[^\n]*?(?<=\s)-t(?:=|[ \t]+))(?!<redacted>)(?P<value>[^\s\"']+)")
# `-pPASSWORD` of the MySQL/MariaDB clients and `-p PASSWORD` of sshpass; `-u user:password`
# of curl (https://dev.mysql.com/doc/refman/8.0/en/connecting.html ,
# https://curl.se/docs/manpage.html#-u). Only on their own command lines: `-u 1000:1000` of
# `docker run` is a uid:gid.
CLIENT_PASSWORD_RE = re.compile(
    r"(?P<keep>(?:^|[\s\"'=])(?:\S*/)?(?:mysql|mysqladmin|mysqldump|mariadb|sshpass)\b[^\n]*?"
    r"(?<=\s)-p[ \t]*)(?![-<])(?P<value>[^\s\"']+)")
CURL_USER_RE = re.compile(
    r"(?P<keep>(?:^|[\s\"'=])(?:\S*/)?curl\b[^\n]*?(?<=\s)(?:-u|-U|--user|--proxy-user)(?:=|[ \t]*)"
    r"[\"']?[^\s:\"']{1,128}:)(?!<redacted>)(?P<value>[^\s\"']+)")
# Space-separated config directives that hold a password: nslcd.conf `bindpw`, slapd.conf
# `rootpw`, redis.conf `requirepass`/`masterauth`.
DIRECTIVE_RE = re.compile(
    r"(?P<keep>^[ \t]*(?:bindpw|rootpw|requirepass|masterauth)[ \t]+)(?!<redacted>)"
    r"(?P<value>\S+)", re.MULTILINE)
# k0s takes its join token as a positional argument: `k0s worker TOKEN`, `k0s controller TOKEN`
# (https://docs.k0sproject.io/v1.25.2+k0s.0/cli/k0s_worker/).
K0S_TOKEN_RE = re.compile(
    r"(?P<keep>(?:^|\s)(?:\S*/)?k0s[ \t]+(?:worker|controller|server)(?:[ \t]+--?[A-Za-z0-9-]+"
    r"(?:=\S*)?)*[ \t]+)(?P<value>[A-Za-z0-9+/=_-]{32,})")

# A whole-line template directive of a containerd template ({{ template "base" . }}).
TEMPLATE_LINE_RE = re.compile(r"^[ \t]*\{\{.*\}\}[ \t]*$", re.MULTILINE)


def _gunzip_limited(data: bytes, limit: int = 16 << 20) -> bytes:
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
        out = stream.read(limit + 1)
    if len(out) > limit:
        raise ValueError("decompressed data too large")
    return out


def decoded_layers(text: str, depth: int = 0) -> str | None:
    """Text hidden in `text` by base64 (and gzip), up to 3 layers deep; None if not base64 text."""
    compact = "".join(text.split())
    if not 16 <= len(compact) <= (4 << 20) or len(compact) % 4 or not BASE64_RE.fullmatch(compact):
        return None
    try:
        raw = base64.b64decode(compact, validate=True)
        inner = (_gunzip_limited(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
    except (binascii.Error, ValueError, OSError, EOFError):
        return None
    deeper = decoded_layers(inner, depth + 1) if depth < 3 else None
    return inner if deeper is None else inner + "\n" + deeper


USER_PASS_RE = re.compile(r"^[!-9;-~]{1,128}:[!-~]{1,256}$")


def has_embedded_secret(text: str) -> bool:
    """A decoded base64 payload that holds a secret: key=value pairs, a shape, user:password."""
    values = (m.group("value").lower() for m in EMBEDDED_SECRET_RE.finditer(text))
    if any(value not in NOT_SECRET for value in values) or USER_PASS_RE.match(text.strip()):
        return True
    return any(_quick(quick, text) and pattern.search(text) for _, quick, pattern, _ in _SHAPES)


def _quick(quick: tuple[str, ...] | None, text: str) -> bool:
    return quick is None or any(q in text for q in quick)


class CustomPatterns:
    """The customer's own list (`--redact-file`): one literal string per line, or `regex:RE`.
    Blank lines and lines starting with `#` are skipped."""

    def __init__(self, patterns: Iterable[Pattern[str]] = ()) -> None:
        self.patterns = list(patterns)

    @classmethod
    def parse(cls, text: str, origin: str) -> CustomPatterns:
        found = []
        for number, line in enumerate(text.splitlines(), 1):
            entry = line.rstrip("\r\n")
            if not entry.strip() or entry.lstrip().startswith("#"):
                continue
            if entry.startswith("regex:"):
                try:
                    found.append(re.compile(entry[len("regex:"):]))
                except re.error as exc:
                    raise ValueError(
                        f"{origin}:{number}: not a regular expression ({exc})") from None
            else:
                found.append(re.compile(re.escape(entry)))
        return cls(found)


# ---- the redactor ----------------------------------------------------------------------------


class Redactor:
    """Replaces secrets with "<redacted>"; counts what it did per place (`counts`, the
    manifest's categories) and per detector (`kinds`). Thread-safe."""

    def __init__(self, enabled: bool = True, custom: CustomPatterns | None = None) -> None:
        self.enabled = enabled
        self.custom = custom or CustomPatterns()
        self.counts: dict[str, int] = {}
        self.kinds: dict[str, int] = {}
        self._lock = threading.Lock()

    def _hit(self, category: str, kind: str, n: int = 1) -> None:
        if n:
            with self._lock:
                self.counts[category] = self.counts.get(category, 0) + n
                self.kinds[kind] = self.kinds.get(kind, 0) + n

    # ---- free text -----------------------------------------------------------------------

    def scrub(self, value: str, category: str, strict: bool = False,
              objects: bool = False) -> str:
        """Free text (a value, a config file, a log): base64 that hides a secret goes whole;
        keyed values, YAML block and next-line values, env pairs, shapes, secret flags and the
        customer's own patterns lose their values. strict: logs (only the unambiguous key
        words, no YAML rules); objects: Kubernetes objects as YAML text (unambiguous words for
        keys, so that a toleration's `key:` stays, but env `name:`/`value:` pairs by name)."""
        if not self.enabled or not value:
            return value
        hidden = decoded_layers(value)
        if hidden is not None and has_embedded_secret(hidden):
            self._hit(category, "base64-wrapped")
            return REDACTED
        text = value
        if not strict and ("\n" in text) and (":" in text):
            text = self._yaml_lines(text, category, objects)
        keyed = EMBEDDED_STRICT_RE if strict or objects else EMBEDDED_SECRET_RE
        text = self._keyed(text, category, keyed)
        return self.shapes(text, category)

    def _keyed(self, text: str, category: str, pattern: Pattern[str]) -> str:
        lowered = text.lower()  # a cheap test first: most log text holds no key word at all
        words = STRICT_HINTS if pattern is EMBEDDED_STRICT_RE else SECRET_HINTS
        if not any(word in lowered for word in words):
            return text
        hits = [0]

        def replace(match: re.Match[str]) -> str:
            found = match.group("value")
            if (plain_value(found) or PATH_KEY_RE.search(match.group("key"))
                    or PATH_VALUE_RE.match(found)):
                return match.group(0)
            hits[0] += 1
            if found.startswith('\\"'):
                wrapped = '\\"' + REDACTED + '\\"'
            else:
                wrapped = found[0] + REDACTED + found[0] if found[0] in "\"'" else REDACTED
            return match.group("key") + match.group("quote") + match.group("sep") + wrapped

        result = pattern.sub(replace, text)
        self._hit(category, "key-name", hits[0])
        return result

    def shapes(self, text: str, category: str) -> str:
        """Only the value-shape detectors, the secret flags and the customer's patterns."""
        if not self.enabled or not text:
            return text
        for kind, quick, pattern, keep in _SHAPES:
            if _quick(quick, text):
                text = self._sub(pattern, keep, text, category, kind)
        if "--" in text:
            text = self._sub(SECRET_FLAG_RE, "keep", text, category, "secret-flag")
        if "-t" in text and ("k3s" in text or "rke2" in text or "microk8s" in text):
            text = self._sub(SHORT_TOKEN_RE, "keep", text, category, "secret-flag")
        if "k0s" in text:
            text = self._sub(K0S_TOKEN_RE, "keep", text, category, "k0s-join-token")
        if "-p" in text and ("mysql" in text or "mariadb" in text or "sshpass" in text):
            text = self._sub(CLIENT_PASSWORD_RE, "keep", text, category, "secret-flag")
        if "curl" in text and "-" in text:
            text = self._sub(CURL_USER_RE, "keep", text, category, "secret-flag")
        if "pw" in text or "pass" in text or "auth" in text:
            text = self._sub(DIRECTIVE_RE, "keep", text, category, "secret-flag")
        for pattern in self.custom.patterns:
            text = self._sub(pattern, None, text, category, "customer-pattern")
        return text

    def _sub(self, pattern: Pattern[str], keep: str | None, text: str, category: str,
             kind: str) -> str:
        hits = [0]

        def replace(match: re.Match[str]) -> str:
            if not match.group(0) or match.group(0).endswith(REDACTED):
                return match.group(0)
            hits[0] += 1
            return (match.group(keep) if keep else "") + REDACTED

        result = pattern.sub(replace, text)
        self._hit(category, kind, hits[0])
        return result

    # YAML-like text without a YAML parser (the collector has none): a secret key whose value
    # is a block scalar (`password: |`) or sits on the next, deeper line, and `name:`/`value:`
    # pairs (env lists written as YAML) whose name is secret.
    _YAML_KEY = re.compile(
        r"^(?P<indent>[ \t]*)(?P<dash>-[ \t]+)?(?P<key>\"[^\"\n]*\"|'[^'\n]*'|[A-Za-z0-9_.-]+)"
        r"[ \t]*:(?:[ \t]+(?P<rest>[^\n]*?))?[ \t]*$")

    def _yaml_lines(self, text: str, category: str, strict_keys: bool = False) -> str:
        lines = text.split("\n")
        out: list[str] = []
        i = 0
        pending_name: tuple[int, bool] | None = None  # (column of `name:`, secret?)
        while i < len(lines):
            line = lines[i]
            match = self._YAML_KEY.match(line)
            if not match:
                out.append(line)
                i += 1
                continue
            column = len(match.group("indent")) + len(match.group("dash") or "")
            key = match.group("key").strip("\"'")
            rest = (match.group("rest") or "").split(" #")[0].strip()
            if key == "name":
                pending_name = (column, secret_key(rest) and not plain_value(rest))
            elif (key == "value" and pending_name is not None and pending_name[0] == column
                  and pending_name[1] and rest and not plain_value(rest)):
                out.append(line[:match.start("rest")] + REDACTED)
                self._hit(category, "key-name")
                pending_name = None
                i += 1
                continue
            if secret_key(key, strict_keys) and (rest == "" or BLOCK_INDICATOR_RE.match(rest)):
                j = i + 1
                while j < len(lines) and (not lines[j].strip()
                                          or _indent(lines[j]) > column):
                    j += 1
                while j > i + 1 and not lines[j - 1].strip():
                    j -= 1
                body = lines[i + 1:j]
                nested = rest == "" and any(self._YAML_KEY.match(b) or b.lstrip().startswith("-")
                                            for b in body if b.strip())
                if body and not nested:
                    out.append(line)
                    out.append(" " * (column + 2) + REDACTED)
                    self._hit(category, "key-name")
                    i = j
                    continue
            out.append(line)
            i += 1
        return "\n".join(out)

    # ---- structures ----------------------------------------------------------------------

    def structure(self, node: Any, category: str, under_secret: bool = False) -> Any:
        """A copy of parsed JSON with every value under a secret key redacted (nested objects
        keep their shape: only their strings go) and every other string scrubbed by shape."""
        if isinstance(node, list):
            return [self.structure(v, category, under_secret) for v in node]
        if isinstance(node, dict):
            env_like = isinstance(node.get("name"), str) and secret_key(node["name"])
            out = {}
            for key, value in node.items():
                section = section_key(key, value)
                named = section or reference_key(node, key)
                secret = under_secret or (secret_key(key) and not named) or (
                    env_like and key == "value")
                out[key] = self.structure(value, category, secret)
            return out
        if isinstance(node, str):
            if under_secret and not plain_value(node):
                self._hit(category, "key-name")
                return REDACTED
            return self.value_string(node, category)
        return node

    def value_string(self, value: str, category: str) -> str:
        """One string value of a structure: base64 that hides a secret (a Docker `auth`,
        a wrapped config) goes whole, else the value shapes and free-text rules."""
        if not self.enabled or not value:
            return value
        return self.scrub(value, category)

    # ---- Kubernetes objects and Helm values (the collector's cluster side) --------------

    def kubernetes(self, obj: Any, configmaps: bool = False) -> None:
        """In place, for a kubectl List or one object: env values, container args, ConfigMaps,
        the last-applied copy, and every other string by value shape."""
        if not self.enabled:
            return
        items = obj.get("items") if isinstance(obj, dict) else None
        for item in items if isinstance(items, list) else [obj]:
            self._walk(item)
            if isinstance(item, dict) and (configmaps or item.get("kind") == "ConfigMap"):
                self._configmap(item)

    def _walk(self, node: Any) -> None:
        if isinstance(node, list):
            for index, value in enumerate(node):
                if isinstance(value, str):
                    node[index] = self.shapes(value, "object-values")
                else:
                    self._walk(value)
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            if key == "env" and isinstance(value, list):
                self._env_list(value)
            elif key in ("command", "args") and isinstance(value, list):
                node[key] = [self.scrub(v, "args-values") if isinstance(v, str) else v
                             for v in value]
            elif key == "annotations" and isinstance(value, dict):
                self._last_applied(value)
                self._walk(value)
            elif isinstance(value, str):
                node[key] = self.shapes(value, "object-values")
            else:
                self._walk(value)

    def _env_list(self, env: list[Any]) -> None:
        for entry in env:
            value = entry.get("value") if isinstance(entry, dict) else None
            if not isinstance(value, str) or not value:
                continue
            if secret_key(entry.get("name")) and not plain_value(value):
                entry["value"] = REDACTED
                self._hit("env-values", "key-name")
            else:
                entry["value"] = self.scrub(value, "env-values")

    def _last_applied(self, annotations: dict[str, Any]) -> None:
        """kubectl apply keeps a full copy of the object, env values included, in an annotation."""
        key = "kubectl.kubernetes.io/last-applied-configuration"
        text = annotations.get(key)
        if not isinstance(text, str):
            return
        try:
            inner = json.loads(text)
        except ValueError:
            annotations[key] = self.scrub(text, "annotation-values")
            return
        self.kubernetes(inner)
        annotations[key] = json.dumps(inner, separators=(",", ":"))

    def _configmap(self, cm: dict[str, Any]) -> None:
        helm_record = ((cm.get("metadata") or {}).get("labels") or {}).get("owner") == "helm"
        for field in ("data", "binaryData"):
            data = cm.get(field)
            if not isinstance(data, dict):
                continue
            for key, value in list(data.items()):
                if not isinstance(value, str) or not value:
                    continue
                if (secret_key(key) and not plain_value(value)) or (helm_record
                                                                    and key == "release"):
                    data[key] = REDACTED
                    self._hit("configmap-values", "key-name")
                else:
                    data[key] = self.content(key, value, "configmap-values")

    def helm_values(self, values: Any) -> Any:
        """A copy of Helm user values with secret-looking keys redacted at any depth."""
        return self._values(values) if self.enabled else values

    def _values(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self._values(value) for value in node]
        if isinstance(node, str):
            return self.scrub(node, "helm-values")
        if not isinstance(node, dict):
            return node
        out = {}
        env_like = isinstance(node.get("name"), str) and secret_key(node["name"])
        for key, value in node.items():
            named = section_key(key, value) or reference_key(node, key)
            secret = (secret_key(key) and not named) or (
                env_like and key == "value")
            empty = value is None or isinstance(value, (bool, int, float)) or value in ("", [], {})
            if secret and not empty and not (isinstance(value, str) and plain_value(value)):
                out[key] = REDACTED
                self._hit("helm-values", "key-name")
            else:
                out[key] = self._values(value)
        return out

    # ---- files ---------------------------------------------------------------------------

    def file(self, rel: str, data: bytes, category: str = "node-files") -> bytes | None:
        """A file's bytes redacted by content, whatever its name: JSON inside its structure,
        JSON lines line by line, TOML by the scanner (line patterns if it does not parse),
        other text as config text or, for logs (`strict`), with the unambiguous rules only.
        None for binary content (a NUL byte): such a file is listed, never copied."""
        strict = is_log(rel)
        if b"\x00" in data and not strict:
            return None
        if not self.enabled or not data:
            return data
        text = data.decode("utf-8", "surrogateescape")
        return self.content(rel, text, category).encode("utf-8", "surrogateescape")

    def content(self, name: str, text: str, category: str) -> str:
        """Text redacted by what it is: JSON, JSON lines, TOML, logs, other text. `name` (a
        file's path, a ConfigMap key) only tells logs and JSON lines from the rest."""
        strict = is_log(name)
        result = None
        if text.lstrip()[:1] in ("{", "[") and not name.endswith(".jsonl"):
            result = self._json_text(text, category)
        if result is None and name.endswith(".jsonl"):
            result = self._json_lines(text, category)
        if result is None and not strict and looks_toml(name, text):
            result = self.toml(text, category)
        if result is None:
            result = self.scrub(text, category, strict=strict)
        return result

    def _json_text(self, text: str, category: str) -> str | None:
        try:
            parsed = json.loads(text)
        except ValueError:
            return None
        before = sum(self.kinds.values())
        redacted = self.structure(parsed, category)
        if sum(self.kinds.values()) == before:
            return text
        return json.dumps(redacted, indent=2, ensure_ascii=False) + "\n"

    def _json_lines(self, text: str, category: str) -> str:
        """Journal lines: a line any detector would touch is parsed and redacted inside its
        JSON (so that an escaped quote is never cut in half); other lines stay as they are."""
        probe = Redactor(True, self.custom)  # tests lines without counting
        out = []
        for line in text.split("\n"):
            escaped = "\\" in line  # escapes hide shapes from a test of the raw line
            if not line.strip() or (not escaped
                                    and probe.scrub(line, category, strict=True) == line):
                out.append(line)
                continue
            try:
                parsed = json.loads(line)
            except ValueError:
                out.append(self.scrub(line, category, strict=True))
                continue
            before = sum(self.kinds.values())
            redacted = self._strict_structure(parsed, category)
            out.append(line if sum(self.kinds.values()) == before else json.dumps(
                redacted, ensure_ascii=False, separators=(",", ":")))
        return "\n".join(out)

    def _strict_structure(self, node: Any, category: str) -> Any:
        if isinstance(node, list):
            return [self._strict_structure(v, category) for v in node]
        if isinstance(node, dict):
            return {k: self._strict_structure(v, category) for k, v in node.items()}
        if isinstance(node, str):
            return self.scrub(node, category, strict=True)
        return node

    def toml(self, text: str, category: str) -> str:
        """TOML redacted inside its structure; line patterns where it does not scan."""
        masked = TEMPLATE_LINE_RE.sub(lambda m: " " * len(m.group(0)), text)
        try:
            edits = _TomlScanner(masked, self, category).run()
        except _TomlError:
            return self._toml_lines(text, category)
        for start, end, replacement in sorted(edits, reverse=True):
            text = text[:start] + replacement + text[end:]
        return text

    _TOML_LINE = re.compile(
        r"^(?P<lead>[ \t]*(?P<keys>(?:[A-Za-z0-9_-]+|\"[^\"\n]*\"|'[^'\n]*')"
        r"(?:[ \t]*\.[ \t]*(?:[A-Za-z0-9_-]+|\"[^\"\n]*\"|'[^'\n]*'))*)[ \t]*=[ \t]*)"
        r"(?P<value>[^\n]*)$", re.MULTILINE)
    _TOML_LAST_KEY = re.compile(r"(?:[A-Za-z0-9_-]+|\"[^\"\n]*\"|'[^'\n]*')[ \t]*$")

    def _toml_lines(self, text: str, category: str) -> str:
        """The fallback: `key = value` lines whose last key part is secret, multi-line
        strings to their end, inline tables by the keyed rule; then the shapes."""
        out = []
        pos = 0
        for match in self._TOML_LINE.finditer(text):
            if match.start() < pos:
                continue
            last = self._TOML_LAST_KEY.search(match.group("keys"))
            value = match.group("value")
            if value.startswith(('"""', "'''")):
                close = text.find(value[:3], match.start("value") + 3)
                end = len(text) if close < 0 else close + 3
            else:
                end = match.end("value")
            if last and secret_key(last.group(0)) and not value.lstrip().startswith("{"):
                bare = value.split("#")[0].strip() if not value.startswith(('"', "'")) else value
                if plain_value(bare):
                    continue
                out.append(text[pos:match.start("value")] + f'"{REDACTED}"')
                self._hit(category, "key-name")
                pos = end
        out.append(text[pos:])
        return self.scrub("".join(out), category)


    # ---- a whole bundle again (`gpu-triage redact`) ----------------------------------------

    def bundle_file(self, rel: str, data: bytes) -> bytes | None:
        """One file of an existing bundle (format v1, must-gather, troubleshoot), redacted
        as the collector would have: cluster lists by the Kubernetes rules, Helm histories by
        the values rules, node files and logs by content. None for binary content."""
        if rel.endswith(".gz") and data[:2] == b"\x1f\x8b":
            try:
                inner = _gunzip_limited(data, 256 << 20)
            except (ValueError, OSError, EOFError):
                return None
            redacted = self.bundle_file(rel[:-3], inner)
            if redacted is None:
                return None
            return data if redacted == inner else gzip.compress(redacted, mtime=0)
        node = re.match(r"^nodes/[^/]+/(.+)$", rel)
        if node:
            return self.file(node.group(1), data)
        if rel.startswith("logs/") or is_log(rel):
            return self.file(rel, data, "log-values")
        if rel.endswith(".json"):
            try:
                parsed = json.loads(data.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                return self.file(rel, data, "object-values")
            return self._bundle_json(rel, parsed, data)
        if rel.endswith((".yaml", ".yml")):
            if b"\x00" in data:
                return None
            text = data.decode("utf-8", "surrogateescape")
            return self.scrub(text, "object-values", objects=True).encode(
                "utf-8", "surrogateescape")
        return self.file(rel, data, "object-values")

    def _bundle_json(self, rel: str, parsed: Any, data: bytes) -> bytes:
        before = sum(self.kinds.values())
        if rel.startswith("cluster/helm/") and isinstance(parsed, list):
            for entry in parsed:
                if isinstance(entry, dict) and "values" in entry:
                    entry["values"] = self.helm_values(entry["values"])
        elif isinstance(parsed, (dict, list)):
            if rel == "manifest.json" or not isinstance(parsed, dict):
                self._walk(parsed)
            else:
                self.kubernetes(parsed, configmaps="configmap" in rel.lower())
        if sum(self.kinds.values()) == before:
            return data
        return (json.dumps(parsed, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


LOG_PATHS = re.compile(r"(?:^|/)(?:logs|journal)/|(?:^|/)dmesg[^/]*$|\.log$|(?:^|/)log\.txt$|"
                       r"nvidia-smi[^/]*\.(?:xml|txt)$")


def is_log(rel: str) -> bool:
    """Logs, journals, kernel messages and nvidia-smi output: free text programs print."""
    return bool(LOG_PATHS.search(rel))


def looks_toml(rel: str, text: str) -> bool:
    return rel.endswith((".toml", ".tmpl", ".conf")) or bool(
        re.search(r"^[ \t]*\[[^\]\n]+\][ \t]*$", text, re.MULTILINE)
        and re.search(r"^[ \t]*[A-Za-z0-9_\"'.-]+[ \t]*=", text, re.MULTILINE))


# ---- a TOML scanner: where each string is and under which key -------------------------------


class _TomlError(Exception):
    pass


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# The values TOML writes bare: booleans, numbers (inf, nan, hex, dates and times); anything
# else bare is not TOML and sends the file to the line fallback.
_BARE_VALUE = re.compile(r"(?:true|false|[+-]?(?:inf|nan)|[+-]?[0-9][0-9A-Za-z_:.+-]*)"
                         r"(?=[\s,\]\}#]|$)")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\",
            "e": "\x1b"}


def _toml_basic(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _decode_basic(raw: str, multiline: bool) -> str:
    out = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = raw[i + 1:i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in ("u", "U", "x"):
            width = {"u": 4, "U": 8, "x": 2}[nxt]
            digits = raw[i + 2:i + 2 + width]
            if len(digits) != width or not re.fullmatch(r"[0-9A-Fa-f]+", digits):
                raise _TomlError("bad escape")
            try:
                out.append(chr(int(digits, 16)))
            except (ValueError, OverflowError):
                raise _TomlError("bad escape") from None
            i += 2 + width
        elif multiline and re.match(r"[ \t]*\n", raw[i + 1:]):
            i += 1
            while i < len(raw) and raw[i] in " \t\n\r":
                i += 1
        else:
            raise _TomlError("bad escape")
    return "".join(out)


class _TomlScanner:
    """Walks TOML text and records (start, end, replacement) for each string literal to
    redact: under a secret key (the last part of table + dotted key + inline-table keys) the
    literal becomes "<redacted>"; elsewhere its value is scrubbed by shape and re-encoded as
    a basic string where that changed anything. Raises _TomlError where the text is not
    TOML it understands."""

    def __init__(self, text: str, redactor: Redactor, category: str) -> None:
        self.s = text
        self.i = 0
        self.r = redactor
        self.category = category
        self.edits: list[tuple[int, int, str]] = []

    def run(self) -> list[tuple[int, int, str]]:
        table: list[str] = []
        while True:
            self._skip(newlines=True)
            if self.i >= len(self.s):
                return self.edits
            if self.s[self.i] == "[":
                double = self.s.startswith("[[", self.i)
                self.i += 2 if double else 1
                table = self._keys()
                self._expect("]]" if double else "]")
            else:
                keys = self._keys()
                self._expect("=")
                self._value(table + keys)
            self._end_of_line()

    def _skip(self, newlines: bool) -> None:
        s = self.s
        while self.i < len(s):
            ch = s[self.i]
            if ch in " \t\r" or (newlines and ch == "\n"):
                self.i += 1
            elif ch == "#":
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            else:
                return

    def _expect(self, token: str) -> None:
        self._skip(newlines=False)
        if not self.s.startswith(token, self.i):
            raise _TomlError(f"expected {token!r}")
        self.i += len(token)
        self._skip(newlines=False)

    def _end_of_line(self) -> None:
        self._skip(newlines=False)
        if self.i < len(self.s) and self.s[self.i] != "\n":
            raise _TomlError("junk after a value")

    def _keys(self) -> list[str]:
        parts = []
        while True:
            self._skip(newlines=False)
            ch = self.s[self.i:self.i + 1]
            if ch == '"':
                start = self.i
                end = self._basic_end(start)
                parts.append(_decode_basic(self.s[start + 1:end - 1], False))
                self.i = end
            elif ch == "'":
                end = self.s.find("'", self.i + 1)
                if end < 0 or "\n" in self.s[self.i:end]:
                    raise _TomlError("open literal key")
                parts.append(self.s[self.i + 1:end])
                self.i = end + 1
            else:
                match = _BARE_KEY.match(self.s, self.i)
                if not match:
                    raise _TomlError("expected a key")
                parts.append(match.group(0))
                self.i = match.end()
            self._skip(newlines=False)
            if self.s.startswith(".", self.i):
                self.i += 1
                continue
            return parts

    def _basic_end(self, start: int) -> int:
        i = start + 1
        s = self.s
        while i < len(s):
            if s[i] == "\\":
                i += 2
            elif s[i] == '"':
                return i + 1
            elif s[i] == "\n":
                break
            else:
                i += 1
        raise _TomlError("open string")

    def _multiline_end(self, start: int, quote: str) -> int:
        i = start + 3
        s = self.s
        while True:
            found = s.find(quote * 3, i)
            if found < 0:
                raise _TomlError("open multi-line string")
            if quote == '"':
                backslashes = 0
                k = found - 1
                while k >= start + 3 and s[k] == "\\":
                    backslashes += 1
                    k -= 1
                if backslashes % 2:
                    i = found + 1
                    continue
            end = found + 3
            while end < len(s) and s[end] == quote and end - found < 5:
                end += 1
            return end

    def _value(self, path: list[str]) -> None:
        self._skip(newlines=False)
        s, start = self.s, self.i
        if s.startswith('"""', start) or s.startswith("'''", start):
            quote = s[start]
            end = self._multiline_end(start, quote)
            raw = s[start + 3:end - 3]
            if raw.startswith("\n"):
                raw = raw[1:]
            elif raw.startswith("\r\n"):
                raw = raw[2:]
            value = _decode_basic(raw, True) if quote == '"' else raw
            self._string(path, start, end, value)
            self.i = end
        elif s.startswith('"', start):
            end = self._basic_end(start)
            self._string(path, start, end, _decode_basic(s[start + 1:end - 1], False))
            self.i = end
        elif s.startswith("'", start):
            end = s.find("'", start + 1)
            if end < 0 or "\n" in s[start:end]:
                raise _TomlError("open literal string")
            self._string(path, start, end + 1, s[start + 1:end])
            self.i = end + 1
        elif s.startswith("[", start):
            self.i += 1
            while True:
                self._skip(newlines=True)
                if s.startswith("]", self.i):
                    self.i += 1
                    return
                self._value(path)
                self._skip(newlines=True)
                if s.startswith(",", self.i):
                    self.i += 1
                elif not s.startswith("]", self.i):
                    raise _TomlError("bad array")
        elif s.startswith("{", start):
            self.i += 1
            self._skip(newlines=True)
            if s.startswith("}", self.i):
                self.i += 1
                return
            while True:
                keys = self._keys()
                self._expect("=")
                self._value(path + keys)
                self._skip(newlines=True)
                if s.startswith(",", self.i):
                    self.i += 1
                    self._skip(newlines=True)
                    if s.startswith("}", self.i):  # TOML 1.1 allows a trailing comma
                        self.i += 1
                        return
                elif s.startswith("}", self.i):
                    self.i += 1
                    return
                else:
                    raise _TomlError("bad inline table")
        else:
            match = _BARE_VALUE.match(s, start)
            if not match:
                raise _TomlError("expected a value")
            self.i = match.end()

    def _string(self, path: list[str], start: int, end: int, value: str) -> None:
        if path and secret_key(path[-1]) and value and not plain_value(value):
            self.edits.append((start, end, f'"{REDACTED}"'))
            self.r._hit(self.category, "key-name")
            return
        scrubbed = self.r.scrub(value, self.category)
        if scrubbed != value:
            self.edits.append((start, end, _toml_basic(scrubbed)))

