"""GPU product families (``analyzers/knowledge/products.py``): patterns are compiled when
first tried, so each one is checked here."""

from __future__ import annotations

import re

import pytest

from analyzers.knowledge.products import UNLISTED, classify, table


def test_every_family_pattern_compiles() -> None:
    patterns = [p for family in table().families for p in family.patterns]
    assert len(patterns) == 35
    for pattern in patterns:
        re.compile(pattern, re.IGNORECASE)


@pytest.mark.parametrize(("product", "family", "klass"), [
    ("NVIDIA-H100-80GB-HBM3", "Hopper", "datacenter"),
    ("Tesla-T4-SHARED", "Turing / Volta / Pascal data center", "datacenter"),
    ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "Ampere data center", "datacenter"),
    ("NVIDIA RTX A6000", "Professional RTX", "professional"),
    ("NVIDIA GeForce RTX 4090", "GeForce / TITAN", "consumer"),
    ("Foo GPU", None, UNLISTED),
])
def test_products_are_classified_by_the_first_family_that_matches(
        product: str, family: str | None, klass: str) -> None:
    verdict = classify(product)
    assert (verdict.family, verdict.klass) == (family, klass)
