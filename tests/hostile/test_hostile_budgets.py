"""Work budgets of the structured parsers: TOML, JSON lists, containerd import globs.

Each bomb of ``bombs.py`` in this area is analysed at full size through the CLI and
ends in exactly one recorded problem per over-budget file (path, kind, the limit in
the message), exit code 0 and no rule in ``error``; the rules that read the refused
file run on what remains. Then the limits themselves: input just under each one
parses exactly as before, input just over it is refused, and the scan and the glob
matcher agree with their references on generated input.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import orjson
import pytest
from bombs import deep_json, deep_toml, dotted_key, empty_pods, import_glob
from hostile_kit import (
    HOSTILE,
    analyse_json,
    assert_no_rule_errors,
    problems_of,
    statuses,
    valid_files,
)
from hypothesis import given
from hypothesis import strategies as st
from kit.bundles import kube_list, write_dir

import bundle.jsonsafe
import bundle.reader
from analyzers.facts import containerd_merge
from analyzers.facts.containerd_merge import (
    Clobber,
    _name_matches,
    _pattern_chunks,
    corrected_dropin,
    emulate,
)
from bundle import open_bundle
from bundle.tomlsafe import MAX_TOML_BYTES, MAX_TOML_DEPTH, TomlRefused, loads, over_budget

NODE = "nodes/gpu-a/"
FILES = NODE + "containerd/files"
DEPTH = ("TOML nested deeper than 64 levels (tables, dotted key parts, arrays and inline "
         "tables together); not parsed")
DIGITS = "an integer has more than 4300 digits, the most Python converts; not parsed"
CRI = "io.containerd.grpc.v1.cri"
MAIN = "/etc/containerd/config.toml"


# --------------------------------------------------------------------------- the bombs


def test_dotted_key_bomb_is_refused(tmp_path: Path) -> None:
    code, report = analyse_json(dotted_key(tmp_path), tmp_path)
    assert code == 0
    assert problems_of(report) == [
        (FILES + "/etc/containerd/conf.d/99-x.toml", "refused", "line 1", DEPTH)]
    assert_no_rule_errors(report)
    # The rules that read the copied files run on what remains and say that it was only
    # part of their input (analyzers/engine/coverage.py): "passed" would read as checked.
    status = statuses(report)
    assert (status["RT002"], status["RT003"]) == ("partial", "skipped")  # (no config dump)


def test_deep_toml_bomb_is_refused(tmp_path: Path) -> None:
    code, report = analyse_json(deep_toml(tmp_path), tmp_path)
    assert code == 0
    assert problems_of(report) == [
        (NODE + "containerd/config-dump.toml", "refused", None, DIGITS),
        (FILES + "/etc/containerd/conf.d/99-x.toml", "refused", "line 1", DEPTH)]
    assert_no_rule_errors(report)
    # Without a readable config dump nothing of the loaded configuration can be judged;
    # RT002 judged the copied files that remained.
    status = statuses(report)
    assert [status[r] for r in ("RT001", "RT002", "RT003", "RT005")] == [
        "skipped", "partial", "skipped", "skipped"]


def test_deep_json_cdi_spec_costs_nothing(tmp_path: Path) -> None:
    """CDI specs are only searched as text (RT006): a 100,000-deep array in one is no
    problem of this area (the journal line of the same bomb is another's)."""
    code, report = analyse_json(deep_json(tmp_path), tmp_path)
    assert code == 0
    assert [p for p in problems_of(report) if "/cdi/" in p[0]] == []
    assert_no_rule_errors(report)


@pytest.mark.parametrize("count", [4_000_000, 22_000_000])
def test_empty_pods_bombs_are_refused_before_parsing(tmp_path: Path, count: int) -> None:
    code, report = analyse_json(empty_pods(tmp_path, count), tmp_path)
    assert code == 0
    size = len(b'{"kind":"List","items":[]}') + 3 * count - 1
    assert problems_of(report) == [(
        "cluster/pods.json", "refused", None,
        f"up to {count + 2:,} JSON objects and arrays in {size:,} bytes, over the limit of "
        "one per 16 bytes for a file over 1 MiB; not parsed")]
    assert_no_rule_errors(report)
    status = statuses(report)
    assert status["SC001"] == "skipped"  # no pod could be read, so no pending GPU pod


def test_import_glob_bomb_matches_in_linear_time(tmp_path: Path) -> None:
    code, report = analyse_json(import_glob(tmp_path), tmp_path)
    assert code == 0
    assert problems_of(report) == []
    assert_no_rule_errors(report)


def test_import_glob_bomb_pattern_matches_like_a_regex() -> None:
    pattern = "*a" * 8 + "b.toml"
    name = "a" * 200 + ".toml"
    files = {MAIN: f'version = 2\nimports = ["/etc/containerd/conf.d/{pattern}"]\n',
             f"/etc/containerd/conf.d/{name}": "version = 2\n",
             "/etc/containerd/conf.d/" + "a" * 200 + "b.toml": "version = 2\n"}
    result = emulate(files, (1, 7, 27))
    assert result.load_order == (MAIN, "/etc/containerd/conf.d/" + "a" * 200 + "b.toml")
    assert (result.load_error, result.refused) == (None, None)


# --------------------------------------------------------------------------- TOML limits


def test_toml_depth_limit_is_exact() -> None:
    inside = "a = " + "[" * (MAX_TOML_DEPTH - 1) + "]" * (MAX_TOML_DEPTH - 1)
    assert loads(inside) == tomllib.loads(inside)
    over = "a = " + "[" * MAX_TOML_DEPTH + "]" * MAX_TOML_DEPTH
    with pytest.raises(TomlRefused, match=re.escape(DEPTH)):
        loads(over)


@pytest.mark.parametrize(("text", "depth"), [
    (".".join(["k"] * 64) + " = 1\n", 64),
    ("[" + ".".join(["t"] * 60) + "]\n" + "a.b.c.d = 1\n", 64),
    ("[[" + ".".join(["t"] * 60) + "]]\n" + "x = {a = [[1]]}\n", 64),
    ('"q.q".' + ".".join(['"k"'] * 62) + " = 'v'\n", 63),
])
def test_keys_and_headers_count_to_the_depth(text: str, depth: int) -> None:
    assert over_budget(text, max_depth=depth) is None
    assert loads(text) == tomllib.loads(text)
    refused = over_budget(text, max_depth=depth - 1)
    assert refused is not None and refused.line is not None


def test_integer_digits_limit() -> None:
    assert loads("x = " + "9" * 4300) == {"x": int("9" * 4300)}
    with pytest.raises(TomlRefused, match=re.escape(DIGITS)):
        loads("x = " + "9" * 4301)


def test_toml_size_limit() -> None:
    text = "a = 1\n#" + "x" * (MAX_TOML_BYTES - 7)
    assert len(text) == MAX_TOML_BYTES
    assert loads(text) == {"a": 1}
    with pytest.raises(TomlRefused, match="TOML text of 1,048,577 characters is over the "
                                           "limit of 1,048,576; not parsed"):
        loads(text + "x")


def test_refusals_are_raised_again_from_the_memo() -> None:
    text = "a = " + "[" * 100 + "]" * 100 + "\n"
    for _ in range(2):
        with pytest.raises(TomlRefused) as caught:
            loads(text)
        assert (str(caught.value), caught.value.line) == (DEPTH, 1)
    for _ in range(2):
        with pytest.raises(tomllib.TOMLDecodeError, match="at end of document"):
            loads("a = [")


@pytest.mark.parametrize("text", [
    'a = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["\n',
    "a = '{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{'\n",
    'a = """\n' + "[" * 80 + '\n"""\n',
    "a = '''\n" + "[" * 80 + "\n'''\n",
    "# " + "[" * 80 + "\na = 1\n",
    'a = """x\\"""' + "[" * 80 + '"""\n',
    "a = [\n  1.5, # [[[[\n  2.5e3,\n]\nb = 1979-05-27T07:32:00Z\n",
    ".".join(["x.y"] * 32) + "= 1\n",
])
def test_brackets_in_strings_and_comments_do_not_count(text: str) -> None:
    if text.startswith("x.y"):  # 64 parts, the last dotted key allowed
        assert over_budget(text) is None
        return
    assert over_budget(text, max_depth=3) is None
    assert loads(text) == tomllib.loads(text)


def test_unterminated_strings_stop_the_scan_and_tomllib_refuses() -> None:
    for text in ('a = "x\n' + "[" * 100, "a = '''" + "[" * 100, 'a = """\\"' + '\\"' * 50):
        assert over_budget(text) is None
        with pytest.raises(tomllib.TOMLDecodeError):
            loads(text)


def _inline(value: object, newline: str = "") -> str:
    """TOML for ``value``: inline tables, arrays over lines when ``newline`` is given."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + newline + f",{newline} ".join(_inline(v, newline) for v in value) + "]"
    return orjson.dumps(value).decode() if isinstance(value, str) else str(value).lower()


def _depth(value: object) -> int:
    """Depth as the budget counts it: each key part and each array is one level."""
    if isinstance(value, dict):
        return max((1 + _depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


_KEYS = st.sampled_from(["a", "b", "c-d", "e_1", '"q.[x]"', "'l{'"])
_SCALARS = st.one_of(st.integers(-10**6, 10**6), st.booleans(),
                     st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=5),
                     st.sampled_from(["[[", "]]", "{", "#x", "'''", '"""']))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)), max_leaves=12)


@HOSTILE
@given(st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=3),
       st.sampled_from(["", "\n", " # [{\n"]))
