"""Grouping (analyzers.engine.grouping): the same cause on many nodes is one group with its node
list; a node whose cause differs stands apart; ids, ``diff`` and ``--suppress`` still work
per node; the renderers say each problem once.

The fleet: 400 GPU nodes that all share two problems (a registry drop-in that clobbers the
nvidia runtime, RT002 → RT001 → OP001/OP008, and a containerd restart after a SIGHUP,
RT004); three of them (gpu-0100, gpu-0200, gpu-0300) also logged an Xid 79, and on one
(gpu-0007) containerd was restarted twice, so its RT004 differs from the other 399.
"""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from kit.bundles import write_dir

sys.path.insert(0, str(Path(__file__).resolve().parent / "report_tests"))

import report_bundles as rb  # noqa: E402

from analyzers.engine import (  # noqa: E402
    analyze,
    grouping,  # noqa: E402
    link,
)
from analyzers.engine.diff import compare  # noqa: E402
from analyzers.engine.plugins import discover  # noqa: E402
from analyzers.engine.suppress import apply, parse  # noqa: E402
from analyzers.facts import Facts  # noqa: E402
from analyzers.results.models import Finding, Report, Severity  # noqa: E402
from bundle import open_bundle  # noqa: E402
from reports import render  # noqa: E402

COUNT = 400
NAMES = [f"gpu-{i:04d}" for i in range(COUNT)]
XID_NODES = ["gpu-0100", "gpu-0200", "gpu-0300"]
FIXED = ["gpu-0010", "gpu-0011", "gpu-0012", "gpu-0013", "gpu-0014"]
TWICE = "gpu-0007"
TWICE_JOURNAL = rb.journal(*rb.SIGHUP_RESTART, *[(minutes - 20, ident, message)
                                                 for minutes, ident, message in rb.SIGHUP_RESTART])
SHARED = {"RT002", "RT001", "OP001", "OP008", "RT004"}
XID_DMESG = (
    "2026-11-29T13:40:12,004411+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus.\n"
    "2026-11-29T13:40:12,104411+00:00 NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n")


def fleet_files(fixed: tuple[str, ...] = ()) -> dict[str, Any]:
    """The 400-node fleet; the nodes in ``fixed`` have neither problem."""
    nodes = [rb.node("cp-1", gpus=None, gpu=False)] + [
        rb.node(n, gpus=1 if n in fixed else None) for n in NAMES]
    pods: list[dict[str, Any]] = []
    events = []
    for name in NAMES:
        broken = name not in fixed
        for app, runtime_class in rb.OPERANDS:
            pods.append(rb.operand(app, name, runtime_class=runtime_class,
                                   stuck=broken and runtime_class is not None,
                                   suffix=name[-4:]))
        if broken:
            events.append(rb.event(f"dp-{name}.1", "Pod", rb.NS,
                                   f"nvidia-device-plugin-daemonset-{name[-4:]}",
                                   "FailedCreatePodSandBox", rb.SANDBOX, minutes=1, count=20,
                                   host=name))
    files = rb._cluster(nodes, pods, events)
    for name in NAMES:
        broken = name not in fixed
        files |= rb.containerd_node(name, broken=broken, restarts=broken)
    for name in XID_NODES:
        files[f"nodes/{name}/dmesg.txt"] = XID_DMESG
    files[f"nodes/{TWICE}/journal/containerd.jsonl"] = TWICE_JOURNAL
    return files


def _analyse(path: Path) -> Report:
    with open_bundle(path) as opened:
        return analyze(opened, discover().rules)


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dir(tmp_path_factory.mktemp("fleet") / "fleet", fleet_files())


@pytest.fixture(scope="module")
def fleet(fleet_dir: Path) -> Report:
    return _analyse(fleet_dir)


def _groups(report: Report, rule: str) -> list[tuple[int, list[str]]]:
    return [(len(g.findings), g.nodes) for g in report.groups if g.rule_id == rule]


# -- the fleet ---------------------------------------------------------------------------------


