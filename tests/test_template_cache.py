"""Compiled templates kept between runs (reports/template_cache.py): read back instead of
compiled, never the code of another source, option or jinja2, and only from a directory
that is the user's own."""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
import pytest

from reports import html
from reports.template_cache import TemplateCache, template_cache


def _env(cache: TemplateCache | None, source: str, **options: bool) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.DictLoader({"page.j2": source}),
                              bytecode_cache=cache, autoescape=True, **options)


def _no_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled although the cache holds the template")
    monkeypatch.setattr(jinja2.Environment, "compile", refuse)


def test_a_second_environment_reads_the_compiled_template(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = template_cache(tmp_path / "c")
    assert cache is not None
    first = _env(cache, "{% if x %}<b>{{ x }}</b>{% endif %}\n").get_template("page.j2")
    assert first.render(x="<a&b>") == "<b>&lt;a&amp;b&gt;</b>"
    assert len(list((tmp_path / "c").glob("*.bin"))) == 1
    _no_compiling(monkeypatch)
    again = _env(cache, "{% if x %}<b>{{ x }}</b>{% endif %}\n").get_template("page.j2")
    assert again.render(x="<a&b>") == "<b>&lt;a&amp;b&gt;</b>"


def test_a_changed_template_is_compiled_again_and_replaces_the_old(tmp_path: Path) -> None:
    cache = template_cache(tmp_path)
    assert cache is not None
    assert _env(cache, "old {{ x }}").get_template("page.j2").render(x=1) == "old 1"
    assert _env(cache, "new {{ x }}").get_template("page.j2").render(x=1) == "new 1"
    assert len(list(tmp_path.glob("*.bin"))) == 1
    assert _env(cache, "old {{ x }}").get_template("page.j2").render(x=1) == "old 1"


def test_options_that_shape_the_code_are_part_of_the_key(tmp_path: Path) -> None:
    cache = template_cache(tmp_path)
    source = "{% if x %}\n  a\n{% endif %}\n"
    plain = _env(cache, source).get_template("page.j2").render(x=True)
    trimmed = _env(cache, source, trim_blocks=True, lstrip_blocks=True) \
        .get_template("page.j2").render(x=True)
    assert (plain, trimmed) == ("\n  a\n", "  a\n")
    assert len(list(tmp_path.glob("*.bin"))) == 2
    unescaped = jinja2.Environment(loader=jinja2.DictLoader({"page.j2": "{{ x }}"}),
                                   bytecode_cache=cache, autoescape=False)
    assert unescaped.get_template("page.j2").render(x="<") == "<"


def test_a_damaged_file_is_compiled_again(tmp_path: Path) -> None:
    cache = template_cache(tmp_path)
    _env(cache, "v {{ x }}").get_template("page.j2")
    (kept,) = tmp_path.glob("*.bin")
    kept.write_bytes(kept.read_bytes()[:40])
    assert _env(cache, "v {{ x }}").get_template("page.j2").render(x=2) == "v 2"


def test_a_directory_others_may_write_is_not_used(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    assert template_cache(shared) is None
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert template_cache(tmp_path / "link") is None
    (tmp_path / "file").write_text("")
    assert template_cache(tmp_path / "file") is None
    assert template_cache(tmp_path / "real") is not None


def test_the_report_renders_the_same_from_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = (Path(html.__file__).parent / "templates" / "report.html.j2").read_text()
    loader = jinja2.DictLoader({"report.html.j2": source})
    options = {"autoescape": True, "undefined": jinja2.StrictUndefined,
               "trim_blocks": True, "lstrip_blocks": True}
    fresh = jinja2.Environment(loader=loader, **options).get_template("report.html.j2")
    cache = template_cache(tmp_path)
    jinja2.Environment(loader=loader, bytecode_cache=cache, **options) \
        .get_template("report.html.j2")
    _no_compiling(monkeypatch)
    cached = jinja2.Environment(loader=loader, bytecode_cache=cache, **options) \
        .get_template("report.html.j2")
    assert cached.root_render_func.__code__.co_code == \
        fresh.root_render_func.__code__.co_code


def test_the_diff_report_keeps_its_compiled_template_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reports.diff import html as diff_html
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    diff_html._environment.cache_clear()
    try:
        diff_html._environment().get_template("diff.html.j2")
        assert len(list((tmp_path / "gpu-triage" / "templates").glob("*.bin"))) == 1
    finally:
        diff_html._environment.cache_clear()
