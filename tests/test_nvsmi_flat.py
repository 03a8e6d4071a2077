"""The compact nvidia-smi GPU elements and the line locator answer as before.

``bundle.flatxml.FlatElement`` replaces the ElementTree subtree each GPU used to keep:
on generated trees (repeated and nested tags, attributes, empty and whitespace texts)
and on every committed nvidia-smi.xml, it must find exactly the elements ElementTree
finds. ``nvsmi_health.locate`` now splits a file once for all its readings: it must
give the line the former per-call scan gave, kept below as the reference.
"""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundle import flatxml
from bundle.flatxml import FlatElement, flatten
from bundle.nvsmi import parse_nvidia_smi, parse_xml
from bundle.nvsmi_health import locate

ROOT = Path(__file__).resolve().parent.parent
SMI_FILES = sorted(p for p in ROOT.glob("samples/*/nodes/*/nvidia-smi.xml"))
SMI_FILES += sorted(ROOT.glob("tests/**/nvidia-smi.xml"))
TAGS = ("a", "b", "c", "d.e", "f-g")
TEXTS = (None, "", " ", "\n\t\t", "x", "N/A", " 7 MiB ")


# ---------------------------------------------------------------- FlatElement vs ET


def _number(root: ET.Element) -> None:
    """Give every element a unique ``n`` attribute, so results compare by identity."""
    for index, element in enumerate(root.iter()):
        element.set("n", str(index))


def _paths(depth: int) -> list[str]:
    return ["/".join(p) for size in range(1, depth + 1)
            for p in itertools.product(TAGS, repeat=size)]


PATHS = _paths(3)


def _ids(elements: list[ET.Element] | list[FlatElement]) -> list[str | None]:
    return [e.get("n") for e in elements]


def _preorder(flat: FlatElement) -> list[FlatElement]:
    views, stack = [], [flat]
    while stack:
        view = stack.pop()
        views.append(view)
        stack.extend(reversed(list(view)))
    return views


def assert_answers(twin: ET.Element, view: FlatElement, path: str) -> None:
    found, expected = view.find(path), twin.find(path)
    assert (found.get("n") if found is not None else None) == (
        expected.get("n") if expected is not None else None), path
    assert _ids(view.findall(path)) == _ids(twin.findall(path)), path
    assert view.findtext(path) == twin.findtext(path), path
    assert view.findtext(path, "dflt") == twin.findtext(path, "dflt"), path


def assert_same(tree: ET.Element, flat: FlatElement, paths: list[str],
                below: bool = True) -> None:
    """``flat`` and each element in it (``below``) answer ``paths`` as ElementTree does."""
    twins = list(tree.iter())
    views = _preorder(flat)
    assert len(views) == len(twins)
    for twin, view in zip(twins, views, strict=True):
        assert (view.tag, view.text, view.attrib) == (twin.tag, twin.text, twin.attrib)
        assert view.get("n") == twin.get("n") and view.get("zz", "d") == twin.get("zz", "d")
        assert _ids(list(view)) == _ids(list(twin))
        for path in paths if below or twin is tree else ():
            assert_answers(twin, view, path)


def _tree() -> st.SearchStrategy[ET.Element]:
    def element(children: list[ET.Element], tag: str, text: str | None) -> ET.Element:
        made = ET.Element(tag)
        made.text = text
        made.extend(children)
        return made

    leaves = st.builds(element, st.just([]), st.sampled_from(TAGS), st.sampled_from(TEXTS))
    return st.recursive(leaves, lambda kids: st.builds(
        element, st.lists(kids, max_size=4), st.sampled_from(TAGS), st.sampled_from(TEXTS)),
        max_leaves=25)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(_tree())
def test_flat_elements_find_what_elementtree_finds(tree: ET.Element) -> None:
    _number(tree)
    # Through the parser, as nvidia-smi.xml is read: the texts are the parser's.
    parsed = parse_xml(ET.tostring(tree))
    assert_same(parsed, flatten(parsed), PATHS)


