"""Every relative link in the README, docs/ and evaluation/ leads to a file
(or folder) of the tree: a page moved or renamed is found here, not by a
reader. Web links and anchors within a page are not followed."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "evaluation").rglob("*.md"))]
# [text](target) and [text](target "title"); code spans are left out first
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE = re.compile(r"`[^`\n]*`")


def relative_links(page):
    text = CODE.sub("", page.read_text())
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a web address, mailto:, or a place in this page
        yield target.split("#")[0]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = [t for t in relative_links(page) if not (page.parent / t).exists()]
    assert not broken, f"{page.relative_to(ROOT)}: no such file: {broken}"
