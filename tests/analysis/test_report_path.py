"""report/path_pages.py: the PDF pages of a path of routers, on planted
paths (path_frames.chain): what each page says, how many there are, that
nothing on them overlaps or runs off, and an empty path."""
import re
import subprocess

import numpy as np
import pandas as pd
import pytest

from hopscope.analysis.path import load_path
from hopscope.report import path_pages
from path_frames import chain
from test_report_layout import reads

N_FWD, DROP_EVERY = 4000, 50
# hop k's clock against hop 1's, planted (ns)
THETA = [0, 5_000_000, -3_000_000, 2_000_000]


def pages_text(pdf):
    """Each page's text, its lines as laid out (a table's row on one line)."""
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                          text=True, check=True).stdout
    return text.split("\f")[:-1]  # a form feed ends every page


def written(tmp_path, name, **kw):
    frames, _ = chain(**kw)
    p = load_path(frames)
    pdf = tmp_path / f"{name}.pdf"
    n = path_pages.write(p, pdf, f"Path {name}")
    pages = pages_text(pdf)
    assert n == len(pages)
    return p, pdf, pages


# summary, stage delays, tail, queues, loss table; the stage delays and the
# queues take a page per three hops
@pytest.mark.parametrize("hops, pages", [(2, 5), (3, 5), (4, 7)])
def test_every_page_of_a_path(tmp_path, hops, pages):
    p, pdf, text = written(tmp_path, f"h{hops}", hops=hops, theta=THETA[:hops],
                           boots=[f"boot-{k}" for k in range(hops)])
    assert list(p.offsets["method"][1:]) == ["two-way"] * (hops - 1)  # the planted case
    assert len(text) == pages
    summary, loss = text[0], text[-1]
    for k in range(1, hops + 1):
        assert re.search(rf"^\s*{k}\s+r{k}\s+r{k}\.hsr\s+5500\s", summary, re.M), k
        assert f"hop {k} d_oq (r{k})" in "".join(text[1:])  # the stage delays
        assert f"hop {k} (r{k}): output queue" in "".join(text[1:])
    assert summary.count("two-way") == hops - 1 and "reference" in summary
    assert "Problems: none." in summary
    # the loss table: both fates and the total of the packets that entered
    assert re.search(rf"delivered\s+hop {hops} \(r{hops}\)\s+—\s+—\s+"
                     rf"{N_FWD - N_FWD // DROP_EVERY}\s", loss)
    assert re.search(rf"dropped\s+hop {hops} \(r{hops}\)\s+t3\s+QDISC_DROP\s+"
                     rf"{N_FWD // DROP_EVERY}\s", loss)
    assert re.search(rf"^\s*total\s+{N_FWD}\s+100\.00%", loss, re.M)
    reads(pdf, tmp_path)


def test_offsets_against_hop_1_within_their_uncertainty():
    frames, _ = chain(hops=4, theta=THETA, boots=list("abcd"))
    found = path_pages.against_hop1(load_path(frames))
    assert found[0] == (0.0, 0.0, 0.0)
    for (off, _, err), theta in zip(found[1:], THETA[1:]):
        assert 0 < err < 50_000 and abs(off - theta) <= err, (off, theta, err)


def test_one_way_offsets_are_upper_bounds_only(tmp_path):
    p, _, text = written(tmp_path, "oneway", hops=2, n_rev=0, theta=[0, 1_000_000],
                         boots=["a", "b"])
    assert p.offsets["method"].iloc[1] == "one-way"
    # against the hop before and against hop 1
    assert text[0].count("upper bound only") == 2


@pytest.mark.parametrize("queue_hop", [2, 3])
def test_the_tail_page_names_the_queue_it_comes_from(tmp_path, queue_hop):
    p, _, text = written(tmp_path, f"q{queue_hop}", hops=3, queue_hop=queue_hop, n_rev=0)
    tail = text[2]
    m = re.search(r"The largest share of the tail: (hop \d d_\w+|link \d), ([\d.]+)%", tail)
    assert m and m[1] == f"hop {queue_hop} d_oq", tail
    shares = p.tail(0.99).set_index("part")["share"]
    assert float(m[2]) == pytest.approx(shares.max() * 100, abs=0.05)
    assert f"hop {queue_hop} d_oq" in tail and "link 2" in tail  # the bars' labels


def test_queues_are_on_hop_1s_clock():
    # forward packets only: the queues' first steps are theirs
    frames, _ = chain(hops=2, n_rev=0, theta=[0, 7_000_000], boots=["a", "b"])
    p = load_path(frames)
    (in1, out1), (in2, out2) = path_pages._queues_on_hop1(p)
    # hop 2's output queue fills as its packets' t3 on hop 1's clock say
    t3, t4 = (p.packets[f"h2_{s}"].to_numpy() for s in ("t3", "t4"))
    assert abs(out2.t_ns[0] - t3[t4 > 0].min()) <= 1
    # unshifted, hop 2's queues would start 7 ms after hop 1's
    assert abs(in2.t_ns[0] - in1.t_ns[0]) < 100_000
    assert all((np.diff(q.t_ns) >= 0).all() for q in (in1, out1, in2, out2))


def test_a_path_without_delivered_packets_says_so(tmp_path):
    # every packet dropped at the last hop
    p, pdf, text = written(tmp_path, "dropped", hops=2, drop_every=1)
    assert (p.packets["fate"] == "dropped").all()
    assert len(text) == 5
    assert "No packet crossed the whole path" in " ".join(text[2].split())
    assert re.search(rf"^\s*total\s+{N_FWD}\s+100\.00%", text[-1], re.M)
    reads(pdf, tmp_path)


def test_a_path_without_records(tmp_path):
    frames, _ = chain(hops=2, n_fwd=10, n_rev=0)
    empty = []
    for f in frames:
        e = f.iloc[:0].copy()
        e.attrs = f.attrs
        empty.append(e)
    p = load_path(empty)
    pdf = tmp_path / "empty.pdf"
    assert path_pages.write(p, pdf, "Path empty") == 5
    text = pages_text(pdf)
    assert "0 packets entered the path" in text[0] and "(none)" in text[-1]
    assert "No packet crossed the whole path" in " ".join(text[2].split())


def test_long_tables_go_on_over_pages(tmp_path):
    frames, _ = chain(hops=2, n_fwd=400, n_rev=0)
    p = load_path(frames)
    # more drop reasons and problems than a page holds
    reasons = [f"REASON_{i}" for i in range(90)]
    p.loss = pd.DataFrame({"entered": 1, "fate": "dropped", "hop": 2, "stage": "t3",
                           "reason": reasons, "packets": 1})
    p.problems = [f"problem number {i}: " + "words " * 30 for i in range(40)]
    pdf = tmp_path / "long.pdf"
    n = path_pages.write(p, pdf, "Path long")
    text = pages_text(pdf)
    assert n == len(text) > 5 + 2
    continued = [t for t in text if "(continued)" in t]
    assert any("problem number 39" in t for t in continued)
    found = re.findall(r"REASON_\d+", "".join(text))
    assert found == reasons  # each once, in order
    assert re.search(r"^\s*total\s+90\s+100\.00%", text[-1], re.M)
    reads(pdf, tmp_path)