def test_each_shared_problem_is_one_group_listing_every_node(fleet: Report) -> None:
    for rule in SHARED - {"RT004"}:
        assert _groups(fleet, rule) == [(COUNT, NAMES)], rule
    # the node whose containerd restarted twice stands apart
    assert _groups(fleet, "RT004") == [(COUNT - 1, [n for n in NAMES if n != TWICE]),
                                       (1, [TWICE])]
    # every finding is still there, one per node, with its own id
    assert sum(f.rule_id == "RT004" for f in fleet.findings) == COUNT
    assert {f.id for f in fleet.findings if f.rule_id == "RT004"} == {
        f"RT004:{n}" for n in NAMES}


def test_the_three_nodes_with_a_third_problem_stand_apart(fleet: Report) -> None:
    third = [g for g in fleet.groups if set(g.nodes) == set(XID_NODES)]
    assert third and {g.rule_id for g in third} >= {"DRV001"}
    by_id = {f.id: f for f in fleet.findings}
    for group in third:
        assert len(group.findings) == 3
        assert [by_id[f].nodes for f in group.findings] == [[n] for n in XID_NODES]
    # no group of a shared rule was split by the Xid nodes
    assert all(len(g.findings) == COUNT for g in fleet.groups
               if g.rule_id in SHARED - {"RT004"})


def test_groups_partition_the_findings_and_link_by_group(fleet: Report) -> None:
    members = [i for g in fleet.groups for i in g.findings]
    assert sorted(members) == sorted(f.id for f in fleet.findings)
    by_rule = {g.rule_id: g for g in fleet.groups if len(g.findings) == COUNT}
    assert by_rule["RT001"].caused_by == [by_rule["RT002"].id]
    assert by_rule["RT002"].causes == [by_rule["RT001"].id]
    assert set(by_rule["RT001"].causes) >= {by_rule["OP001"].id, by_rule["OP008"].id}
    assert by_rule["RT002"].summary.startswith("On <node>, ")
    assert by_rule["RT002"].id.startswith("RT002~") and len(by_rule["RT002"].id) == 16


def test_group_ids_are_stable_across_runs(fleet: Report, fleet_dir: Path) -> None:
    again = _analyse(fleet_dir)
    assert [g.model_dump() for g in again.groups] == [g.model_dump() for g in fleet.groups]


def test_json_keeps_every_finding_and_adds_groups(fleet: Report) -> None:
    data = json.loads(render(fleet, "json"))
    assert data["schema_version"] == 1
    assert len(data["findings"]) == len(fleet.findings)
    rt004 = [g for g in data["groups"] if g["rule_id"] == "RT004"]
    assert [len(g["findings"]) for g in rt004] == [COUNT - 1, 1]
    assert Report.model_validate(data) == fleet


def test_a_report_without_groups_still_reads(fleet: Report) -> None:
    data = json.loads(render(fleet, "json"))
    del data["groups"]
    assert Report.model_validate(data).groups == []


# -- diff and suppress stay per node -----------------------------------------------------------


def test_diff_against_a_fixed_copy_resolves_exactly_the_fixed_nodes(
        fleet: Report, fleet_dir: Path, tmp_path: Path) -> None:
    after_dir = write_dir(tmp_path / "fixed", fleet_files(tuple(FIXED)))
    after = _analyse(after_dir)
    with open_bundle(fleet_dir) as first, open_bundle(after_dir) as second:
        result = compare(fleet, after, Facts(first), Facts(second))
    assert sorted(f.id for f in result.resolved) == sorted(
        f"{rule}:{node}" for rule in SHARED for node in FIXED)
    assert result.new == [] and result.unverified == []
    # the fixed nodes left their groups; the rest stay grouped
    rest = [n for n in NAMES if n not in FIXED]
    for rule in SHARED - {"RT004"}:
        assert _groups(after, rule) == [(COUNT - len(FIXED), rest)], rule
    assert _groups(after, "RT004") == [(COUNT - len(FIXED) - 1,
                                        [n for n in rest if n != TWICE]), (1, [TWICE])]


SUPPRESS_ONE = """
[[suppress]]
id = "RT004:gpu-0042"
reason = "containerd restart on gpu-0042 was planned (CHG-1)"
"""


