"""How two ticket systems mark text up, and how bundle text is made inert in each.

**Jira wiki markup** (Jira Server/Data Center, and Jira Cloud's wiki-markup editor):
``h3.`` headings, ``*bold*``, ``{{monospace}}``, ``{noformat}`` blocks, ``* `` bullets.
A backslash makes these characters literal: ``- # * _ + ? ^ ~ | % { } [ ] ( ) ! @``
(the set Jira's renderer escapes, as Atlassian's own wiki-markup transformer records:
https://app.unpkg.com/@atlaskit/editor-wikimarkup-transformer@11.20.13/files/dist/es2019/parser/utils/escape.js).
A ``{noformat}`` block shows its text as is, up to the next ``{noformat}``; a command that
holds that word is therefore not put in a block at all. Markup reference:
https://jira.atlassian.com/secure/WikiRendererHelpAction.jspa?section=all

**Zendesk** ticket comments take a small Markdown (Zendesk's "Formatting text with
Markdown", https://support.zendesk.com/hc/en-us/articles/4408846544922): bold, italics,
``*``/``-`` bullets, numbered lists, ``#`` headings up to four levels, block quotes,
code. No tables, no raw HTML, no GitHub extensions; this dialect uses only headings,
bold, bullets, code spans and fenced blocks. Bundle text has a backslash before each
character that could start markup (CommonMark makes any escaped ASCII punctuation
literal), so none of it becomes a link, an image, HTML, emphasis, a heading or a list.
"""

from __future__ import annotations

import re

from reports.view import clean

_JIRA_SPECIAL = re.compile(r"([-#*_+?^~|%{}\[\]()!@\\])")
# What makes Markdown of bundle text: emphasis, code, links and images (brackets), HTML
# and entities, tables and strike-through of the extensions; and, at the start of a
# line, headings, quotes, lists.
_MD_INLINE = re.compile(r"([\\`*_{}\[\]<>|~&])")
_MD_START = re.compile(r"^([#+=>-])")
_MD_NUMBERED = re.compile(r"^(\d+)([.)])")


def _one_line(text: str) -> str:
    return " ".join(clean(text).split())


class Jira:
    name = "jira"
    LIMIT = 32_000  # Jira refuses a comment over 32,767 characters

    def text(self, value: str) -> str:
        return _JIRA_SPECIAL.sub(r"\\\1", _one_line(value))

    def heading(self, value: str) -> str:
        return f"h3. {value}"

    def title(self, value: str) -> str:
        return f"h2. {value}"

    def bold(self, value: str) -> str:
        return f"*{value}*"

    def code(self, value: str) -> str:
        return "{{" + self.text(value) + "}}"

    def bullet(self, value: str, depth: int = 1) -> str:
        return f"{'*' * depth} {value}"

    def block(self, value: str) -> str:
        body = clean(value).strip("\n")
        if "{noformat" in body.lower():
            return self.text("(a command that holds Jira markup is shown in the HTML report "
                             "only)")
        return f"{{noformat}}\n{body}\n{{noformat}}"


class Zendesk:
    name = "zendesk"
    LIMIT = 30_000

    def text(self, value: str) -> str:
        escaped = _MD_START.sub(r"\\\1", _MD_INLINE.sub(r"\\\1", _one_line(value)))
        return _MD_NUMBERED.sub(r"\1\\\2", escaped)

    def heading(self, value: str) -> str:
        return f"#### {value}"

    def title(self, value: str) -> str:
        return f"### {value}"

    def bold(self, value: str) -> str:
        return f"**{value}**"

    def code(self, value: str) -> str:
        body = _one_line(value)
        longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
        fence = "`" * (longest + 1)
        pad = " " if body.startswith("`") or body.endswith("`") else ""
        return f"{fence}{pad}{body}{pad}{fence}"

    def bullet(self, value: str, depth: int = 1) -> str:
        return f"{'  ' * (depth - 1)}- {value}"

    def block(self, value: str) -> str:
        body = clean(value).strip("\n")
        longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"{fence}\n{body}\n{fence}"


Dialect = Jira | Zendesk
DIALECTS: dict[str, Dialect] = {"jira": Jira(), "zendesk": Zendesk()}
