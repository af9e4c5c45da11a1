"""A small HTML → Markdown converter on the standard library's `html.parser`.

It keeps what an LLM reads: headings, paragraphs, links, lists, emphasis, code and preformatted
blocks, block quotes, images' alt text and table rows. It drops scripts, styles, forms and other
markup that carries no text for a reader. It is forgiving: unclosed tags and stray end tags are
fine, as in real pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin

DROPPED = frozenset({
    "script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object", "embed", "canvas",
    "select", "button", "form", "nav",
})  # fmt: skip
VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "source", "track", "wbr"})
BLOCKS = frozenset({
    "p", "div", "section", "article", "header", "footer", "main", "aside", "figure", "figcaption", "address",
    "details", "summary", "dl", "dt", "dd", "table", "thead", "tbody", "tfoot", "caption", "body", "html",
})  # fmt: skip
HEADINGS = {f"h{level}": level for level in range(1, 7)}
EMPHASIS = {"strong": "**", "b": "**", "em": "*", "i": "*", "s": "~~", "del": "~~"}

_SPACES = re.compile(r"[ \t\r\n\f\v]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_QUOTE_ONLY = re.compile(r"^(> ?)+$")


@dataclass
class _Frame:
    """An element whose text is collected separately and rendered when it closes."""

    tag: str
    parts: list[str] = field(default_factory=list)
    href: str | None = None


class _MarkdownParser(HTMLParser):
    def __init__(self, base_url: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.out: list[str] = []
        self.frames: list[_Frame] = []  # open links, headings, cells: inline text collectors
        self.dropped_depth = 0
        self.dropped_tag: str | None = None
        self.pre_depth = 0
        self.lists: list[tuple[str, int]] = []  # ("ul" | "ol", next number)
        self.quote_depth = 0

    # -- output helpers -------------------------------------------------------------------------------

    def _emit(self, text: str) -> None:
        target = self.frames[-1].parts if self.frames else self.out
        target.append(text)

    def _break(self, blank: bool = True) -> None:
        if self.frames:
            self.frames[-1].parts.append(" ")
            return
        self.out.append("\n\n" if blank else "\n")
        prefix = "> " * self.quote_depth
        if prefix:
            self.out.append(prefix)

    def _resolve(self, url: str) -> str:
        return urljoin(self.base_url, url) if self.base_url else url

    # -- parser callbacks -----------------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.dropped_depth:
            if tag == self.dropped_tag:
                self.dropped_depth += 1
            return
        if tag in DROPPED:
            self.dropped_tag, self.dropped_depth = tag, 1
            return
        attributes = {key: value or "" for key, value in attrs}
        if tag in HEADINGS:
            self._break()
            self.frames.append(_Frame(tag))
        elif tag == "a":
            self.frames.append(_Frame(tag, href=attributes.get("href")))
        elif tag in {"td", "th"}:
            self._emit(" ")
        elif tag == "tr":
            self._break(blank=False)
            self._emit("|")
        elif tag in BLOCKS:
            self._break()
        elif tag == "br":
            self._break(blank=False)
        elif tag == "hr":
            self._break()
            self._emit("---")
            self._break()
        elif tag in {"ul", "ol"}:
            self.lists.append((tag, 1))
            if len(self.lists) == 1:
                self._break()
        elif tag == "li":
            self._list_item()
        elif tag == "blockquote":
            self.quote_depth += 1
            self._break()
        elif tag == "pre":
            self.pre_depth += 1
            if self.pre_depth == 1:
                self._break()
                self._emit("```\n")
        elif tag == "code" and not self.pre_depth:
            self._emit("`")
        elif tag in EMPHASIS:
            self._emit(EMPHASIS[tag])
        elif tag == "img":
            alt = _SPACES.sub(" ", attributes.get("alt", "")).strip()
            if alt:
                self._emit(f"![{alt}]({self._resolve(attributes.get('src', ''))})")

    def _list_item(self) -> None:
        depth = max(len(self.lists), 1)
        kind, number = self.lists[-1] if self.lists else ("ul", 1)
        self.out.append("\n" + "> " * self.quote_depth + "  " * (depth - 1))
        if kind == "ol":
            self.lists[-1] = (kind, number + 1)
            self._emit(f"{number}. ")
        else:
            self._emit("- ")

    def handle_endtag(self, tag: str) -> None:
        if self.dropped_depth:
            if tag == self.dropped_tag:
                self.dropped_depth -= 1
            return
        if tag in HEADINGS or tag == "a":
            self._close_frame(tag)
        elif tag in {"ul", "ol"}:
            if self.lists:
                self.lists.pop()
            if not self.lists:
                self._break()
        elif tag == "blockquote":
            self.quote_depth = max(0, self.quote_depth - 1)
            self._break()
        elif tag == "pre":
            if self.pre_depth == 1:
                self._emit("\n```")
                self._break()
            self.pre_depth = max(0, self.pre_depth - 1)
        elif tag == "code" and not self.pre_depth:
            self._emit("`")
        elif tag in EMPHASIS:
            self._emit(EMPHASIS[tag])
        elif tag in {"td", "th"}:
            self._emit(" |")
        elif tag in BLOCKS or tag == "table":
            self._break()

    def _close_frame(self, tag: str) -> None:
        index = next((i for i in range(len(self.frames) - 1, -1, -1) if self.frames[i].tag == tag), None)
        if index is None:
            return
        while len(self.frames) > index + 1:  # an unclosed inner element: fold it into its parent
            self._fold(self.frames.pop())
        self._fold(self.frames.pop())

    def _fold(self, frame: _Frame) -> None:
        text = _SPACES.sub(" ", "".join(frame.parts)).strip()
        if frame.tag in HEADINGS:
            if text:
                self._emit("#" * HEADINGS[frame.tag] + " " + text)
            self._break()
        elif frame.tag == "a":
            if frame.href and not frame.href.lower().startswith(("javascript:", "data:")):
                self._emit(f"[{text or frame.href}]({self._resolve(frame.href)})")
            else:
                self._emit(text)

    def handle_data(self, data: str) -> None:
        if self.dropped_depth:
            return
        if self.pre_depth:
            self._emit(data)
            return
        self._emit(_SPACES.sub(" ", data))

    def finish(self) -> str:
        self.close()
        while self.frames:
            self._fold(self.frames.pop())
        return _tidy("".join(self.out))


def _tidy(text: str) -> str:
    lines: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if line.strip() == "```":
            in_fence = not in_fence
        if not in_fence:
            line = "" if _QUOTE_ONLY.match(line.strip()) else re.sub(r"(?<=\S) {2,}", " ", line.rstrip())
        lines.append(line)
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip() + "\n"


def html_to_markdown(html: str, *, base_url: str | None = None) -> str:
    """`html` as Markdown; relative links and image sources are resolved against `base_url`."""
    parser = _MarkdownParser(base_url)
    parser.feed(html)
    return parser.finish()
