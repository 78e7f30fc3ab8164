"""A PDF's pages drawn side by side in forked worker processes, one file per
job, then joined in page order by pdfunite (poppler-utils).

matplotlib holds the GIL while it lays out and writes a page, so threads
would only take turns; processes draw at once, one per CPU. A forked worker
inherits the run's frame and analysis as they are: nothing is pickled but
a job's index and its page count.
"""
import multiprocessing
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from matplotlib.backends.backend_pdf import PdfPages

_jobs = ()  # the jobs of the write in progress, for the forked workers


def workers(jobs):
    """How many processes draw the jobs: one per CPU this process may use,
    no more than the jobs; 1 (no fork) without pdfunite to join their files."""
    if shutil.which("pdfunite") is None:
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), len(jobs)))


def write(path, jobs, processes=None):
    """jobs: [(what, draw, args)], draw(pdf, *args) adds pages to a PdfPages
    and returns how many; their pages go to path in the jobs' order. Returns
    the page count. processes: None = workers(jobs)."""
    processes = workers(jobs) if processes is None else processes
    if processes < 2:
        with PdfPages(path) as pdf:
            return sum(draw(pdf, *args) for _, draw, args in jobs)
    global _jobs
    _jobs = jobs
    try:
        with tempfile.TemporaryDirectory(prefix="hopscope-report-") as tmp:
            parts = [os.path.join(tmp, f"{i:04d}.pdf") for i in range(len(jobs))]
            pages = _draw_all(parts, processes)
            subprocess.run(["pdfunite", *(p for p, n in zip(parts, pages) if n), path],
                           check=True, capture_output=True)
            return sum(pages)
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"pdfunite could not join the pages: "
                           f"{e.stderr.decode(errors='replace').strip()}") from None
    finally:
        _jobs = ()


def _draw_all(parts, processes):
    """Each job's page count, its pages in parts[i]; the jobs started from the
    last, where a report's costly pages (whole-run series) are, so that the
    short ones fill in at the end."""
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(processes, mp_context=ctx) as pool:
        futures = {i: pool.submit(_draw, i, parts[i]) for i in reversed(range(len(parts)))}
        pages = []
        for i in range(len(parts)):
            try:
                pages.append(futures[i].result())
            except BrokenProcessPool:
                pool.shutdown(cancel_futures=True)
                raise RuntimeError("a worker drawing the pages ended abruptly (killed? out of "
                                   "memory?)") from None
            except Exception as e:  # the worker's own error, raised again here
                pool.shutdown(cancel_futures=True)
                raise RuntimeError(f"drawing {_jobs[i][0]} failed: "
                                   f"{type(e).__name__}: {e}") from None
        return pages


def _draw(i, part):
    _, draw, args = _jobs[i]
    with PdfPages(part) as pdf:
        return draw(pdf, *args)
