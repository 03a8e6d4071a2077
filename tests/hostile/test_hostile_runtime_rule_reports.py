"""RT011-RT014 on hostile names: markup stays text in HTML and Markdown, and no shell
metacharacter reaches a copyable line outside single quotes.

The sample-based corpus (test_hostile_commands.py) plants payloads in every sample, but
no sample makes RT011-RT014 fire; the report escaping corpus (report_tests) has none of
their subjects either. Here each rule fires on a small bundle whose pod names and
namespaces carry markup and shell metacharacters, and so do the strings only these rules
quote: containerd runtime names (RT011's untyped tables, RT012's default runtime), a
missing binary path from a ``fork/exec`` event (RT011), a CDI device request (RT013) and
the host's cgroup line (RT014). Wordings are those of tests/rules/test_rt011.py ..
test_rt014.py, with their sources.
"""

from __future__ import annotations

import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from kit import analyse
from kit import findings as of
from kit.runtime import dump, event, files, gpu_pod, pod
from test_hostile_commands import MARK, _check_block, _offered

from analyzers.results.models import Report, RuleStatus
from reports import render

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rules"))

from test_rt011 import NAME_UNSET  # noqa: E402
from test_rt012 import SMI_LOG  # noqa: E402
from test_rt013 import UNRESOLVED  # noqa: E402
from test_rt013 import node_files as cdi_node_files  # noqa: E402
from test_rt014 import LOST, node_files  # noqa: E402

XSS = "<img src=x onerror=alert(1)>"
PAYLOAD = f"{XSS}$(touch /tmp/{MARK})`{MARK}`;{MARK}|x&y'q\""
NS = "ml" + PAYLOAD
TOML_NAME = f"nvidia{XSS}$(touch {MARK})"      # no quote or backslash: a TOML key
PATH = f"/usr/bin/nvidia-{XSS.replace(' ', '/')}$(touch${{IFS}}{MARK})"  # no space: fork/exec


def _owned(name: str, node_name: str) -> dict[str, Any]:
    found = gpu_pod(name, node_name, namespace=NS)
    found["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "train"}]
    return found


def _rt011(tmp_path: Path) -> Report:
    untyped = (f'\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."{TOML_NAME}"]\n'
               '  runtime_type = ""\n')
    plugin = pod("nvidia-device-plugin" + PAYLOAD, "gpu-a", namespace=NS,
                 app="nvidia-device-plugin-daemonset", runtime_class="nvidia",
                 phase="Pending", init=1)
    fork = ("failed to create shim task: OCI runtime create failed: fork/exec "
            f"{PATH}: no such file or directory: unknown")
    return analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(binary=PATH) + untyped}}, [plugin],
        [event(plugin["metadata"]["name"], "FailedCreatePodSandBox", NAME_UNSET, namespace=NS),
         event(plugin["metadata"]["name"], "FailedCreatePodSandBox", fork, namespace=NS)]),
                   tmp=tmp_path)


def _rt012(tmp_path: Path) -> Report:
    name = "train" + PAYLOAD
    return analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(default="runc" + TOML_NAME[6:],
                                                       nvidia=None)}},
        [gpu_pod(name, "gpu-a", namespace=NS)], logs={f"{NS}/{name}/main": SMI_LOG},
        policy=None), tmp=tmp_path)


def _rt013(tmp_path: Path) -> Report:
    name = "train" + PAYLOAD
    return analyse(files(
        {"gpu-a": cdi_node_files("GPU-466be1f8-6148-1a27-a450-592604f3df54")},
        [gpu_pod(name, "gpu-a", namespace=NS)],
        [event(name, "Failed", UNRESOLVED + f" {XSS}", namespace=NS)]), tmp=tmp_path)


def _rt014(tmp_path: Path) -> Report:
    name = "train" + PAYLOAD
    cgroup = node_files()["host/cgroup.txt"] + f"containerd: {PAYLOAD} SystemdCgroup = true\n"
    return analyse(files(
        {"gpu-a": node_files(cgroup=cgroup)}, [_owned(name, "gpu-a")],
        logs={f"{NS}/{name}/main": LOST}), tmp=tmp_path)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


@pytest.mark.parametrize("rule, build", [("RT011", _rt011), ("RT012", _rt012),
                                         ("RT013", _rt013), ("RT014", _rt014)])
def test_hostile_names_stay_data(tmp_path: Path, rule: str, build: Any) -> None:
    report = build(tmp_path)
    assert [r.rule_id for r in report.rules if r.status is RuleStatus.ERROR] == []
    finding = of(report, rule)[f"{rule}:gpu-a"]
    assert XSS in finding.summary or any(XSS in e.excerpt for e in finding.evidence)

    page = render(report, "html")
    tags = _Tags()
    tags.feed(page)
    assert "img" not in tags.tags and tags.tags.count("script") == 1
    assert "&lt;img src=x onerror=alert(1)&gt;" in page

    markdown = render(report, "md")
    outside = "".join(part for i, part in enumerate(markdown.split("```")) if i % 2 == 0)
    # markup from the bundle arrives backslash-escaped (CommonMark shows it as text)
    assert re.search(r"(?<!\\)<img", outside) is None
    assert "\\<img src=x onerror=alert(1)\\>" in outside

    assert json.loads(render(report, "json"))["findings"]
    for fmt, blocks in _offered(report).items():
        for lines in blocks:
            _check_block(f"{rule} {fmt}", lines)
    # the rule's own remediation refuses what is not a name or a plain path
    if rule == "RT011":
        assert "# not offered: the file path in the bundle is not a plain file path: " \
               in finding.remediation
    if rule == "RT014":
        assert "# not offered: the namespace in the bundle is not a valid Kubernetes name: " \
               in finding.remediation
        assert "delete pod" not in finding.remediation
