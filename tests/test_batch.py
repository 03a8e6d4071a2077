"""``gpu-triage analyze`` over many bundles: parallel workers, a report per bundle,
``index.jsonl``, errors per bundle, the overall exit code; one bundle works as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kit.bundles import pack_dir
from kit.cli import invoke as _run
from layouts_kit import must_gather_files, troubleshoot_files, write

from analyzers.results.batch_models import IndexRecord
from bundle import Limits
from gpu_triage import batch
from gpu_triage.bundle_paths import expand
from gpu_triage.cli import main

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
INCIDENT = SAMPLES / "incident-toolkit-disabled"
HEALTHY = SAMPLES / "healthy-toolkit-enabled"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _index(path: Path) -> list[IndexRecord]:
    return [IndexRecord.model_validate_json(line)
            for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture()
def fleet(tmp_path: Path) -> Path:
    """A directory of bundles: an archive, an unpacked bundle, and a broken file."""
    root = tmp_path / "fleet"
    root.mkdir()
    pack_dir(INCIDENT, root / "incident.tgz")
    shutil.copytree(HEALTHY, root / "healthy")
    (root / "broken.tgz").write_bytes(b"not an archive")
    (root / "notes.txt").write_text("not a bundle", encoding="utf-8")
    return root


def test_a_directory_of_bundles_gives_reports_and_an_index(fleet: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    code = main(["analyze", str(fleet), "--out-dir", str(out_dir), "--jobs", "2"])
    assert code == 3  # the worst: broken.tgz cannot be read
    records = _index(out_dir / "index.jsonl")
    assert [Path(r.bundle).name for r in records] == ["broken.tgz", "healthy", "incident.tgz"]
    broken, healthy, incident = records
    assert (broken.exit_code, broken.layout) == (3, None)
    assert broken.error is not None and broken.error.startswith("cannot read bundle")
    assert (healthy.exit_code, healthy.high, healthy.critical) == (0, 0, 0)
    assert (incident.exit_code, incident.critical) == (1, 5)
    assert incident.findings_by_rule["RT001"] == 4
    assert "RT001:gpu-c" in incident.finding_ids
    assert (incident.cluster_context, incident.created_at) == ("lab-k8s",
                                                               "2026-11-20T09:30:00Z")
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "healthy.report.html", "healthy.report.json", "incident.report.html",
        "incident.report.json", "index.jsonl"]
    report = json.loads((out_dir / "incident.report.json").read_text(encoding="utf-8"))
    assert report["bundle"]["created_at"] == "2026-11-20T09:30:00Z"
    assert incident.reports == [str(out_dir / "incident.report.html"),
                                str(out_dir / "incident.report.json")]


def test_several_bundles_print_one_line_each_and_progress_on_stderr(tmp_path: Path) -> None:
    code, out, err = _run(["analyze", str(INCIDENT), str(HEALTHY), "--out-dir", "o", "-f",
                           "json", "--jobs", "1", "--skip", "RT004"])
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["BUNDLE", "LAYOUT", "CRIT", "HIGH", "MED", "LOW", "INFO", "EXIT"]
    assert lines[1].startswith(str(INCIDENT)) and lines[1].split()[-1] == "1"
    assert lines[2].startswith(str(HEALTHY)) and lines[2].split()[-1] == "0"
    assert "analysing 2 bundle(s) with 1 worker process(es)" in err
    assert "index: o/index.jsonl" in err
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        "healthy-toolkit-enabled.report.json", "incident-toolkit-disabled.report.json",
        "index.jsonl"]
    healthy = _index(tmp_path / "o" / "index.jsonl")[1]
    assert "RT004" in healthy.rules_skipped and "RT004" not in healthy.findings_by_rule


def test_the_same_stem_twice_gets_its_own_report(tmp_path: Path) -> None:
    jobs = batch.jobs_for([Path("a/bundle.tgz"), Path("b/bundle.tgz"), Path("c/bundle")])
    assert [j.stem for j in jobs] == ["bundle", "bundle-2", "bundle-3"]


def test_parallel_and_serial_runs_write_the_same_index(fleet: Path, tmp_path: Path) -> None:
    bundles, many = expand([fleet])
    assert many
    for jobs, name in ((1, "serial"), (2, "parallel")):
        options = batch.Options(out_dir=tmp_path / name, formats=("json",), fail_on="high",
                                limits=Limits())
        result = batch.run(batch.jobs_for(bundles), options, jobs_limit=jobs)
        assert result.exit_code == 3
    serial = [r.model_dump(exclude={"reports"}) for r in _index(tmp_path / "serial/index.jsonl")]
    parallel = [r.model_dump(exclude={"reports"})
                for r in _index(tmp_path / "parallel/index.jsonl")]
    assert serial == parallel


def test_foreign_layouts_in_a_directory_are_bundles_too(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    write(fleet / "support-bundle-2026-11-20T09_30_00", troubleshoot_files())
    write(fleet / "nvidia-gpu-operator_20261120_0930", must_gather_files())
    (fleet / "README").write_text("two bundles", encoding="utf-8")
    bundles, many = expand([fleet])
    assert many and [p.name for p in bundles] == ["nvidia-gpu-operator_20261120_0930",
                                                  "support-bundle-2026-11-20T09_30_00"]
    code, out, _ = _run(["analyze", str(fleet), "--out-dir", "o", "-j", "1", "-f", "json"])
    layouts = [r.layout for r in _index(tmp_path / "o" / "index.jsonl")]
    assert layouts == ["nvidia must-gather", "replicated troubleshoot"]
    assert code == 1  # RT001 on gpu-a in the troubleshoot bundle


def test_workers_are_bounded_by_the_cpus_and_the_bundles(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(batch, "usable_cpus", lambda: 4)
    assert batch.workers(None, 10) == 4
    assert batch.workers(16, 10) == 4
    assert batch.workers(2, 10) == 2
    assert batch.workers(None, 1) == 1


def test_one_bundle_behaves_as_before(tmp_path: Path) -> None:
    code, out, err = _run(["analyze", str(INCIDENT)])
    assert code == 1
    assert out.startswith("gpu-triage ") and "ROOT CAUSES" in out
    assert (tmp_path / "incident-toolkit-disabled.report.html").exists()
    assert not (tmp_path / "index.jsonl").exists()
    assert err.strip().endswith("HTML report: incident-toolkit-disabled.report.html")


def test_a_directory_with_one_bundle_one_level_down_is_that_bundle(tmp_path: Path) -> None:
    wrapper = tmp_path / "unpacked"
    shutil.copytree(HEALTHY, wrapper / "gpu-triage-lab-20261120T110500Z")
    bundles, many = expand([wrapper])
    assert (bundles, many) == ([wrapper], False)
    code, out, _ = _run(["analyze", str(wrapper), "-f", "json"])
    assert code == 0 and json.loads(out)["bundle"]["cluster"]["context"] == "lab-k8s"


def test_output_file_with_several_bundles_is_a_usage_error() -> None:
    code, out, err = _run(["analyze", str(INCIDENT), str(HEALTHY), "-o", "r.json"])
    assert (code, out) == (2, "")
    assert "--out-dir" in err


def test_the_index_names_rules_that_read_their_input_in_part(tmp_path: Path) -> None:
    damaged = shutil.copytree(HEALTHY, tmp_path / "damaged")
    node = sorted((damaged / "nodes").iterdir())[0]
    (node / "nvidia-smi.xml").write_text("<nvidia_smi_log><gpu>", encoding="utf-8")
    code = main(["analyze", str(HEALTHY), str(damaged), "--out-dir", str(tmp_path / "o"),
                 "-f", "json", "--jobs", "1"])
    assert code == 0
    clean, partial = _index(tmp_path / "o" / "index.jsonl")
    assert clean.rules_partial == []
    assert "DRV006" in partial.rules_partial and "DRV006" not in partial.rules_skipped
