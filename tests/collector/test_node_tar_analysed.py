"""``sudo sh node.sh > node.tar``, as collectors/README.md suggests when the collector
cannot reach the cluster, analysed on its own: node.sh runs for real against a fake host
root, its tar stream is written to a file by hand, and the analyzer reads it as one
node's files (``bundle.layouts.nodefiles``)."""

from __future__ import annotations

import json
from pathlib import Path

from collector_support import make_node_root, run_node_script

from bundle import open_bundle
from gpu_triage.cli import main


def test_node_tar_made_by_hand_is_analysed_as_one_node(tmp_path: Path) -> None:
    root = make_node_root(tmp_path, "gpu-a")
    proc = run_node_script(root)
    assert proc.returncode == 0, proc.stderr.decode()
    node_tar = tmp_path / "node.tar"
    node_tar.write_bytes(proc.stdout)
    with open_bundle(node_tar) as opened:
        assert opened.layout == "node files (collectors/node.sh)"
        nodes = {p.split("/")[1] for p in opened.paths if p.startswith("nodes/")}
        (node,) = nodes  # named by the host name uname -a printed
        uname_text = opened.read_bytes(f"nodes/{node}/host/uname.txt")
        assert uname_text is not None and uname_text.split()[1].decode().lower() == node
        assert f"nodes/{node}/dmesg.txt" in opened.paths
        assert not any(p.endswith("steps.tsv") for p in opened.paths)
    out = tmp_path / "r.json"
    code = main(["analyze", str(node_tar), "-f", "json", "-o", str(out)])
    report = json.loads(out.read_text())
    assert code in (0, 1)
    assert report["bundle"]["layout"] == "node files (collectors/node.sh)"
    statuses = {r["rule_id"]: r["status"] for r in report["rules"]}
    assert "error" not in statuses.values()
    assert statuses["RT001"] != "skipped"  # containerd's configuration was read
    assert statuses["SC001"] == "skipped"  # no cluster in a node's tar
