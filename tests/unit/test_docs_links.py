"""Every relative link in README.md and docs/*.md points at a file that exists (and at a
heading of it, when the link has an #anchor), so that moving a file breaks a test, not
the documentation."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# [text](target) and [text]: target; an image's ![alt](target) too. Not inside code.
_INLINE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    """`text` without fenced code blocks and code spans, where brackets are not links."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def links(text: str) -> list[str]:
    body = prose(text)
    return _INLINE.findall(body) + _REFERENCE.findall(body)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces
    to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (a repeated one gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in _HEADING.findall(_FENCE.sub("", path.read_text())):
        slug = anchor(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def is_relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) and not target.startswith("//")


def broken_links(doc: Path) -> list[str]:
    problems = []
    for target in links(doc.read_text()):
        if not is_relative(target):
            continue
        file, _, fragment = target.partition("#")
        where = (doc.parent / unquote(file)).resolve() if file else doc
        if not where.exists():
            problems.append(f"{target}: no {where}")
        elif fragment and where.suffix == ".md" and unquote(fragment) not in anchors(where):
            problems.append(f"{target}: {where.name} has no heading #{fragment}")
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_point_at_files_and_headings(doc: Path) -> None:
    assert broken_links(doc) == []


def test_the_checker_finds_what_it_should(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# Guest crashes, hangs and `timeouts`\n")
    doc = tmp_path / "README.md"
    doc.write_text(
        "[ok](docs/there.md#guest-crashes-hangs-and-timeouts) [web](https://example.org/x)\n"
        "[gone](docs/moved.md) [bad anchor](docs/there.md#nowhere) [self](#title)\n"
        "`[not a link](nowhere.md)`\n\n```\n[nor this](nowhere.md)\n```\n\n"
        "[ref]: docs/also-gone.md\n# Title\n"
    )
    assert broken_links(doc) == [
        f"docs/moved.md: no {tmp_path / 'docs' / 'moved.md'}",
        "docs/there.md#nowhere: there.md has no heading #nowhere",
        f"docs/also-gone.md: no {tmp_path / 'docs' / 'also-gone.md'}",
    ]
