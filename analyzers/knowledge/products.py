"""GPU product families and their GPU Operator support, from ``data/gpu_products.toml``."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache

from analyzers.knowledge import packaged

UNLISTED = "unlisted"
_SUFFIX = re.compile(r"(-MIG-[0-9A-Za-z.+-]*|-SHARED)+$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    klass: str
    mig: bool | None
    brands: tuple[str, ...]
    patterns: tuple[str, ...]    # case-insensitive regexes, compiled when first tried


@dataclass(frozen=True, slots=True)
class ProductTable:
    as_of: str
    source: str
    classes: dict[str, str]
    families: tuple[Family, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    product: str
    family: str | None
    klass: str          # a class of the table, or UNLISTED
    mig: bool | None    # False: the family cannot do MIG
    note: str


@cache
def table() -> ProductTable:
    raw = tomllib.loads(packaged.read_toml("gpu_products"))
    families = tuple(
        Family(name=str(item["name"]), klass=str(item["class"]),
               mig=item.get("mig") if isinstance(item.get("mig"), bool) else None,
               brands=tuple(str(b).lower() for b in item.get("brands", [])),
               patterns=tuple(str(p) for p in item.get("patterns", [])))
        for item in raw["family"])
    return ProductTable(as_of=str(raw["as_of"]), source=str(raw["source"]),
                        classes={str(k): str(v) for k, v in raw["classes"].items()},
                        families=families)


@cache
def _pattern(text: str) -> re.Pattern[str]:
    """A family pattern, compiled when first tried: the search stops at the first family
    that matches, and compiling every pattern was most of a lookup's time."""
    return re.compile(text, re.IGNORECASE)


def normalise(product: str) -> str:
    """Upper case, GFD suffixes removed, '-' and '_' as spaces, no leading NVIDIA/Tesla."""
    text = _SUFFIX.sub("", product.strip())
    text = re.sub(r"[-_\s]+", " ", text).strip().upper()
    return re.sub(r"^(NVIDIA |TESLA )+", "", text)


def classify(product: str, brand: str | None = None) -> Verdict:
    data = table()
    text = normalise(product)
    wanted_brand = (brand or "").strip().lower()
    for family in data.families:
        if (wanted_brand and wanted_brand in family.brands) or any(
                _pattern(p).search(text) for p in family.patterns):
            return Verdict(product, family.name, family.klass, family.mig,
                           data.classes.get(family.klass, family.klass))
    return Verdict(product, None, UNLISTED, None,
                   f"not in NVIDIA's support matrix for the GPU Operator (as of {data.as_of})")
