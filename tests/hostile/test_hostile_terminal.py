"""The terminal summary shows bundle text without its control characters or escapes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hostile_kit import analyze_path, valid_files
from kit.bundles import manifest as make_manifest
from kit.bundles import write_dir

from reports import render

ESC = "\x1b[2J\x1b[31m\x1b]8;;http://evil.example\x07link\x1b]8;;\x07\x9b1m\u202e\x00"
FORGED = "\nCRITICAL DRV999  forged finding\r"
# What must never reach the terminal: C0/C1 controls (newline aside), bidi overrides.
ACTIVE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _hostile_files() -> dict[str, Any]:
    files = valid_files()
    nodes = files["cluster/nodes.json"]
    nodes["items"][0]["metadata"]["name"] = "gpu-a" + ESC
    nodes["items"][0]["metadata"]["labels"]["evil" + ESC] = "x"
    events = files["cluster/events.json"]
    for event in events["items"]:
        event["message"] = event["message"] + ESC + FORGED
    pods = files["cluster/pods.json"]
    for pod in pods["items"]:
        pod["spec"]["nodeName"] = "gpu-a" + ESC
    policy = files["cluster/clusterpolicies.json"]["items"][0]
    policy["metadata"]["name"] = "cluster-policy" + ESC + FORGED
    files["nodes/gpu-a/dmesg.txt"] = files["nodes/gpu-a/dmesg.txt"].replace(
        "GPU has fallen off the bus.", "GPU has fallen off the bus." + ESC)
    files["nodes/gpu-a/containerd/config-dump.toml"] = "not = [toml" + ESC
    raw = {path: b"" for path in files}
    files["manifest.json"] = make_manifest(
        raw, created_at="2026-11-29T14:00:00Z" + ESC + FORGED,
        cluster={"context": "prod" + ESC, "server_version": "v1.31" + ESC + FORGED})
    return files


def test_terminal_text_has_no_active_characters(tmp_path: Path) -> None:
    report = analyze_path(write_dir(tmp_path / "b", _hostile_files()))
    text = render(report, "text")
    assert report.findings, "the hostile bundle must still produce findings"
    found = sorted({f"U+{ord(c):04X}" for c in ACTIVE.findall(text)})
    assert found == [], text
    assert not any(line.startswith("CRITICAL DRV999") for line in text.splitlines())
    assert "prod" in text.splitlines()[0]
    assert "forged finding" in text  # the text is kept, only made inert


def test_coloured_terminal_text_keeps_only_our_own_escapes(tmp_path: Path) -> None:
    report = analyze_path(write_dir(tmp_path / "b", _hostile_files()))
    text = render(report, "text", color=True)
    ours = re.compile(r"\x1b\[[0-9;]*m")  # click.style's SGR sequences
    assert ACTIVE.findall(ours.sub("", text)) == []
    assert "http://evil.example" not in text
