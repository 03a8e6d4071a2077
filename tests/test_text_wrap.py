"""The terminal summary wraps at spaces only: paths, commands, `quoted commands` and a
rule's count stay whole, and every other line fits the width."""

from __future__ import annotations

from reports.text import _wrap

PATH = "nodes/gpu-a/containerd/files/etc/containerd/conf.d/99-nvidia-runtime-config.toml"


def test_words_never_break_and_lines_fit() -> None:
    text = "           summary: " + " ".join(["containerd", PATH, "restarts"] * 4)
    lines = _wrap(text, 60)
    assert " ".join(line.strip() for line in lines) == text.strip()
    assert all(len(line) <= 60 or line.strip() == PATH for line in lines)
    assert all(line.startswith("           ") for line in lines[1:])  # under its label


def test_a_quoted_command_and_a_rule_count_stay_on_one_line() -> None:
    text = ("inspect lines run against `gpu-triage serve /tmp/case 42/bundle.tgz` (start it, "
            "then export the KUBECONFIG it prints); explains: RT001 ×4, OP001 ×4, RT007 ×2")
    lines = _wrap(text, 40)
    assert any("`gpu-triage serve /tmp/case 42/bundle.tgz`" in line for line in lines)
    for count in ("RT001 ×4", "OP001 ×4", "RT007 ×2"):
        assert any(count in line for line in lines), count
    assert not any("\0" in line for line in lines)


def test_a_first_step_gets_a_line_of_its_own() -> None:
    command = "kubectl get node gpu-a -L nvidia.com/gpu.product,nvidia.com/mig.capable"
    assert _wrap(f"           first step: {command}", 50) == [
        "           first step:", f"           {command}"]
    assert _wrap(f"  inspect: {command} --context lab", 50) == [
        "  inspect:", f"  {command} --context lab"]