def test_scan_depth_is_the_depth_of_the_data(document: dict[str, object], newline: str) -> None:
    text = "".join(f"{key} = {_inline(value, newline)}\n" for key, value in document.items())
    depth = _depth(document)
    assert over_budget(text, max_depth=depth) is None
    if depth > 0:
        assert over_budget(text, max_depth=depth - 1) is not None
    assert loads(text) == tomllib.loads(text)


# --------------------------------------------------------------------------- JSON limits


def test_dense_json_under_the_floor_or_the_density_parses(tmp_path: Path) -> None:
    small = b'{"kind":"List","items":[' + b",".join([b"{}"] * 100_000) + b"]}"
    assert len(small) <= bundle.jsonsafe.DENSE_FLOOR
    item = b'{"metadata":{"name":"' + b"p" * 8 + b'"}}'  # 2 objects in 33 bytes with its ","
    padded = b'{"kind":"List","items":[' + b",".join([item] * 40_000) + b"]}"
    assert len(padded) > bundle.jsonsafe.DENSE_FLOOR
    assert (padded.count(b"{") + padded.count(b"[")) * 16 <= len(padded)
    for body, count in ((small, 100_000), (padded, 40_000)):
        root = write_dir(tmp_path / str(len(body)), {"cluster/pods.json": body})
        with open_bundle(root) as opened:
            assert len(opened.cluster.pods) == count
            assert opened.problems == ()


