"""``split_lines`` is ``str.splitlines`` exactly: journals are split with it, and every
line number quoted as evidence depends on where lines begin."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bundle.textfiles import split_lines

# Every boundary splitlines() knows, plus text around them.
_PIECES = st.sampled_from(["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85",
                           "\u2028", "\u2029", "a", "{}", " ", "é", "\\n", ""])


@given(st.lists(_PIECES, max_size=12))
def test_split_lines_is_splitlines(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert split_lines(text) == text.splitlines()


@given(st.text(max_size=40))
def test_split_lines_on_any_text(text: str) -> None:
    assert split_lines(text) == text.splitlines()


def test_the_edges() -> None:
    assert split_lines("") == []
    assert split_lines("\n") == [""]
    assert split_lines("a") == ["a"]
    assert split_lines("a\n") == ["a"]
    assert split_lines("a\n\nb") == ["a", "", "b"]
    assert split_lines("a\r\nb\n") == ["a", "b"]
    assert split_lines('{"MESSAGE":"x\u2028y"}\n') == ['{"MESSAGE":"x', 'y"}']