def test_suppressing_one_nodes_finding_takes_just_that_node_out_of_its_group(
        fleet: Report) -> None:
    outcome = apply(fleet, parse(SUPPRESS_ONE, "s.toml"), date(2026, 12, 1))
    report = outcome.report
    assert [s.finding.id for s in report.suppressed] == ["RT004:gpu-0042"]
    assert _groups(report, "RT004") == [
        (COUNT - 2, [n for n in NAMES if n not in ("gpu-0042", TWICE)]), (1, [TWICE])]
    assert _groups(report, "RT002") == [(COUNT, NAMES)]
    assert "RT004:gpu-0042" not in {i for g in report.groups for i in g.findings}


# -- the renderers say each problem once -------------------------------------------------------


def test_text_summary_fits_one_screen(fleet: Report) -> None:
    text = render(fleet, "text")
    lines = text.splitlines()
    assert len(lines) <= 80, text  # wrapped to 80 columns: about a screen and a half
    # longer only for a token that cannot be broken (a path) or a command to copy, whole
    long = [line.strip() for line in lines if len(line) > 80]
    assert long and all(" " not in line or line.startswith(("dmesg ", "systemctl "))
                        for line in long), long
    assert sum("RT002  " in line for line in lines) == 1
    text = render(fleet, "text", width=1000)  # what it says, unwrapped
    lines = text.splitlines()
    assert "on 400 node(s): gpu-0000, gpu-0001, gpu-0002, gpu-0003, gpu-0004, gpu-0005 and " \
           "394 more" in text
    assert "on 3 node(s): gpu-0100, gpu-0200, gpu-0300" in text
    assert "explains: RT001 ×400, OP001 ×400, OP006, OP008 ×400" in text
    # the outlier is said once, in its own entry, after the root cause it differs from
    assert "different from the rest" not in text
    assert "on 399 node(s): gpu-0000" in text
    assert "           differs from the largest RT004 group (399 findings)" in lines
    assert text.index("ROOT CAUSES") < text.index("differs from the largest RT004 group")


def test_markdown_names_each_problem_once_with_its_nodes(fleet: Report) -> None:
    md = render(fleet, "md")
    assert md.count("· RT002") == 1
    assert ("Different from the rest: RT004 on gpu-0007 (1 finding(s); 399 others of the "
            "rule share another cause).") in md.splitlines()
    assert "400 nodes" in md
    assert "gpu-0100, gpu-0200, gpu-0300" in md


def test_html_folds_a_group_into_one_card_with_a_node_table(fleet: Report) -> None:
    from reports import html
    from reports.html_findings import anchor

    page = html.view_model(fleet, __import__("datetime").datetime(2026, 12, 1))
    rt002 = next(g for g in page.chain_groups if g.rule_id == "RT002")
    assert len(rt002.chains) == 1
    card = rt002.chains[0].root
    assert card.group is not None and card.group.count == COUNT
    assert [(o.rule_id, o.nodes, o.count, o.of) for o in page.verdict.outliers] == [
        ("RT004", TWICE, 1, COUNT - 1)]
    assert page.verdict.same_cause == COUNT and page.verdict.summary.startswith("On <node>,")
    assert [row.node for row in card.group.rows[:2]] == ["gpu-0000", "gpu-0001"]
    assert card.group.rows[1].anchor == anchor("RT002:gpu-0001")
    text = html.render(fleet)
    assert text.count('id="finding-RT004-gpu-0399"') == 1


# -- grouping rules on hand-made findings ------------------------------------------------------


def _f(rule: str, node: str | None, summary: str, *, caused_by: tuple[str, ...] = (),
       severity: Severity = Severity.HIGH) -> Finding:
    subject = node or "cluster"
    return Finding(id=f"{rule}:{subject}", rule_id=rule, title=f"title {rule}",
                   severity=severity, summary=summary, nodes=[node] if node else [],
                   caused_by=list(caused_by))


def test_a_different_parent_keeps_three_nodes_apart() -> None:
    nodes = [f"n{i:03d}" for i in range(400)]
    clobbered = set(nodes[:3])
    found = [_f("CFG004", None, "The toolkit is disabled in the ClusterPolicy.")]
    for node in nodes:
        if node in clobbered:
            found.append(_f("RT002", node, f"On {node}, a drop-in clobbers the CRI table."))
            parent = f"RT002:{node}"
        else:
            parent = "CFG004:cluster"
        found.append(_f("RT001", node, f"On {node}, no nvidia runtime.", caused_by=(parent,)))
    groups = grouping.group(link(found))
    rt001 = [g for g in groups if g.rule_id == "RT001"]
    assert [(len(g.findings), g.nodes[:3]) for g in rt001] == [(397, nodes[3:6]),
                                                                (3, nodes[:3])]
    cfg004 = next(g for g in groups if g.rule_id == "CFG004")
    rt002 = next(g for g in groups if g.rule_id == "RT002")
    assert rt001[0].caused_by == [cfg004.id] and rt001[1].caused_by == [rt002.id]
    assert cfg004.causes == [rt001[0].id] and rt002.causes == [rt001[1].id]


