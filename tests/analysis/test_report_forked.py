"""The report's pages drawn in forked workers (report/forked.py): the same
pages in the same order as drawn in one process, and a worker's failure
said plainly, with no process or temporary file left behind."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hopscope.analysis import analyse
from hopscope.record import synth
from hopscope.record.load import load
from hopscope.report import forked, pdf

pytestmark = pytest.mark.slow  # whole reports drawn, serial and forked

# a report in a child Python whose worker drawing the output side fails as
# argv[3] says; then the children still alive, which should be none
FAILING = """
import multiprocessing, os, sys
from hopscope import cli
from hopscope.report import forked, pdf

def fail(f, label, a):
    if sys.argv[3] == "crash":
        os._exit(3)
    raise ValueError("no ink left")
pdf._output_side = fail
forked.workers = lambda jobs: 2
status = cli.main(["report", sys.argv[1], "-o", sys.argv[2]])
print("children", len(multiprocessing.active_children()))
sys.exit(status)
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("forked") / "a.hsr"
    synth.write_synthetic(path, 20000, seed=3)
    return path


def pages_text(path):
    text = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout
    return text.split("\f")[:-1]  # a form feed ends every page


def pages_drawn(path, tmp_path):
    """Each page rasterised: what a reader sees. (Their text, extracted,
    may differ in order: a file's fonts hold the glyphs of its own pages.)"""
    out = tmp_path / path.stem
    out.mkdir()
    subprocess.run(["pdftoppm", "-r", "30", "-gray", str(path), str(out / "p")], check=True)
    return [(out / name).read_bytes() for name in sorted(os.listdir(out))]


def test_forked_pages_are_the_serial_pages_in_order(run, tmp_path):
    df = load(run)
    runs = [("one", df, analyse(df)), ("two", df, analyse(df, min_break_ns=5000))]
    jobs = pdf.jobs(runs)
    serial, parallel = tmp_path / "serial.pdf", tmp_path / "forked.pdf"
    n = forked.write(serial, jobs, processes=1)
    assert forked.write(parallel, jobs, processes=2) == n == 2 + 2 * 11
    want = pages_drawn(serial, tmp_path)
    assert len(want) == n and len(set(want)) == n  # every page its own
    assert pages_drawn(parallel, tmp_path) == want
    text = pages_text(parallel)
    assert "runs side by side" in text[0] and "two: output side" in text[-1]


def test_no_pdfunite_draws_in_one_process(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no pdfunite
    assert forked.workers([1, 2, 3]) == 1


@pytest.mark.parametrize("how, message", [
    ("raise", "drawing a.hsr's output side failed: ValueError: no ink left"),
    ("crash", "a worker drawing the pages ended abruptly"),
])
def test_a_failing_worker_is_said_plainly(run, tmp_path, how, message):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"),
               TMPDIR=str(scratch))
    out = tmp_path / "r.pdf"
    r = subprocess.run([sys.executable, "-c", FAILING, str(run), str(out), how],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1, r.stderr
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert "children 0" in r.stdout
    assert not out.exists()
    assert os.listdir(scratch) == []
