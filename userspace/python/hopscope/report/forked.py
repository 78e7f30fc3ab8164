"""A PDF's pages drawn side by side in forked worker processes, then put in
page order by pdfseparate and pdfunite (poppler-utils).

matplotlib holds the GIL while it lays out and writes a page, so threads
would only take turns; processes draw at once, one per CPU. A forked worker
inherits the run's frame and analysis as they are: nothing is pickled but
a job's index and where its pages went. Each worker draws every job it takes
into one file of its own, so a font is embedded once a worker (a quarter of
a second each, with TrueType), not once a job.
"""
import multiprocessing
import os
import queue
import shutil
import subprocess
import tempfile

from matplotlib.backends.backend_pdf import PdfPages

_jobs = ()  # the jobs of the write in progress, for the forked workers


def workers(jobs):
    """How many processes draw the jobs: one per CPU this process may use,
    no more than the jobs; 1 (no fork) without poppler's tools to join them."""
    if shutil.which("pdfunite") is None or shutil.which("pdfseparate") is None:
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
            parts = [os.path.join(tmp, f"worker{k}.pdf") for k in range(processes)]
            placed = _draw_all(parts, processes)
            for k in {k for k, _, n in placed if n}:  # a worker with pages
                _poppler("pdfseparate", parts[k], os.path.join(tmp, f"w{k}-%d.pdf"))
            pages = []
            for k, first, n in placed:  # pdfseparate counts from 1
                pages += [os.path.join(tmp, f"w{k}-{first + p}.pdf") for p in range(1, n + 1)]
            _poppler("pdfunite", *pages, path)
            return len(pages)
    finally:
        _jobs = ()


def _poppler(tool, *args):
    try:
        subprocess.run([tool, *args], check=True, capture_output=True)
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"{tool} could not put the pages in order: "
                           f"{e.stderr.decode(errors='replace').strip()}") from None


def _draw_all(parts, processes):
    """[(worker, its first page, pages)] for each job in order; worker k draws
    into parts[k]. The jobs are taken from the last, where a report's costly
    pages (whole-run series) are, so that the short ones fill in at the end."""
    ctx = multiprocessing.get_context("fork")
    tasks, done = ctx.SimpleQueue(), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(k, parts[k], tasks, done), daemon=True)
             for k in range(processes)]
    placed, finished = [None] * len(_jobs), 0
    try:
        for p in procs:
            p.start()
        for i in [*reversed(range(len(_jobs))), *[None] * processes]:
            tasks.put(i)
        while finished < processes:
            try:
                msg = done.get(timeout=0.5)
            except queue.Empty:
                # a worker that ended without saying so was killed
                if any(p.exitcode not in (None, 0) for p in procs):
                    raise RuntimeError("a worker drawing the pages ended abruptly (killed? out "
                                       "of memory?)") from None
                continue
            if msg[0] == "done":
                finished += 1
            elif msg[0] == "failed":
                _, i, error = msg
                raise RuntimeError(f"drawing {_jobs[i][0]} failed: {error}")
            else:
                _, i, k, first, n = msg
                placed[i] = (k, first, n)
        return placed
    finally:
        for p in procs:
            if p.pid is not None:
                if p.is_alive():
                    p.kill()
                p.join()
        done.close()


def _worker(k, part, tasks, done):
    """Draws the jobs it takes into part, saying where each one's pages went;
    a job that raises is said, and the worker stops."""
    first = 0
    with PdfPages(part) as pdf:
        while (i := tasks.get()) is not None:
            try:
                _, draw, args = _jobs[i]
                n = draw(pdf, *args)
            except Exception as e:  # said in the parent, as the job's failure
                done.put(("failed", i, f"{type(e).__name__}: {e}"))
                return
            done.put(("page", i, k, first, n))
            first += n
    done.put(("done",))
