"""docs/schemas/*.schema.json are current, and what gpu-triage writes or reads matches
them: every shipped sample's ``analyze -f json`` validates against the findings schema;
a suppression file is valid to the schema exactly when :func:`analyzers.engine.suppress.parse`
accepts it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analyzers.engine import schemas
from analyzers.engine.suppress import SuppressionError, parse
from gpu_triage.cli import cli

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SAMPLE_DIRS = sorted(p for p in SAMPLES.iterdir() if (p / "manifest.json").is_file())


def _validator(name: str) -> Any:
    jsonschema = pytest.importorskip("jsonschema")  # a test extra; the rest runs without
    schema = json.loads((schemas.DIRECTORY / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_files_are_current() -> None:
    assert schemas.main(["--check"]) == 0


def test_check_finds_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schemas, "DIRECTORY", tmp_path)
    assert schemas.main(["--check"]) == 1                 # absent
    assert schemas.main([]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(schemas.SCHEMAS)
    assert schemas.main(["--check"]) == 0
    (tmp_path / "findings.schema.json").write_text("{}\n", encoding="utf-8")
    assert schemas.main(["--check"]) == 1                 # changed


def test_there_are_samples() -> None:
    assert len(SAMPLE_DIRS) >= 20


@pytest.fixture(scope="module")
def findings() -> Any:
    return _validator("findings.schema.json")


@pytest.mark.parametrize("sample", SAMPLE_DIRS, ids=lambda p: p.name)
def test_sample_report_validates(sample: Path, findings: Any) -> None:
    result = CliRunner().invoke(cli, ["analyze", str(sample), "-f", "json", "-o", "-", "-q"],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    report = json.loads(result.stdout)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in findings.iter_errors(report)]
    assert errors == []


def test_findings_schema_rejects_a_broken_report(findings: Any) -> None:
    result = CliRunner().invoke(cli, ["analyze", str(SAMPLE_DIRS[0]), "-f", "json", "-o", "-",
                                      "-q"], catch_exceptions=False)
    report = json.loads(result.stdout)
    assert findings.is_valid(report)
    report["findings"].append({"rule_id": "RT001"})            # no severity, no id...
    assert not findings.is_valid(report)
    del report["findings"][-1]
    report["summary"]["unknown"] = 1                           # no extra keys
    assert not findings.is_valid(report)


GOOD = [
    '[[suppress]]\nid = "RT004:gpu-a"\nreason = "scheduled restarts"\nuntil = 2027-01-01\n',
    '[[suppress]]\nrule = "CFG002"\nreason = "host driver by design"\n',
    "",
]
BAD = [
    '[[suppress]]\nid = "RT004:gpu-a"\nrule = "RT004"\nreason = "both"\n',
    '[[suppress]]\nreason = "neither"\n',
    '[[suppress]]\nrule = "CFG002"\nreason = " "\n',
    '[[suppress]]\nrule = "CFG002"\n',
    '[[suppress]]\nrule = "cfg2"\nreason = "bad id"\n',
    '[[suppress]]\nid = "RT004"\nreason = "not a finding id"\n',
    '[[suppress]]\nrule = "CFG002"\nreason = "x"\nwhy = "extra key"\n',
    'other = 1\n',
]


@pytest.mark.parametrize("toml", GOOD + BAD)
def test_suppressions_schema_agrees_with_the_parser(toml: str) -> None:
    as_json = json.loads(json.dumps(tomllib.loads(toml), default=str))  # dates as strings
    valid = _validator("suppressions.schema.json").is_valid(as_json)
    try:
        parse(toml, "s.toml")
        parsed = True
    except SuppressionError:
        parsed = False
    assert valid == parsed == (toml in GOOD)
