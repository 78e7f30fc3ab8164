"""The report's coffee-break pages (report/coffee.py): both arrivals when t0
was recorded, the sweep's thresholds, the paper's statistic named, and a
minimum the user gave used for both arrivals."""
import matplotlib.text
import pytest

from hopscope.record import format as fmt, synth
from hopscope.record.load import load
from hopscope.analysis import analyse
from hopscope.analysis.coffee import coffee_breaks, default_min_ns
from hopscope.report import coffee
from hopscope.report.page import plt


def text_of(draw, *args):
    """Every string a page draws (titles, legends, then table cells, which
    findobj does not reach)."""
    f = plt.figure()
    draw(f, *args)
    out = [t.get_text() for t in f.findobj(matplotlib.text.Text)]
    out += [c.get_text().get_text() for ax in f.axes for t in ax.tables
            for c in t.get_celld().values()]
    plt.close(f)
    return "\n".join(out)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "r.hsr"
    synth.write_synthetic(path, 20000, seed=3, rate_pps=20_000, stages=("t0",) + fmt.CORE_STAGES)
    return load(path)


def drawn(df, a):
    """The texts of the two pages pdf.py's coffee job draws."""
    found, table = coffee.found(df, a)
    return [text_of(coffee.arrivals, "r", df, a, found, table), text_of(coffee.sweep, "r", table)]


def test_both_arrivals_and_the_sweep_are_shown(run):
    a = analyse(run)
    assert a.coffee_breaks.attrs["arrival"] == "t0"
    first, sweep = drawn(run, a)
    words_of = " ".join(first.split())  # a phrase may be wrapped over lines
    for words in ("t0: netif_rx, before the backlog (the paper's hook)",
                  "t1: XDP, after the backlog", "interoccurrence from t0",
                  "interoccurrence from t1", "mode", "median", "mean", "the paper: ~390",
                  "breaks from t0; d_iq and the queue pages from t1"):
        assert words in words_of, words
    # the breaks counted from each arrival at its own arrival gap, as in the table
    for arrival in ("t0", "t1"):
        least = default_min_ns(run, arrival)
        assert f"{least / 1000:.2f}" in first
        assert str(len(coffee_breaks(run, least, arrival))) in first
    for words in ("idle p99", "idle p99.9", "idle p99.99", "fixed", "arrival gap", "judged",
                  "0.50", "20.00", "shortest break counted (µs)"):
        assert words in sweep, words


def test_a_minimum_given_is_used_for_both_arrivals(run):
    a = analyse(run, min_break_ns=3000)
    first, _ = drawn(run, a)
    assert "at least --min-break-us" in " ".join(first.split())
    rows = [line for line in first.splitlines() if line == "3.00"]
    assert len(rows) == 2  # the "min break" cell of each arrival
