"""The XSS corpus through the HTML renderer, checked on the parsed markup (no browser):
bundle text must arrive as text, never as an element, an attribute or a URL. The same
corpus is checked again in a real DOM by test_browser.py."""

from __future__ import annotations

import report_bundles as bundles
from report_support import GENERATED
from test_html import parse

from analyzers.knowledge import known_issues
from analyzers.results.models import Report
from reports import html

# What the template itself writes: every element and attribute name.
TAGS = {"html", "head", "meta", "title", "style", "body", "a", "header", "nav", "main",
        "section", "footer", "h1", "h2", "h3", "h4", "p", "div", "span", "strong", "code",
        "pre", "mark", "details", "summary", "figure", "figcaption", "ul", "li", "dl", "dt",
        "dd", "table", "thead", "tbody", "tr", "th", "td", "label", "select", "option",
        "input", "output", "small", "svg", "rect", "line", "text", "circle", "desc", "script"}
ATTRS = {"lang", "charset", "http-equiv", "content", "name", "class", "id", "href", "title",
         "role", "aria-label", "aria-labelledby", "aria-live", "open", "value", "type",
         "autocomplete", "spellcheck", "scope", "data-finding", "data-severity",
         "data-family", "data-nodes", "data-group", "data-node", "data-copy", "width",
         "height", "viewbox", "x", "y", "rx", "x1", "x2", "y1", "y2", "cx", "cy", "r",
         "text-anchor", "rel"}
# The only links out of a report: the public threads of the packaged known-issue base.
THREADS = {url for issue in known_issues.load() for url in issue.sources}


def test_hostile_bundle_text_stays_text(analysed: dict[str, Report]) -> None:
    page = html.render(analysed["hostile"], generated_at=GENERATED)
    doc = parse(page)
    assert {t for t, _ in doc.tags} <= TAGS
    assert {a for _, attrs in doc.tags for a in attrs} <= ATTRS
    assert [t for t, _ in doc.tags].count("script") == 1
    for tag, attrs in doc.tags:
        href = attrs.get("href")
        assert href is None or href.startswith("#") or (
            href in THREADS and attrs.get("rel") == "noopener noreferrer nofollow"), (tag, href)
    text = "".join(doc.text)
    for visible in bundles.VISIBLE:
        assert visible in text, visible
    assert "\x1b" not in page and "\u202e" not in page
    assert "red-alert" in text
    assert len(page.encode()) < 1_000_000, "100 kB lines must be capped"


def test_hostile_node_name_is_a_row_but_not_markup(analysed: dict[str, Report]) -> None:
    page = html.view_model(analysed["hostile"], GENERATED)
    assert page.matrix is not None
    names = [r.name for r in page.matrix.rows]
    assert bundles.HOSTILE_NODE in names
    row = next(r for r in page.matrix.rows if r.name == bundles.HOSTILE_NODE)
    assert row.anchor.startswith("node-gpu--img-src-x-onerror-")
    assert set(row.anchor) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789-_.")


def test_invalid_utf8_and_lone_surrogates_are_replaced() -> None:
    from reports.view import clean

    assert clean("a\ud800b") == "a?b"
    assert clean("x\x1b[31my\x1b[0m\x00z\u202e") == "xyz"
    assert clean("tab\tand\nnewline") == "tab\tand\nnewline"
