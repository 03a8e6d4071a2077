"""The HTML report without a browser: golden view model, determinism, CSP, anchors,
capping and the size bound on a 2,000-node cluster."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_findings import big_report, golden_report
from report_support import GENERATED, check_golden, dump

from analyzers.results.models import (
    Report,
)
from reports import html
from reports.html_findings import FULL_BUDGET, MEMBER_ROWS, anchor

VOLATILE = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


def view_json(report: Report) -> str:
    page = dataclasses.asdict(html.view_model(report, GENERATED))
    for key in ("css", "js", "csp", "generated_at"):
        page.pop(key)
    return dump(page)


class Elements(HTMLParser):
    """Every start tag with its attributes, every id, and the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.raw: dict[str, str] = {}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._in = tag
            self.raw[tag] = ""

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.raw[self._in] += data
        else:
            self.text.append(data)

    @property
    def ids(self) -> list[str]:
        return [a["id"] for _, a in self.tags if a.get("id")]  # type: ignore[misc]


def parse(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    parser.close()
    return parser


@pytest.mark.parametrize("name", ["incident", "healthy"])
def test_view_model_matches_golden(name: str, bundle_dirs: dict[str, Path]) -> None:
    found = None if name == "incident" else []
    report = golden_report(bundle_dirs[name], found)
    check_golden(f"{name}-view.json", view_json(report))
    if name == "incident":
        assert report.overview is not None
        check_golden("incident-overview.json", dump(report.overview.model_dump(mode="json")))


def test_verdict_names_the_widest_root_cause_and_its_first_step(
        bundle_dirs: dict[str, Path]) -> None:
    page = html.view_model(golden_report(bundle_dirs["incident"]), GENERATED)
    verdict = page.verdict
    assert (verdict.rule_id, verdict.nodes, verdict.anchor) == (
        "RT002", "gpu-a, gpu-b", "finding-RT002-gpu-a")
    assert [(e.rule_id, e.count) for e in verdict.explains] == [("RT001", 2), ("OP008", 2),
                                                                 ("SC001", 1)]
    assert verdict.command == "ls -l /etc/containerd/conf.d/"
    assert [o.rule_id for o in verdict.others] == ["DRV002", "RT004"]
    assert [g.rule_id for g in page.chain_groups] == ["RT002", "DRV002"]
    # RT002 on gpu-a and gpu-b has one cause: one card with both nodes in its table, and
    # its symptoms one card per cause group. SC001 is explained by both chains: shown
    # under the first, referenced by the second
    rt002, drv002 = page.chain_groups
    assert len(rt002.chains) == 1 and rt002.count == 2
    root = rt002.chains[0].root
    assert root.group is not None
    assert [(r.node, r.id, r.anchor) for r in root.group.rows] == [
        ("gpu-a", "RT002:gpu-a", ""), ("gpu-b", "RT002:gpu-b", "finding-RT002-gpu-b")]
    assert [c.id for c in rt002.chains[0].symptoms] == ["RT001:gpu-a", "OP008:gpu-a",
                                                        "SC001:ml/trainer-0"]
    assert [r.id for r in rt002.chains[0].symptoms[0].group.rows] == [  # type: ignore[union-attr]
        "RT001:gpu-a", "RT001:gpu-b"]
    assert rt002.chains[0].explains == 5
    assert [link.id for link in drv002.chains[0].elsewhere] == ["SC001:ml/trainer-0"]
    assert drv002.chains[0].explains == 1


def test_nothing_wrong_says_so_and_what_was_checked(bundle_dirs: dict[str, Path]) -> None:
    page = html.render(golden_report(bundle_dirs["healthy"], []), generated_at=GENERATED)
    text = " ".join(parse(page).text)
    assert "No problems found." in text
    assert "1 rule(s) passed on 2 GPU node(s) of 3: RT003" in text
    assert "2 rule(s) could not run" in text


def test_rendering_is_deterministic_apart_from_the_timestamp(
        bundle_dirs: dict[str, Path]) -> None:
    report = golden_report(bundle_dirs["incident"])
    first = html.render(report, generated_at=GENERATED)
    second = html.render(golden_report(bundle_dirs["incident"]),
                         generated_at=GENERATED.replace(hour=23))
    assert first != second
    assert VOLATILE.sub("", first) == VOLATILE.sub("", second)


def _digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def test_csp_forbids_requests_and_allows_only_the_inlined_code(
        bundle_dirs: dict[str, Path]) -> None:
    page = html.render(golden_report(bundle_dirs["incident"]), generated_at=GENERATED)
    doc = parse(page)
    meta = [a for t, a in doc.tags if t == "meta" and a.get("http-equiv")]
    assert len(meta) == 1
    policy = meta[0]["content"] or ""
    assert "default-src 'none'" in policy and "unsafe" not in policy
    assert f"script-src '{_digest(doc.raw['script'])}'" in policy
    assert f"style-src '{_digest(doc.raw['style'])}'" in policy
    assert [t for t, _ in doc.tags].count("script") == 1
    assert not [t for t, _ in doc.tags if t in ("link", "img", "iframe", "object", "embed",
                                                 "base", "form", "audio", "video", "source")]
    for _, attrs in doc.tags:
        assert "src" not in attrs and "style" not in attrs
        href = attrs.get("href")
        assert href is None or href.startswith("#"), href
    assert "http://" not in page.replace("http://www.w3.org", "")
    assert "https://" not in page


def test_every_finding_has_a_unique_deep_link(bundle_dirs: dict[str, Path]) -> None:
    report = golden_report(bundle_dirs["incident"])
    doc = parse(html.render(report, generated_at=GENERATED))
    ids = doc.ids
    assert len(ids) == len(set(ids))
    for finding in report.findings:
        assert anchor(finding.id) in ids, finding.id
    assert anchor("RT002:gpu-a") == "finding-RT002-gpu-a"
    targets = {a["href"][1:] for t, a in doc.tags if t == "a" and a.get("href", "#") != "#"}
    assert targets <= set(ids), targets - set(ids)


def test_long_evidence_is_capped_with_a_count(bundle_dirs: dict[str, Path]) -> None:
    report = golden_report(bundle_dirs["incident"])
    page = html.view_model(report, GENERATED)
    cards = [c.root for g in page.standalone_groups for c in g.chains]
    restart = next(c for c in cards if c.rule_id == "RT004")
    evidence = restart.evidence[0]
    assert len(evidence.lines) == 12 and evidence.more_lines == 9


def test_two_thousand_nodes_stay_within_a_few_megabytes() -> None:
    report = big_report(2000)
    page = html.render(report, generated_at=GENERATED)
    assert len(page.encode()) < 3 * 1024 * 1024
    view = html.view_model(report, GENERATED)
    full = sum(1 + len(c.symptoms) for g in view.chain_groups + view.standalone_groups
               for c in g.chains)
    assert full <= FULL_BUDGET
    rt002 = view.chain_groups[0]
    assert (rt002.rule_id, rt002.count) == ("RT002", 2000)
    # one cause on 2,000 nodes: one card, its node table capped, the rest named
    assert (len(rt002.chains), len(rt002.compact), rt002.hidden) == (1, 0, 0)
    table = rt002.chains[0].root.group
    assert table is not None and table.count == 2000
    assert len(table.rows) == MEMBER_ROWS and len(table.rest) == 2000 - MEMBER_ROWS
    # every node is in the matrix (to find and sort): 200 full rows, 1,800 brief ones
    matrix = view.matrix
    assert matrix is not None
    assert (len(matrix.rows), len(matrix.brief), matrix.hidden) == (200, 1800, 0)


def test_suppressed_findings_are_listed_with_their_reason(bundle_dirs: dict[str, Path]) -> None:
    from analyzers.results.models import SuppressedFinding

    report = golden_report(bundle_dirs["incident"])
    hidden = report.by_id()["RT004:gpu-a"]
    report = report.model_copy(update={"suppressed": [SuppressedFinding(
        finding=hidden, reason="known: toolkit rollout <b>", matched="rule RT004",
        until="2026-12-31")]})
    page = html.view_model(report, GENERATED)
    assert page.coverage.suppressed == [("RT004:gpu-a", "known: toolkit rollout <b>",
                                         "2026-12-31")]
    text = " ".join(parse(html.render(report, generated_at=GENERATED)).text)
    assert "Suppressed findings" in text and "known: toolkit rollout <b>" in text
