"""`hopscope report`: the PDF's pages for one run, several runs, an empty and
a truncated run, and the errors a user can make."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import hopscope
from hopscope.record import synth

pytestmark = pytest.mark.slow  # whole reports drawn

# summary, error budget, linear and log histograms, senders (linear and log),
# queues, coffee breaks by arrival and their sweep (report/coffee.py),
# series, output side
PAGES_ONE_RUN = 11


def report(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"))
    return subprocess.run([sys.executable, "-m", "hopscope", "report", *map(str, args)],
                          capture_output=True, text=True, env=env)


def pdf_pages(path):
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True)
    return int(re.search(r"^Pages:\s+(\d+)", info.stdout, re.M).group(1))


def pdf_text(path):
    return subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    a, b = d / "a.hsr", d / "b.hsr"
    synth.write_synthetic(a, 20000, seed=1)
    synth.write_synthetic(b, 20000, seed=2)
    return a, b


def test_one_run_has_every_page_with_units(runs, tmp_path):
    out = tmp_path / "r.pdf"
    r = report(runs[0], "-o", out)
    assert r.returncode == 0, r.stderr
    assert pdf_pages(out) == PAGES_ONE_RUN
    text = pdf_text(out)
    for words in ("hopscope report", "input queue d_iq", "processing d_p", "output queue d_oq",
                  "sender1 (TOS 4)", "sender2 (TOS 5)", "coffee breaks", "delay (µs)",
                  "packets in the queue", "minimum transit", "losses", "error budget",
                  "netfilter/PRE_ROUTING"):
        assert words in text, words
    # a file without probe cost samples: no floor invented
    assert "No probe cost samples in this file" in text


def test_fast_path_packets_are_counted_and_kept_apart(tmp_path):
    """a run with flowtable packets: counted by path on the first page, the
    stack's tables without them, their transit in a table of its own"""
    f = tmp_path / "ft.hsr"
    synth.write_synthetic(f, 20000, seed=3, flowtable_fraction=0.3)
    out = tmp_path / "ft.pdf"
    r = report(f, "-o", out)
    assert r.returncode == 0, r.stderr
    text = pdf_text(out)
    df = hopscope.load(str(f))
    done = df[df.status == "complete"]
    stack, fast = (int((done.path == p).sum()) for p in ("stack", "flowtable"))
    assert stack and fast
    assert f"complete by path: stack {stack}, flowtable {fast}" in text, text[:2000]
    assert "the stack paths' packets: the delays of the complete ones" in text
    assert "per forwarding path" in text
    # the stack's d_iq row counts the stack's packets only
    assert re.search(rf"^d_iq\s+{stack}\s", text, re.M), text[:3000]


def test_several_runs_are_compared_and_overlaid(runs, tmp_path):
    out = tmp_path / "r.pdf"
    r = report(*runs, "--labels", "small,large", "-o", out)
    assert r.returncode == 0, r.stderr
    assert pdf_pages(out) == 2 + 2 * PAGES_ONE_RUN
    text = pdf_text(out)
    assert "runs side by side" in text and "small" in text and "large" in text


def test_empty_run_says_so(tmp_path):
    run = tmp_path / "e.hsr"
    synth.write_synthetic(run, 0)
    r = report(run, "-o", tmp_path / "e.pdf")
    assert r.returncode == 0, r.stderr
    assert pdf_pages(tmp_path / "e.pdf") == 2  # the summary and the error budget
    text = pdf_text(tmp_path / "e.pdf")
    assert "No complete packets" in text and "error budget" in text


def test_truncated_run_reports_what_is_whole_and_warns(tmp_path):
    run = tmp_path / "t.hsr"
    synth.write_synthetic(run, 100000, chunk_records=20000, truncate_bytes=5000)
    r = report(run, "-o", tmp_path / "t.pdf")
    assert r.returncode == 0, r.stderr
    assert "warning" in r.stderr
    assert pdf_pages(tmp_path / "t.pdf") == PAGES_ONE_RUN
    assert "file problems" in pdf_text(tmp_path / "t.pdf")


@pytest.mark.parametrize("args, status, message", [
    (["missing.hsr"], 1, "No such file"),
    (["{a}", "{b}", "--labels", "one"], 2, "--labels names 1 runs, 2 files"),
    (["{a}", "--resolution-us", "0"], 2, "--resolution-us: '0': give a number of µs from 0.001"),
    (["{a}", "--resolution-us", "nan"], 2, "--resolution-us: 'nan': give a number of µs"),
    (["{a}", "--resolution-us", "inf"], 2, "--resolution-us: 'inf': give a number of µs"),
    (["{a}", "--resolution-us", "0.0001"], 2, "from 0.001 to"),
    (["{a}", "--min-break-us", "nan"], 2, "--min-break-us: 'nan': give a number of µs from 0"),
    (["{a}", "--min-break-us", "-5"], 2, "--min-break-us: '-5': give a number of µs from 0"),
])
def test_user_errors(runs, tmp_path, args, status, message):
    args = [x.format(a=runs[0], b=runs[1]) for x in args]
    r = report(*args, "-o", tmp_path / "x.pdf")
    assert r.returncode == status
    assert message in r.stderr and "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert not (tmp_path / "x.pdf").exists()


def test_corrupt_file_is_refused(tmp_path):
    bad = tmp_path / "bad.hsr"
    bad.write_bytes(b"not a record file at all" * 10)
    r = report(bad, "-o", tmp_path / "x.pdf")
    assert r.returncode == 1
    assert "bad.hsr" in r.stderr
