"""The bounded cache of parsed node files: least recently used out, budget in bytes."""

from __future__ import annotations

from bundle.nodecache import NodeCache


def test_keeps_recent_objects_within_the_budget() -> None:
    made: list[str] = []

    def make(key: str) -> str:
        made.append(key)
        return key.upper()

    cache = NodeCache(make, lambda key: 40, budget=100)
    assert [cache.get(k) for k in ("a", "b", "a")] == ["A", "B", "A"]
    assert made == ["a", "b"]
    cache.get("c")  # 120 bytes: "b", the least recently used, goes
    assert len(cache) == 2 and cache.weight == 80
    cache.get("b")
    assert made == ["a", "b", "c", "b"]
    assert cache.evicted == 2


def test_an_object_heavier_than_the_budget_is_still_served() -> None:
    cache = NodeCache(str.upper, lambda key: 10_000, budget=100)
    assert cache.get("x") == "X"
    assert cache.get("y") == "Y"
    assert len(cache) == 1