@pytest.mark.parametrize("path", SMI_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_gpu_elements_of_every_committed_file(path: Path) -> None:
    data = path.read_bytes()
    smi = parse_nvidia_smi(data)
    twins = parse_xml(data).findall("gpu")
    assert len(smi.gpus) == len(twins)
    for gpu, twin in zip(smi.gpus, twins, strict=True):
        assert gpu.element.findtext("uuid") == twin.findtext("uuid")
        _number(twin)
        flat = flatten(twin)
        # Every path the GPU holds, asked of the GPU; from each element below it, the
        # paths to its children and grandchildren.
        held = sorted(_held_paths(twin))
        assert_same(twin, flat, held + ["no_such/element"], below=False)
        for element, view in zip(twin.iter(), _preorder(flat), strict=True):
            for child_path in sorted(_held_paths(element, depth=2)):
                assert_answers(element, view, child_path)


def _held_paths(top: ET.Element, depth: int = 64) -> set[str]:
    found: set[str] = set()
    level = [(child, child.tag) for child in top]
    while level and depth:
        found.update(path for _, path in level)
        level = [(child, f"{path}/{child.tag}") for element, path in level for child in element]
        depth -= 1
    return found


def test_gpus_of_one_structure_share_it() -> None:
    smi = parse_nvidia_smi((ROOT / "samples/hgx-no-fabricmanager/nodes/hgx-1/"
                            "nvidia-smi.xml").read_bytes())
    shapes = {id(gpu.element._shape) for gpu in smi.gpus}
    assert len(smi.gpus) == 8 and len(shapes) == 1
    assert smi.gpus[0].element.findtext("uuid") != smi.gpus[1].element.findtext("uuid")


@pytest.mark.parametrize("path", ["", "a/", "/a", "./a", "a//b", "*", "a[1]", "@id", "x:y",
                                  ".//a", "a/.."])
def test_other_elementpath_syntax_is_refused(path: str) -> None:
    flat = flatten(ET.fromstring("<r><a><b/></a></r>"))
    with pytest.raises(ValueError, match="plain child paths"):
        flat.find(path)


def test_deeply_nested_documents_are_read() -> None:
    depth = 50_000
    data = (b"<nvidia_smi_log><gpu id='x'>" + b"<a>" * depth + b"deep" + b"</a>" * depth
            + b"<uuid>GPU-1</uuid></gpu></nvidia_smi_log>")
    gpu = parse_nvidia_smi(data).gpus[0]
    assert gpu.uuid == "GPU-1"
    assert [e.tag for e in gpu.element] == ["a", "uuid"]
    inner = gpu.element.find("/".join(["a"] * 3))
    assert inner is not None and inner.findtext("/".join(["a"] * (depth - 3))) == "deep"


def test_unused_shapes_are_released() -> None:
    flat = flatten(ET.fromstring("<r><only-here-" + "x" * 40 + "/></r>"))
    assert len(flatxml._shapes) >= 1
    key = (flat._shape.tags, flat._shape.counts)
    del flat
    assert key not in flatxml._shapes


# -------------------------------------------------------------------------- locate


def reference_locate(text: str, bus_id: str, path: str) -> tuple[int, str] | None:
    """``locate`` as it was: split and lower-case the text on every call."""
    lines = text.splitlines()
    wanted = f'id="{bus_id}"'.lower()
    start = next((i for i, line in enumerate(lines)
                  if "<gpu " in line.lower() and wanted in line.lower()), None)
    if start is None:
        return None
    index = start
    for segment in path.split("/"):
        found = None
        for i in range(index, len(lines)):
            if i > index and "<gpu " in lines[i]:
                break
            if f"<{segment}>" in lines[i] or f"<{segment} " in lines[i]:
                found = i
                break
        if found is None:
            return None
        index = found
    return index + 1, lines[index].strip()


FRAGMENTS = ['<gpu id="00000000:1B:00.0">', '<GPU id="00000000:1b:00.0">', '<gpu id="X">',
             "<gpu >", "</gpu>", "<fabric>", "<fabric state='x'>", "<state>", "<state>In",
             "</state>", "</fabric>", "<mig_mode>", "<current_mig>N/A</current_mig>",
             "\n", "\r\n", "\r", "\x85", "\u2028", "\x0c", " ", "\t", "İ", "K", "x"]
BUS_IDS = ["00000000:1B:00.0", "00000000:1b:00.0", "X", "x", ""]
LOCATED = ["fabric/state", "state", "fabric", "mig_mode/current_mig", "fabric/state/x"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join),
       st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join))
def test_locate_gives_the_former_answers(first: str, second: str) -> None:
    for text in (first, second, first):  # the second file in between, then the first again
        for bus_id, path in itertools.product(BUS_IDS, LOCATED):
            assert locate(text, bus_id, path) == reference_locate(text, bus_id, path)


@pytest.mark.parametrize("path", SMI_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_locate_on_every_committed_file(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    smi = parse_nvidia_smi(path.read_bytes())
    readings = ["fabric/state", "mig_mode/current_mig", "ecc_errors/volatile/sram_uncorrectable",
                "remapped_rows/remapped_row_pending", "gpu_recovery_action", "uuid", "nothing"]
    for gpu, reading in itertools.product(smi.gpus, readings):
        assert locate(text, gpu.bus_id, reading) == reference_locate(text, gpu.bus_id, reading)
