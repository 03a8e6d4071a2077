"""The CDI device names of an ``unresolvable CDI devices`` event (RT013) are read in linear
time: a long run of name characters with no ``/`` after the marker made the name pattern
retry from every position (about 12 s for 40,000 characters, minutes for a megabyte).
No timing is asserted: before the change the large case did not end in a test run.

Real wording: NVIDIA/nvidia-container-toolkit#1239 (``unresolvable CDI devices
management.nvidia.com/gpu=GPU-e78e68c0-…``).
"""

from __future__ import annotations

from analyzers.facts.cdi import requested

REAL = ("failed to inject CDI devices: unresolvable CDI devices "
        "management.nvidia.com/gpu=GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead: unknown")


def test_a_long_run_without_a_slash_ends_with_nothing_found() -> None:
    assert requested("unresolvable CDI devices " + "a" * 1_000_000) == []
    assert requested("unresolvable CDI devices " + "a.b-" * 250_000 + " x") == []


def test_names_after_a_long_run_are_still_read() -> None:
    message = "unresolvable CDI devices " + "a" * 200_000 + " nvidia.com/gpu=0, nvidia.com/gpu=1"
    assert requested(message) == [("nvidia.com/gpu", "0"), ("nvidia.com/gpu", "1")]


def test_the_real_wording_and_word_boundaries() -> None:
    assert requested(REAL) == [
        ("management.nvidia.com/gpu", "GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead")]
    assert requested("unresolvable CDI devices Xnvidia.com/gpu=all") == [
        ("nvidia.com/gpu", "all")]
    assert requested("unresolvable CDI devices a_b/c=1") == [("b/c", "1")]
