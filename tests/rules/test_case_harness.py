"""The case harness's inline bundles, its errors, and that the built-in cases can fail.

Each built-in firing case is run again on a healthy base (without the case's own changes,
or instead of its sample) and must then fail, so no case passes whatever the rule does.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from analyzers.engine import casebundle
from analyzers.engine.plugins import LoadedRule, discover
from analyzers.engine.ruletest import Case, CaseFileError, check, load_cases
from gpu_triage.cli import cli

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "rules" / "cases"
RULES: list[LoadedRule] = discover().rules


def _load(tmp_path: Path, text: str, rules: tuple[str, ...] = ("OP002",)) -> list[Case]:
    path = tmp_path / "cases.toml"
    path.write_text(text, encoding="utf-8")
    return load_cases(path, rules)


def _builtin() -> list[Case]:
    return [case for path in sorted(CASES.glob("*.toml"))
            for case in load_cases(path, (path.stem,))]


def _id(case: Case) -> str:
    return f"{case.source.stem}-{case.number}"


BUILTIN = _builtin()


# -- cases must be able to fail -------------------------------------------------------

@pytest.mark.parametrize("case", [c for c in BUILTIN if c.expect], ids=_id)
def test_a_firing_case_fails_on_a_healthy_base(case: Case) -> None:
    """Run on the healthy operator base alone (an inline case without its changes, a
    sample case instead of its sample), every firing case fails."""
    base = case.inline.base if case.inline and case.inline.base else "healthy-operator"
    healthy = dataclasses.replace(case, bundle=None, inline=casebundle.Inline(base))
    failures = check(healthy, RULES).failures
    assert any(f.startswith("expected ") for f in failures), failures


def test_a_renamed_subject_or_a_flipped_status_fails_a_passing_case() -> None:
    case = next(c for c in BUILTIN if c.source.stem == "OP002" and c.expect)
    assert check(case, RULES).passed
    renamed = dataclasses.replace(case, expect=("OP002:gpu-z",))
    assert check(renamed, RULES).failures == [
        "expected OP002:gpu-z, not found",
        "OP002:gpu-b found, not among 'expect' (exact = true)"]
    flipped = dataclasses.replace(case, status=(("OP002", "passed"),))
    assert check(flipped, RULES).failures == ["OP002 is failed, expected passed"]


# -- inline bundles ----------------------------------------------------------------------

def test_patch_merges_by_name_unsets_and_removes(tmp_path: Path) -> None:
    (case,) = _load(tmp_path, '''
[[case]]
base = "healthy-operator"
status = { OP002 = "passed" }
drop = ["nodes/gpu-b/host/uname.txt"]
failed = [{ path = "nodes/gpu-b/host/lspci.txt", error = "lspci: not found" }]

[case.files]
"nodes/gpu-a/host/uname.txt" = "Linux gpu-a\\n"
"cluster/helm/none.json" = { release = "x" }

[[case.patch]]
file = "cluster/pods.json"
name = "nvidia-driver-daemonset-gpu-a"
unset = [["status", "containerStatuses", "nvidia-driver-ctr", "state", "running"]]
[case.patch.merge.status]
containerStatuses = [
  { name = "nvidia-driver-ctr", state = { waiting = { reason = "CrashLoopBackOff" } } },
]

[[case.patch]]
file = "cluster/pods.json"
name = "nvidia-dcgm-exporter-gpu-b"
remove = true

[[case.add]]
file = "cluster/events.json"
item = { kind = "Event", metadata = { name = "e1" } }
''')
    assert case.inline is not None
    root = casebundle.write(case.inline, tmp_path / "b", "here")
    pods = {p["metadata"]["name"]: p
            for p in orjson.loads((root / "cluster/pods.json").read_bytes())["items"]}
    driver = pods["nvidia-driver-daemonset-gpu-a"]["status"]["containerStatuses"]
    assert driver == [{"name": "nvidia-driver-ctr", "ready": True, "restartCount": 0,
                       "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]
    assert "nvidia-dcgm-exporter-gpu-b" not in pods and "nvidia-dcgm-exporter-gpu-a" in pods
    events = orjson.loads((root / "cluster/events.json").read_bytes())
    assert [e["metadata"]["name"] for e in events["items"]] == ["e1"]
    assert (root / "nodes/gpu-a/host/uname.txt").read_text() == "Linux gpu-a\n"
    assert not (root / "nodes/gpu-b/host/uname.txt").exists()
    assert orjson.loads((root / "cluster/helm/none.json").read_bytes()) == {"release": "x"}
    items = orjson.loads((root / "manifest.json").read_bytes())["items"]
    gap = next(i for i in items if i["path"] == "nodes/gpu-b/host/lspci.txt")
    assert (gap["error"], gap["node"], gap["exit_code"]) == ("lspci: not found", "gpu-b", 1)
    assert "nodes/gpu-b/host/uname.txt" not in {i["path"] for i in items}


def test_an_array_in_files_is_a_kubernetes_list_and_in_json_stays_an_array(
        tmp_path: Path) -> None:
    (case,) = _load(tmp_path, '[[case]]\nstatus = { OP002 = "skipped" }\n'
                    '[case.files]\n"cluster/nodes.json" = [{ kind = "Node" }]\n'
                    '[case.json]\n"cluster/helm/x.json" = [{ revision = 1 }]\n')
    assert case.inline is not None
    root = casebundle.write(case.inline, tmp_path / "b", "here")
    assert orjson.loads((root / "cluster/nodes.json").read_bytes()) == {
        "apiVersion": "v1", "kind": "List", "items": [{"kind": "Node"}],
        "metadata": {"resourceVersion": ""}}
    assert orjson.loads((root / "cluster/helm/x.json").read_bytes()) == [{"revision": 1}]


@pytest.mark.parametrize(("body", "message"), [
    ('base = "nope"\nstatus = { OP002 = "passed" }',
     "no base bundle named 'nope'; the bases are gpu-nodes, healthy-operator"),
    ('base = "healthy-operator"\nbundle = "x"\nstatus = { OP002 = "passed" }',
     "give either 'bundle' or an inline bundle"),
    ('files = { "../etc/passwd" = "x" }\nstatus = { OP002 = "passed" }',
     "'files' = '../etc/passwd' is not a path inside a bundle"),
    ('files = { "nodes/gpu-a/host/x.txt" = [{ a = 1 }] }\nstatus = { OP002 = "passed" }',
     "is an array, which only a .json path takes"),
    ('patch = [{ file = "cluster/pods.json", name = "p" }]\nstatus = { OP002 = "passed" }',
     "patch #1: give 'merge' and/or 'unset', or 'remove = true'"),
    ('patch = [{ file = "cluster/pods.json", name = "p", merge = {}, colour = 1 }]\n'
     'status = { OP002 = "passed" }', "patch #1: unknown key(s) colour"),
    ('failed = [{ path = "nodes/a/x.txt" }]\nstatus = { OP002 = "passed" }',
     "failed #1: 'error' (what went wrong collecting it) is required"),
    ('base = "healthy-operator"\nexact = "yes"\nstatus = { OP002 = "passed" }',
     "'exact' must be true or false"),
    ('files = { "a.json" = [] }\njson = { "a.json" = [] }\nstatus = { OP002 = "passed" }',
     "'a.json' is in both 'files' and 'json'"),
])
def test_a_bad_inline_case_names_the_file_and_the_case(tmp_path: Path, body: str,
                                                      message: str) -> None:
    with pytest.raises(CaseFileError) as caught:
        _load(tmp_path, '[[case]]\nname = "ok"\nbase = "gpu-nodes"\n'
              f'status = {{ OP002 = "skipped" }}\n[[case]]\n{body}\n')
    text = str(caught.value)
    assert text.startswith(f"{tmp_path / 'cases.toml'}: [[case]] #2"), text
    assert message in text


@pytest.mark.parametrize(("patch", "message"), [
    ('file = "cluster/pods.json"\nname = "no-such-pod"\nremove = true',
     "patch #1: 0 items named 'no-such-pod' in cluster/pods.json"),
    ('file = "cluster/nope.json"\nname = "x"\nremove = true',
     "patch #1: the bundle has no cluster/nope.json"),
    ('file = "cluster/pods.json"\nname = "nvidia-dcgm-exporter-gpu-a"\n'
     'unset = [["status", "nothing"]]', "unset ['status', 'nothing']: no such key"),
])
def test_a_patch_that_does_not_apply_fails_its_case_by_name(tmp_path: Path, patch: str,
                                                            message: str) -> None:
    (case,) = _load(tmp_path, f'[[case]]\nname = "broken"\nbase = "healthy-operator"\n'
                    f'status = {{ OP002 = "passed" }}\n[[case.patch]]\n{patch}\n')
    failures = check(case, RULES).failures
    assert len(failures) == 1 and failures[0].startswith("cases.toml #1 broken"), failures
    assert message in failures[0]


def test_exact_names_the_finding_it_did_not_expect(tmp_path: Path) -> None:
    (case,) = _load(tmp_path, '''
[[case]]
base = "healthy-operator"
expect = ["RT005:gpu-a"]
exact = true
[case.files]
"nodes/gpu-a/containerd/config-dump.toml" = "version = 2\\ndisabled_plugins = [\\"cri\\"]\\n"
"nodes/gpu-b/containerd/config-dump.toml" = "version = 2\\ndisabled_plugins = [\\"cri\\"]\\n"
''', ("RT005",))
    assert check(case, RULES).failures == [
        "RT005:gpu-b found, not among 'expect' (exact = true)"]


def test_also_runs_a_rule_beside_the_one_under_test(tmp_path: Path) -> None:
    text = ('[[case]]\nbase = "healthy-operator"\nexpect = ["BND002:parse"]\n{also}'
            '[case.files]\n"cluster/pods.json" = "{{not json"\n')
    (alone,) = _load(tmp_path, text.format(also=""), ("BND002",))
    (beside,) = _load(tmp_path, text.format(also='also = ["SC001"]\n'), ("BND002",))
    assert check(alone, RULES).failures == ["expected BND002:parse, not found"]
    assert check(beside, RULES).passed
    (unknown,) = _load(tmp_path, text.format(also='also = ["ZZ999"]\n'), ("BND002",))
    assert "also: ZZ999 is not a loaded rule" in check(unknown, RULES).failures


# -- the CLI and the documentation ----------------------------------------------------------

def test_rules_test_runs_an_inline_case_of_a_local_rule(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    (rules / "cases").mkdir(parents=True)
    example = ROOT / "docs" / "examples" / "site_toolkit.py"
    (rules / "site_toolkit.py").write_text(example.read_text(encoding="utf-8"),
                                           encoding="utf-8")
    (rules / "cases" / "SITE001.toml").write_text('''
[[case]]
name = "fires when the policy turns the toolkit off"
base = "healthy-operator"
expect = ["SITE001:cluster-policy"]
exact = true
[[case.patch]]
file = "cluster/clusterpolicies.json"
name = "cluster-policy"
merge = { spec = { toolkit = { enabled = false } } }

[[case]]
name = "quiet on the base"
base = "healthy-operator"
status = { SITE001 = "passed" }
''', encoding="utf-8")
    result = CliRunner().invoke(cli, ["rules", "test", str(rules)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "PASS  SITE001.toml #1 fires when the policy turns the toolkit off",
        "PASS  SITE001.toml #2 quiet on the base",
        "2 passed, 0 failed"]


def test_the_inline_example_in_writing_rules_passes(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "writing-rules.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", doc, re.S) if "base = " in b]
    assert len(blocks) == 1
    cases = _load(tmp_path, blocks[0], ("OP002", "RT005"))
    assert [c.name for c in cases] == [
        "a deploy label left paused keeps the device plugin off gpu-b",
        "containerd on gpu-a runs with its CRI plugin disabled"]
    assert [check(c, RULES).failures for c in cases] == [[], []]
