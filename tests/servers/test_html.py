"""The stdlib HTML → Markdown converter."""

from __future__ import annotations

from mcpstation.servers._html import html_to_markdown


def test_headings_paragraphs_and_emphasis() -> None:
    md = html_to_markdown("<h1>Title</h1><h3>Sub  <em>part</em></h3><p>Some <b>bold</b>\n  and <i>it</i>.</p>")
    assert md == "# Title\n\n### Sub *part*\n\nSome **bold** and *it*.\n"


def test_links_resolve_against_the_base_and_script_links_lose_their_target() -> None:
    md = html_to_markdown(
        '<p><a href="/a">rel</a> <a href="https://x.example/">abs</a> <a href="javascript:alert(1)">js</a></p>',
        base_url="https://site.example/dir/page",
    )
    assert "[rel](https://site.example/a)" in md
    assert "[abs](https://x.example/)" in md
    assert "js" in md and "javascript" not in md


def test_lists_nest_and_number() -> None:
    md = html_to_markdown("<ul><li>a</li><li>b<ol><li>one</li><li>two</li></ol></li></ul>")
    assert md == "- a\n- b\n  1. one\n  2. two\n"


def test_code_and_pre_keep_their_text() -> None:
    md = html_to_markdown("<p>Use <code>x = 1</code></p><pre>def f():\n    return  1\n</pre>")
    assert "Use `x = 1`" in md
    assert "```\ndef f():\n    return  1\n\n```" in md


def test_script_style_and_head_are_dropped() -> None:
    md = html_to_markdown(
        "<html><head><title>t</title><style>p{}</style></head><body><script>var a='<p>x</p>';</script>"
        "<noscript>enable js</noscript><p>kept</p></body></html>"
    )
    assert md == "kept\n"


def test_quotes_tables_images_and_entities() -> None:
    md = html_to_markdown(
        "<blockquote><p>quoted</p></blockquote><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr>"
        '</table><img alt="logo" src="/l.png"><p>&lt;tag&gt; &amp; caf&eacute;</p>',
        base_url="http://e.example/",
    )
    assert "> quoted" in md
    assert "| a | b |\n| 1 | 2 |" in md
    assert "![logo](http://e.example/l.png)" in md
    assert "<tag> & café" in md


def test_broken_markup_is_tolerated() -> None:
    md = html_to_markdown("<p>open <a href='/x'>link <b>bold</p><h2>unclosed")
    assert "[link **bold](/x)" in md or "link" in md
    assert "## unclosed" in md
