"""The known-issues base (analyzers/data/known_issues/) checked as data, and its loader's
refusals (analyzers/knowledge/known_issues.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from analyzers.knowledge import known_issues_doc
from analyzers.knowledge.known_issues import (
    DATA_DIR,
    Issue,
    KnownIssueError,
    load_dir,
    load_file,
    regex_problem,
)

BASE = load_dir(DATA_DIR)
IDS_TXT = DATA_DIR / "ids.txt"
HELDOUT = Path(__file__).resolve().parent / "fixtures" / "known_issues_heldout" / "threads.toml"
#: The count this base reached; lower it only together with ids.txt retirements.
MINIMUM_ENTRIES = 258
#: A public thread: a GitHub issue, pull request or discussion, or a public forum post.
THREAD = re.compile(
    r"https://(?:github\.com/[\w.-]+/[\w.-]+/(?:issues|pull|discussions)/\d+"
    r"|forums\.developer\.nvidia\.com/t/\S+|bugzilla\.redhat\.com/show_bug\.cgi\?id=\d+)"
)


def _ids_txt() -> tuple[list[str], set[str]]:
    """(every ID line in order, the retired ones) of ids.txt."""
    issued, retired = [], set()
    for line in IDS_TXT.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        ident, _, flag = line.partition(" ")
        issued.append(ident)
        if flag.strip() == "retired":
            retired.add(ident)
        else:
            assert not flag.strip(), f"ids.txt: unknown flag after {ident}: {flag!r}"
    return issued, retired


def test_base_is_large_enough_and_spans_components() -> None:
    assert len(BASE) >= MINIMUM_ENTRIES
    assert len({issue.components[0] for issue in BASE}) >= 8


@pytest.mark.parametrize("issue", BASE, ids=lambda issue: issue.id)
def test_examples_match_and_negative_does_not(issue: Issue) -> None:
    for line in issue.examples:
        assert issue.matches(line), line
    assert not issue.matches(issue.negative)


def test_no_entry_takes_another_entrys_negative() -> None:
    collisions = [
        f"{other.id} matches the negative of {issue.id}: {issue.negative!r}"
        for issue in BASE for other in BASE
        if other is not issue and other.matches(issue.negative)
    ]
    assert not collisions, "\n".join(collisions)


def test_ids_are_issued_once_and_never_reused() -> None:
    issued, retired = _ids_txt()
    assert len(issued) == len(set(issued)), "an ID is listed twice in ids.txt"
    in_data = {issue.id for issue in BASE}
    assert in_data.isdisjoint(retired), f"retired IDs reused: {sorted(in_data & retired)}"
    gone = sorted(set(issued) - retired - in_data)
    assert in_data == set(issued) - retired, (
        f"not in ids.txt: {sorted(in_data - set(issued))}; "
        f"in ids.txt but gone from the data (mark them retired): {gone}"
    )


def test_every_source_is_a_public_thread() -> None:
    bad = [(issue.id, url) for issue in BASE for url in issue.sources
           if THREAD.fullmatch(url) is None]
    assert not bad


def test_heldout_threads_stay_out_of_the_base() -> None:
    threads = tomllib.loads(HELDOUT.read_text(encoding="utf-8"))["thread"]
    assert threads, "the held-out fifth is empty"
    used = {url for issue in BASE for url in issue.sources}
    for thread in threads:
        assert set(thread) == {"order", "url", "component", "source", "evidence", "cause"}
        assert thread["order"] % 5 == 0, thread["url"]
        assert THREAD.fullmatch(thread["url"]), thread["url"]
        assert thread["url"] not in used, f"held-out thread used as a source: {thread['url']}"
        evidence = thread["evidence"]
        assert evidence and all(isinstance(line, str) and line for line in evidence)


def test_found_order_log_matches_the_split() -> None:
    """found-order.txt (the order threads were found) agrees with the fifth and the base."""
    log = HELDOUT.with_name("found-order.txt").read_text(encoding="utf-8").splitlines()
    rows = [line.split(maxsplit=2) for line in log if line.strip() and not line.startswith("#")]
    orders = [int(order) for order, _, _ in rows]
    assert len(orders) == len(set(orders)), "an order number is used twice"
    held = {url: int(order) for order, url, kind in rows if kind == "HELDOUT"}
    threads = tomllib.loads(HELDOUT.read_text(encoding="utf-8"))["thread"]
    assert held == {thread["url"]: thread["order"] for thread in threads}
    logged = {url for _, url, kind in rows if kind.startswith("base")}
    used = {url for issue in BASE for url in issue.sources}
    assert used <= logged, f"sources missing from found-order.txt: {sorted(used - logged)}"


def test_doc_table_is_current() -> None:
    assert known_issues_doc.main(["--check"]) == 0, \
        "run python -m analyzers.knowledge.known_issues_doc"


# ----------------------------------------------------------------------------- the loader

NEEDLE = 'needles = ["boom"]'
GOOD = """
schema_version = 1
prefix = "X"
[[issue]]
id = "KI-X-001"
title = "t"
components = ["driver"]
source = "pod-log"
needles = ["boom"]
cause = "c"
fix = "f"
examples = ["it went boom here"]
sources = ["https://github.com/o/r/issues/1"]
negative = "all quiet"
established = "maintainer answer"
"""


def _write(tmp_path: Path, text: str, name: str = "x.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_file_loads(tmp_path: Path) -> None:
    loaded = load_file(_write(tmp_path, GOOD))
    assert [issue.id for issue in loaded.issue] == ["KI-X-001"]
    assert loaded.issue[0].matches("boom") and not loaded.issue[0].matches("BOOM")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ((NEEDLE, NEEDLE + '\ncolour = "red"'), "colour"),
        ((NEEDLE, NEEDLE + '\nunit = "kubelet"'), "does not apply to source"),
        ((NEEDLE, NEEDLE + '\nobject = "nvidia-*"'), "does not apply to source"),
        (('id = "KI-X-001"', 'id = "KI-Y-001"'), "prefix"),
        (('id = "KI-X-001"', 'id = "X-1"'), "KI-<COMPONENT>-<NNN>"),
        (('components = ["driver"]', 'components = ["gpu-thing"]'), "unknown component"),
        ((NEEDLE, NEEDLE + '\nregex = "(a+)+"'), "nested quantifier"),
        ((NEEDLE, NEEDLE + '\nregex = "(b)o\\\\1"'), "back-reference"),
        ((NEEDLE, NEEDLE + '\nregex = "' + "a" * 201 + '"'), "more than 200"),
        ((NEEDLE, NEEDLE + '\nregex = "x*"'), "empty string"),
        (('negative = "all quiet"', 'negative = "boom again"'), "negative line is matched"),
        (('examples = ["it went boom here"]', 'examples = ["it went bang"]'), "example #1"),
        (('sources = ["https://github.com/o/r/issues/1"]', 'sources = ["http://x"]'), "https"),
        (('needles = ["boom"]', 'needles = ["Boom"]\ncase = "insensitive"'), "lower case"),
        ((NEEDLE, NEEDLE + '\n[issue.context]\ndriver = "newest"'), "version range"),
    ],
)
def test_a_bad_entry_is_refused_naming_file_and_entry(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    old, new = change
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new), "broken.toml")
    with pytest.raises(KnownIssueError, match=re.escape(message)) as caught:
        load_file(path)
    assert str(caught.value).startswith("broken.toml: ")
    if "prefix" not in message:
        assert "issue #1" in str(caught.value)


def test_an_id_twice_in_one_file_is_refused(tmp_path: Path) -> None:
    entry = GOOD[GOOD.index("[[issue]]"):]
    with pytest.raises(KnownIssueError, match=r"^twice\.toml: .*IDs defined twice: \['KI-X-001'\]"):
        load_file(_write(tmp_path, GOOD + entry, "twice.toml"))


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(KnownIssueError, match=r"^bad\.toml: cannot be read as TOML"):
        load_file(_write(tmp_path, "[[issue]\n", "bad.toml"))


def test_an_id_defined_in_two_files_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, GOOD, "a.toml")
    other = GOOD.replace('prefix = "X"', 'prefix = "X2"').replace("KI-X-", "KI-X2-")
    _write(tmp_path, other, "b.toml")
    assert len(load_dir(tmp_path)) == 2
    _write(tmp_path, GOOD, "c.toml")
    with pytest.raises(KnownIssueError, match=r"c\.toml: prefix 'X' is taken by a\.toml"):
        load_dir(tmp_path)


@pytest.mark.parametrize(
    ("pattern", "refused"),
    [
        ("ab+c", False), ("(?:ab)+", False), ("(?:a|b)+c", False), ("a{2}(?:bc)*", False),
        ("(a*)*", True), ("(?:a+b)+", True), ("(?:x|(?:ab)+)+", True), ("(?=a+)+b", True),
    ],
)
def test_regex_budget(pattern: str, refused: bool) -> None:
    assert (regex_problem(pattern) is not None) is refused