def test_same_cause_abstracts_node_pod_and_time_but_not_numbers() -> None:
    def restart(node: str, when: str, times: int) -> Finding:
        return Finding(id=f"RT004:{node}", rule_id="RT004", title="t", severity=Severity.LOW,
                       summary=f"On {node}, containerd started {times} time(s) ({when}).",
                       nodes=[node])

    groups = grouping.group([restart("a-1", "2026-11-29 13:20:07", 1),
                             restart("a-10", "2026-11-28T01:00:00Z", 1),
                             restart("a-2", "2026-11-29 13:20:07", 3)])
    assert [g.findings for g in groups] == [["RT004:a-1", "RT004:a-10"], ["RT004:a-2"]]
    assert groups[0].summary == "On <node>, containerd started 1 time(s) (<time>)."


def test_findings_without_nodes_and_other_severities_stay_apart() -> None:
    found = [_f("SC001", None, "pending"), _f("OP006", None, "pending"),
             _f("DRV001", "a", "On a, Xid 79."), _f("DRV001", "b", "On b, Xid 79.",
                                                    severity=Severity.CRITICAL),
             _f("DRV001", "c", "On c, Xid 48.")]
    assert sorted(len(g.findings) for g in grouping.group(found)) == [1, 1, 1, 1, 1]


def test_a_node_name_is_replaced_only_where_it_stands_whole() -> None:
    names = {"gpu-1": grouping.NODE}
    assert grouping.abstract("On gpu-1, see nodes/gpu-1/dmesg.txt and gpu-10, xgpu-1, "
                             "gpu-1.example, gpu-1-b, gpu-1.", names) == (
        "On <node>, see nodes/<node>/dmesg.txt and gpu-10, xgpu-1, gpu-1.example, gpu-1-b, "
        "<node>.")


def test_gpu_uuids_pci_addresses_and_pids_are_identities_but_xid_codes_are_causes() -> None:
    def lost(node: str, uuid: str, bus: str, xid: int, pid: int) -> Finding:
        return Finding(id=f"DRV001:{node}/{bus}", rule_id="DRV001", title="t",
                       severity=Severity.HIGH, nodes=[node],
                       summary=f"On {node}, GPU 3 (NVIDIA H100, GPU-{uuid}) at {bus} reported "
                               f"Xid {xid}; pid={pid}.",
                       remediation=f"dmesg | grep 'NVRM: Xid (PCI:{bus[:-2]}'")

    found = [lost("a", "21f4bc9d-8756-45b0-b361-13208fdb6274", "0000:1b:00.0", 79, 4022),
             lost("b", "d184faa9-b73d-cd7f-0710-700a8b439434", "0000:df:00.0", 79, 4473),
             lost("c", "77232ac2-0cb6-0546-6c76-284dabc6bbc5", "0000:52:00.0", 48, 4022)]
    groups = grouping.group(found)
    assert [g.nodes for g in groups] == [["a", "b"], ["c"]]
    assert groups[0].summary == ("On <node>, GPU <index> (NVIDIA H100, <gpu-uuid>) at <pci> "
                                 "reported Xid 79; pid=<pid>.")


def test_a_report_without_groups_is_shown_one_finding_per_entry(fleet: Report) -> None:
    from reports.view import groups_of

    old = fleet.model_copy(update={"groups": []})
    assert [g.findings for g in groups_of(old)] == [[f.id] for f in fleet.findings]


def test_rules_not_checked_for_one_reason_share_a_line(fleet: Report) -> None:
    lines = render(fleet, "text", width=1000).splitlines()
    assert "  DRV006, DRV007 (skipped: no node collected nvidia-smi.xml)" in lines
    assert not [line for line in lines if line.startswith(("  DRV006 (", "  DRV007 ("))]