def test_json_just_over_the_density_is_refused(tmp_path: Path) -> None:
    item = b'{"metadata":{"name":"' + b"p" * 6 + b'"}}'  # 2 objects in 31 bytes with its ","
    body = b'{"kind":"List","items":[' + b",".join([item] * 40_000) + b"]}"
    assert (body.count(b"{") + body.count(b"[")) * 16 > len(body) > bundle.jsonsafe.DENSE_FLOOR
    with open_bundle(write_dir(tmp_path / "b", {"cluster/pods.json": body})) as opened:
        assert opened.cluster.pods == []
        (problem,) = opened.problems
        assert (problem.path, problem.kind) == ("cluster/pods.json", "refused")
        assert "over the limit of one per 16 bytes for a file over 1 MiB" in problem.message


@pytest.mark.parametrize("count", [1000, 1001])
def test_list_items_over_the_cap_are_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             count: int) -> None:
    monkeypatch.setattr(bundle.reader, "MAX_LIST_ITEMS", 1000)
    pods = [{"kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "n"}}
            for i in range(count)]
    helm = [{"revision": i, "status": "superseded"} for i in range(count)]
    files = {"cluster/pods.json": kube_list(*pods), "cluster/helm/r.json": helm}
    with open_bundle(write_dir(tmp_path / "b", files)) as opened:
        assert [p.name for p in opened.cluster.pods] == [f"p{i}" for i in range(1000)]
        assert len(opened.cluster.helm["r"]) == 1000
        got = [(p.path, p.kind, p.where, p.message) for p in opened.problems]
    if count == 1000:
        assert got == []
    else:
        assert got == [
            ("cluster/helm/r.json", "refused", "/1000", "1,001 revisions, over the limit of "
             "1,000 per list: the revisions after the first 1,000 were ignored"),
            ("cluster/pods.json", "refused", "/items/1000", "1,001 items, over the limit of "
             "1,000 per list: the items after the first 1,000 were ignored")]


def test_verify_refuses_a_dense_list(tmp_path: Path) -> None:
    from bundle.verify import verify

    body = b'{"kind":"List","items":[' + b",".join([b"{}"] * 400_000) + b"]}"
    with open_bundle(write_dir(tmp_path / "b", {"cluster/pods.json": body})) as opened:
        (check,) = [c for c in verify(opened) if c.path == "cluster/pods.json"]
    assert check.status == "malformed"
    assert "over the limit of one per 16 bytes" in check.detail


# --------------------------------------------------------------------------- containerd


def test_refused_dropin_stops_the_emulation_without_conclusions(tmp_path: Path) -> None:
    nvidia = (f'version = 2\n[plugins."{CRI}".containerd.runtimes.nvidia]\n'
              'runtime_type = "io.containerd.runc.v2"\n')
    later = f'[plugins."{CRI}".registry]\nconfig_path = "/x"\n' + ".".join(["k"] * 70) + " = 1\n"
    files = {MAIN: 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n',
             "/etc/containerd/conf.d/99-nvidia.toml": nvidia,
             "/etc/containerd/conf.d/zz.toml": later}
    result = emulate(files, (1, 6, 20))
    assert result.refused == f"/etc/containerd/conf.d/zz.toml: {DEPTH}"
    assert (result.clobbers, result.runtimes, result.load_error) == ((), frozenset(), None)
    assert result.load_order == (MAIN, "/etc/containerd/conf.d/99-nvidia.toml")
    # Without the refused line the same files are a clobber (RT002 would fire).
    files["/etc/containerd/conf.d/zz.toml"] = later.rsplit("\n", 2)[0] + "\n"
    assert emulate(files, (1, 6, 20)).clobbers != ()

    bundle_files = {**valid_files(),
                    **{FILES + path: text for path, text in files.items()}}
    bundle_files[FILES + "/etc/containerd/conf.d/zz.toml"] = later
    code, report = analyse_json(write_dir(tmp_path / "b", bundle_files), tmp_path)
    assert (FILES + "/etc/containerd/conf.d/zz.toml", "refused", "line 3", DEPTH) in \
        problems_of(report)
    assert_no_rule_errors(report)
    assert [f for f in report["findings"] if f["rule_id"] == "RT002"] == []


def test_glob_name_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(containerd_merge, "MAX_GLOB_NAMES", 20)
    files = {MAIN: "imports = [" + ", ".join(['"/d/*"'] * 2 + ['"/d/?"']) + "]\n"}
    files.update({f"/d/{i:02}": "" for i in range(10)})
    within = emulate(files, (1, 7, 27))  # 10 + 10 names; the repeat is matched again
    assert within.refused is None
    files[MAIN] = "imports = [" + ", ".join(['"/d/*"'] * 3) + "]\n"
    over = emulate(files, (1, 7, 27))
    assert over.refused == "import globs would compare more than 20 file names (at '*')"
    assert over.runtimes == frozenset()


def test_repeated_imports_are_queued_once() -> None:
    files = {MAIN: "imports = [" + ", ".join(['"/d/*"'] * 500) + "]\n"}
    files.update({f"/d/{i:03}": 'imports = ["/d/*"]\n' for i in range(150)})
    result = emulate(files, (1, 7, 27))
    assert result.load_order == (MAIN, *(f"/d/{i:03}" for i in range(150)))
    assert result.refused is None


def test_long_paths_cost_one_entry_per_component() -> None:
    deep = "/" + "/".join(["a"] * 20_000) + "/x.toml"
    files = {MAIN: f'imports = ["{deep[:-6]}*.toml"]\n', deep: ""}
    assert emulate(files, (1, 7, 27)).load_order == (MAIN, deep)


def test_corrected_dropin_refuses_large_files() -> None:
    clobber = Clobber(file="/b.toml", overridden="/a.toml", plugin=CRI, lost_runtimes=())
    big = "#" + "x" * containerd_merge.MAX_REWRITE_BYTES + "\n"
    with pytest.raises(ValueError, match="over the limit of 262,144 for a rewrite"):
        corrected_dropin({"/a.toml": big, "/b.toml": ""}, clobber)
    with pytest.raises(ValueError, match=re.escape(DEPTH)):
        corrected_dropin({"/a.toml": "a = " + "[" * 99 + "]" * 99, "/b.toml": ""}, clobber)


def _reference(pattern: str) -> re.Pattern[str]:
    """The regex translation the emulation used before (it backtracks): the oracle."""
    out: list[str] = []
    for star, atoms in _pattern_chunks(pattern):
        if star:
            out.append("[^/]*")
        for atom in atoms:
            if atom is None:
                out.append("[^/]")
            elif isinstance(atom, str):
                out.append(re.escape(atom))
            else:
                negated, ranges = atom
                parts = [f"{re.escape(lo)}-{re.escape(hi)}" for lo, hi in ranges if lo <= hi]
                if not parts:
                    out.append("[\\s\\S]" if negated else "[^\\s\\S]")
                else:
                    out.append(("[^" if negated else "[") + "".join(parts) + "]")
    return re.compile("".join(out), re.DOTALL)


_ALPHABET = "ab.-"
_PATTERN = st.lists(st.one_of(
    st.sampled_from(["*", "?", "a", "b", ".", "\\*", "[ab]", "[^a]", "[a-b]", "[b-a]",
                     "[\\]]", "[.-b]"])), max_size=8).map("".join)


@HOSTILE
@given(_PATTERN, st.text(alphabet=_ALPHABET + "*]", max_size=10))
def test_glob_matcher_agrees_with_the_regex(pattern: str, name: str) -> None:
    chunks = _pattern_chunks(pattern)
    assert _name_matches(chunks, name) == bool(_reference(pattern).fullmatch(name))


def test_glob_matcher_on_chosen_cases() -> None:
    cases = {("*.toml", "99-nvidia.toml"): True, ("*.toml", ".toml"): True,
             ("*a*a*b", "aab"): True, ("*a*a*b", "ab"): False, ("a*", "a"): True,
             ("a*b*c", "abc"): True, ("a*b*c", "acb"): False, ("", ""): True,
             ("?", ""): False, ("*?", ""): False, ("[^a]*", "b"): True, ("\\*", "*"): True,
             ("*ab", "aab"): True, ("*aab", "aaab"): True, ("a*ab", "aab"): True}
    for (pattern, name), expected in cases.items():
        assert _name_matches(_pattern_chunks(pattern), name) is expected, (pattern, name)


def test_integers_over_64_bits_in_json_are_recorded(tmp_path: Path) -> None:
    """orjson reads an integer beyond 64 bits as a float: where Kubernetes has an
    integer, that is a field of the wrong type, dropped and recorded."""
    files = valid_files()
    events = orjson.dumps(files["cluster/events.json"]).replace(
        b'"count":5', b'"count":99999999999999999999999', 1)
    with open_bundle(write_dir(tmp_path / "b", {**files, "cluster/events.json": events})) as b:
        assert [e.count for e in b.cluster.events] == [None, 5]
        assert [(p.path, p.kind, p.where, p.message) for p in b.problems] == [
            ("cluster/events.json", "parse", "/items/0/count",
             "Event: a field of the wrong type was ignored: count: Input should be a valid "
             "integer")]
