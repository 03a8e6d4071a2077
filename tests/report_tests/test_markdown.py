"""The Markdown summary for a ticket comment: golden files, size bound, escaping."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_findings import big_report, golden_report
from report_support import check_golden

from analyzers.results.models import Report
from reports import markdown, render


@pytest.mark.parametrize("name", ["incident", "healthy"])
def test_markdown_matches_golden(name: str, bundle_dirs: dict[str, Path]) -> None:
    report = golden_report(bundle_dirs[name], None if name == "incident" else [])
    check_golden(f"{name}.md", render(report, "md", html_name="bundle.report.html"))


def test_markdown_leads_with_the_verdict_and_the_cluster(bundle_dirs: dict[str, Path]) -> None:
    text = render(golden_report(bundle_dirs["incident"]), "md", html_name="x.report.html")
    lines = text.splitlines()
    assert lines[0] == "### gpu-triage: prod-east (Kubernetes v1.37.1)"
    # its SC009 ended in error: the comment says first that the analysis is incomplete
    assert lines[2] == ("**INCOMPLETE ANALYSIS: 1 rule(s) ended in error (SC009); what they "
                        "check was not judged, so findings may be missing.**")
    assert lines[4].startswith("**Verdict — CRITICAL RT002 on gpu-a, gpu-b:**")
    assert "It explains 5 other finding(s): OP008 ×2, RT001 ×2, SC001." in lines
    assert ("4 GPU node(s) of 5 · GPUs: 4 physical, 2 advertised, 1 allocatable, "
            "1 assigned.") in lines
    assert any(line.startswith("GPU Operator 26.3.1 (**Deprecated**) · containerd differs: "
                               "1.7.27 ×3, 2.0.4 ×1") for line in lines)
    assert "Rules: 1 passed, 6 failed, 1 skipped, 1 error; collection gaps: 1." in text
    assert text.rstrip().endswith("attached `x.report.html`.")


def test_markdown_stays_comment_sized_on_a_big_cluster() -> None:
    text = render(big_report(2000), "md")
    assert len(text) <= markdown.MAX_CHARS
    assert "RT002 ×2000" in text
    assert text.count("####") <= markdown.TOP


def test_markdown_escapes_everything_from_the_bundle(analysed: dict[str, Report]) -> None:
    text = render(analysed["hostile"], "md")
    outside = "".join(part for i, part in enumerate(text.split("```")) if i % 2 == 0)
    assert "<script>" not in outside and "<img" not in outside
    assert "\x1b" not in text and "\u202e" not in text
    assert "](" not in outside.replace("\\](", "")
