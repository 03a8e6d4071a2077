"""YAML from the bundle: the safe loader, with hostile documents refused."""

from __future__ import annotations

from typing import Any

import pytest

from bundle.yamldoc import MAX_ALIASES, load_yaml


@pytest.mark.parametrize(("text", "expected"), [
    ("a: 1\nb: [x, 'y z', \"q\"]\n", {"a": 1, "b": ["x", "y z", "q"]}),
    ("a:\n- 1\n- true\n- ~\n", {"a": [1, True, None]}),
    ("a:\n  - b: 1\n    c: {d: 2, 'e': [3]}\n", {"a": [{"b": 1, "c": {"d": 2, "e": [3]}}]}),
    ("url: http://x:80/a # comment\nk: 'it''s'\n", {"url": "http://x:80/a", "k": "it's"}),
    ('{"json": [1, 2]}', {"json": [1, 2]}),
    ("", None),
])
def test_reads_yaml_and_json(text: str, expected: Any) -> None:
    assert load_yaml(text) == expected


def _alias_bomb() -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("text", "message"), [
    ("a:\n b: 1\n  c: 2\n", "line 3"),
    ("a: [1, 2\n", "line 2"),
    ("a: 1\n---\nb: 2\n", "more than one YAML document"),
    ("a: !!python/object/apply:os.system ['true']\n", "line 1"),
    (_alias_bomb(), f"more than {MAX_ALIASES} YAML aliases"),
])
def test_refuses_invalid_and_hostile_documents(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_yaml(text)


def test_refuses_oversized_text() -> None:
    with pytest.raises(ValueError, match="larger than 10 bytes"):
        load_yaml("a: 12345678901\n", max_bytes=10)
