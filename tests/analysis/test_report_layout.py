"""The report's pages read: on every page of a demo-like run's report and of
a multi-run report, no two words overlap and no word lies outside the page,
judged from the PDF's own word boxes (pdftotext -bbox).

pdftotext throws away a character that lies wholly outside the page, so a
line running off the page would show only the word that crosses the edge,
or none if a space falls on it. The test reads a copy whose pages are
MARGIN points larger on every side (the same bytes, the MediaBox rewritten
in place) and then measures each word against the real page.
"""
import html
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from matplotlib.backends.backend_pdf import PdfPages

from hopscope.report import figures as fig, layout
from hopscope.report.pdf import figure_page
from hopscope.report.page import PAGE as SIZE, plt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
# a whole word beyond the edge still falls inside the widened page
MARGIN = 99
# points two boxes may share: rounding in the PDF's coordinates, not a glyph
EPS = 0.25
MEDIABOX = re.compile(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]")
PAGE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', re.S)
WORD = re.compile(r'<word xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" '
                  r'yMax="([-\d.]+)">(.*?)</word>')


def report(out, *args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"))
    r = subprocess.run([sys.executable, "-m", "hopscope", "report", *map(str, args),
                        "-o", str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return out


def widened(pdf, out):
    """A copy of pdf whose every MediaBox is MARGIN points larger each side,
    written over the old one's bytes (padded: no offset moves); per page, in
    page order, its real box and its widened one, (x0, y0, x1, y1) each."""
    data = pdf.read_bytes()
    boxes = []

    def wider(m):
        real = tuple(float(v) for v in m.groups())
        wide = (int(real[0]) - MARGIN, int(real[1]) - MARGIN, int(real[2]) + 1 + MARGIN,
                int(real[3]) + 1 + MARGIN)
        boxes.append((real, wide))
        text = ("/MediaBox [%d %d %d %d]" % wide).encode()
        assert len(text) <= len(m.group(0)), m.group(0)
        return text.ljust(len(m.group(0)))
    out.write_bytes(MEDIABOX.sub(wider, data))
    return boxes


def pages_of(pdf, tmp_path):
    """Per page: (its number, the words as (x0, y0, x1, y1, text) in points
    from the real page's top left, the page's width and height)."""
    wide = tmp_path / ("wide-" + pdf.name)
    boxes = widened(pdf, wide)
    xml = subprocess.run(["pdftotext", "-bbox", str(wide), "-"], capture_output=True,
                         text=True, check=True).stdout
    found = PAGE.findall(xml)
    # every page object of these files has its own MediaBox: none inherited
    assert len(found) == len(boxes), "a MediaBox not found for every page"
    for n, ((w, h, body), (real, wide)) in enumerate(zip(found, boxes), 1):
        assert abs(float(w) - (wide[2] - wide[0])) < 0.01, (w, wide)
        # pdftotext measures from the widened page's top left, PDF's y grows up
        dx, dy = real[0] - wide[0], wide[3] - real[3]
        words = [(float(a) - dx, float(b) - dy, float(c) - dx, float(d) - dy, html.unescape(t))
                 for a, b, c, d, t in WORD.findall(body)]
        yield n, words, real[2] - real[0], real[3] - real[1]


def overlaps(words):
    """Pairs of words whose boxes share more than EPS each way; a sweep
    along x over the words sorted by their left edge."""
    words = sorted(words)
    out = []
    for i, a in enumerate(words):
        for b in words[i + 1:]:
            if b[0] >= a[2] - EPS:
                break
            if min(a[3], b[3]) - max(a[1], b[1]) > EPS and min(a[2], b[2]) - b[0] > EPS:
                out.append((a, b))
    return out


def problems(pdf, tmp_path):
    out = []
    for n, words, w, h in pages_of(pdf, tmp_path):
        assert words, f"page {n} has no text"
        for x0, y0, x1, y1, t in words:
            if x0 < -EPS or y0 < -EPS or x1 > w + EPS or y1 > h + EPS:
                out.append(f"page {n}: {t!r} at ({x0:.1f}, {y0:.1f})-({x1:.1f}, {y1:.1f}) "
                           f"is outside the page ({w:.1f} x {h:.1f})")
        for a, b in overlaps(words):
            out.append(f"page {n}: {a[4]!r} at ({a[0]:.1f}, {a[1]:.1f}) and {b[4]!r} at "
                       f"({b[0]:.1f}, {b[1]:.1f}) overlap")
    return out


def reads(pdf, tmp_path):
    found = problems(pdf, tmp_path)
    assert not found, f"{len(found)} layout problems:\n" + "\n".join(found[:40])


def test_the_checks_see_overlaps_and_words_off_the_page(tmp_path):
    pdf = tmp_path / "bad.pdf"
    with PdfPages(pdf) as out:
        f = plt.figure(figsize=SIZE)
        f.text(0.1, 0.5, "overprinted", fontsize=10)
        f.text(0.12, 0.5, "twice", fontsize=10)
        f.text(0.9, 0.3, "a line running off the page's right edge", fontsize=10)
        f.text(1.05, 0.1, "wholly beyond", fontsize=10)
        out.savefig(f)
        plt.close(f)
    found = "\n".join(problems(pdf, tmp_path))
    assert "'overprinted' at" in found and "'twice' at" in found
    # words pdftotext would throw away on the page as it is
    assert "'right' at" in found and "'wholly' at" in found


def test_a_long_table_goes_on_over_pages_under_its_header(tmp_path):
    rows = [[f"row{i}", "some words " * (i % 7), str(i * 1000)] for i in range(120)]
    pdf = tmp_path / "long.pdf"
    with PdfPages(pdf) as out:
        pages = layout.Pages(out, "a long table")
        pages.add(layout.Text("before it"))
        pages.add(layout.Table(rows, ["name", "text", "number"], "the table"))
        pages.add(layout.Text("after it"))
        n = pages.close()
    assert n > 1
    reads(pdf, tmp_path)
    found = list(pages_of(pdf, tmp_path))
    assert len(found) == n
    names = []
    for number, words, _, _ in found:
        texts = [w[4] for w in words]
        assert "name" in texts and "number" in texts, f"page {number} has no header"
        assert ("(continued)" in texts) == (number > 1)
        names += [t for t in texts if t.startswith("row")]
    assert names == [f"row{i}" for i in range(120)]  # each once, in order
    assert "after" in [w[4] for w in found[-1][1]]


def test_a_table_wider_than_the_page_wraps_its_text(tmp_path):
    long = " ".join(f"word{i}" for i in range(200))
    t = layout.Table([["a", long, "1.00"], ["b", "short", "22.00"]], ["key", "text", "value"],
                     width=500)
    assert t.width <= 500 and t.size == 8  # wrapped, not shrunk
    assert len(t.cells[0][1]) > 1 and t.row_heights[0] > t.row_heights[1]
    pdf = tmp_path / "wide.pdf"
    with PdfPages(pdf) as out:
        pages = layout.Pages(out, "a wide table")
        pages.add(t)
        pages.close()
    reads(pdf, tmp_path)


def test_a_short_log_axis_keeps_its_labels_apart(tmp_path):
    # as the demo's series of d_p, 0.15 to 6 µs, on panels a little shorter:
    # matplotlib labels 0.2, 0.3, 0.4, 0.6, 1, 2, 3, 4 and 6 there
    def draw(f):
        for ax in f.subplots(4, 1):
            ax.plot([10, 20], [0.15, 6])
            fig.log_scale(ax)
    pdf = tmp_path / "log.pdf"
    with PdfPages(pdf) as out:
        figure_page(out, draw)
    reads(pdf, tmp_path)
    labels = [w[4] for _, words, _, _ in pages_of(pdf, tmp_path) for w in words]
    assert [labels.count(x) for x in ("0.2", "1", "2")] == [4, 4, 4]


def test_the_margins_leave_room_for_the_widest_labels(tmp_path):
    """report/margins.py's rule on its hardest page: tick labels of seven
    characters on both columns, x labels of three lines, titles of two, a
    page title, and the upper row's x tick labels hidden (sharex), its x
    labels not."""
    def draw(f):
        axes = f.subplots(2, 2, sharex="col")
        for (row, col), ax in np.ndenumerate(axes):
            ax.plot([0, 900_000], [0, 900_000] if col == 0 else [-0.002, 0.001])
            ax.set_title(f"panel {row} {col}\na second line of its title")
            ax.set_ylabel("relative frequency")
            ax.set_xlabel("delay (µs)\nbeyond the axis: sender1 0.08%\nsender2 0.04%")
        f.suptitle("a page's title above the plots")
    pdf = tmp_path / "margins.pdf"
    with PdfPages(pdf) as out:
        figure_page(out, draw)
    reads(pdf, tmp_path)
    labels = [w[4] for _, words, _, _ in pages_of(pdf, tmp_path) for w in words]
    assert "800000" in labels and "−0.0020" in labels and labels.count("sender2") == 4


@pytest.mark.slow  # a whole report drawn
def test_the_demos_report_reads(tmp_path):
    # a demo-like run (two senders and a bottleneck) under a long file name:
    # the label every title of the run carries
    run = tmp_path / "demo-two-senders-58mbit-bottleneck.hsr"
    shutil.copy(os.path.join(DATA, "competitive.hsr"), run)
    reads(report(tmp_path / "demo.pdf", run), tmp_path)


@pytest.mark.slow  # a whole report of two runs drawn
def test_a_multi_run_report_reads(tmp_path):
    reads(report(tmp_path / "runs.pdf", *(os.path.join(DATA, f) for f in
                                          ("single.hsr", "competitive.hsr")),
                 "--labels", "sender1 alone,two senders"), tmp_path)
