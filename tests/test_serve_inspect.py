"""``analyze --inspect``: each finding of the text and HTML reports names the kubectl
command that shows its object, and that command, pasted, works against ``gpu-triage
serve`` over the same bundle (the newest kubectl found runs each one)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import serve_kit
from kubectl_kit import kubectl_binaries

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.results.models import Finding, ObjectRef, Report, Severity
from bundle import open_bundle
from gpu_triage.serve.session import Session
from reports import render
from reports.inspect import command


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return serve_kit.build(tmp_path_factory.mktemp("inspect"))


@pytest.fixture(scope="module")
def report(bundle: Path) -> Report:
    with open_bundle(bundle) as opened:
        return analyze(opened, discover().rules)


def _finding(objects: list[ObjectRef], nodes: list[str]) -> Finding:
    return Finding(id="X001:a", rule_id="X001", title="t", severity=Severity.LOW, summary="s",
                   objects=objects, nodes=nodes)


def test_the_command_names_the_first_served_object_else_the_node() -> None:
    pod = ObjectRef(kind="Pod", namespace="gpu-operator", name="p-1")
    helm = ObjectRef(kind="HelmRelease", namespace="gpu-operator", name="gpu-operator")
    assert command(_finding([helm, pod], ["gpu-1"])) == \
        "kubectl describe pod -n gpu-operator p-1"
    assert command(_finding([helm], ["gpu-1"])) == "kubectl describe node gpu-1"
    assert command(_finding([ObjectRef(kind="ClusterPolicy", name="cluster-policy")], [])) == \
        "kubectl describe clusterpolicies.nvidia.com cluster-policy"
    assert command(_finding([helm], [])) is None
    hostile = ObjectRef(kind="Pod", namespace="ns", name="x; rm -rf ~")
    assert command(_finding([hostile], [])) == "kubectl describe pod -n ns 'x; rm -rf ~'"


def test_text_and_html_show_it_only_when_asked(report: Report, bundle: Path) -> None:
    text = render(report, "text", inspect=True)
    shown = [line.split("inspect: ", 1)[1] for line in text.splitlines()
             if line.strip().startswith("inspect: ")]
    expected = [c for f in report.findings if (c := command(f))]
    assert shown and set(shown) <= set(expected)
    assert f"`gpu-triage serve {bundle}`" in text
    assert "inspect:" not in render(report, "text")
    page = render(report, "html", inspect=True)
    assert page.count("Inspect (with <code>gpu-triage serve</code> running)") == len(expected)
    assert "Inspect (with" not in render(report, "html")


@pytest.mark.skipif(not kubectl_binaries(), reason="needs a kubectl binary")
def test_each_inspect_command_works_against_serve(report: Report, bundle: Path,
                                                  tmp_path: Path) -> None:
    kubectl = kubectl_binaries()[-1]
    commands = sorted({c for f in report.findings if (c := command(f))})
    assert any(" node " in c for c in commands) and any(" deployment " in c for c in commands)
    with open_bundle(bundle) as opened, Session(opened) as session:
        config = session.write_kubeconfig(tmp_path / "config")
        for line in commands:
            args = shlex.split(line)
            assert args[0] == "kubectl"
            result = subprocess.run([str(kubectl), "--kubeconfig", str(config), *args[1:]],
                                    capture_output=True, text=True, timeout=60,
                                    env={"HOME": str(tmp_path)})
            assert result.returncode == 0, (line, result.stderr)
            assert re.search(rf"^Name:\s+{re.escape(args[-1])}$", result.stdout, re.M), line
            if args[2] == "deployment":  # its ReplicaSets: never collected, and it says so
                assert result.stderr == ("Warning: gpu-triage bundles do not collect "
                                         "replicasets.apps: this list is empty\n")
