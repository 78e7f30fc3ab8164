"""Progress of a series of runs (campaign runs, throughput trials) on stderr.

On a terminal: one bar redrawn in place every second, with the current run's
elapsed time and the ETA. Anywhere else (a log file, CI): one plain line when
a run starts and one when it ends, so a log reads top to bottom.
"""
import shutil
import sys
import threading
import time


def clock(seconds):
    """1:05, 1:02:03; '?' when unknown."""
    if seconds is None:
        return "?"
    s = max(0, int(round(seconds)))
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """total runs, of which done were finished before (a resumed campaign).

    estimate: seconds per run to assume until a run finishes here (e.g. the
    mean of earlier invocations' runs); without it the ETA waits for one.
    """

    def __init__(self, total, done=0, what="campaign", stream=None, estimate=None,
                 tick=1.0, clock_fn=time.monotonic):
        self.total, self.done, self.what = total, done, what
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.estimate, self.tick, self.now = estimate, tick, clock_fn
        self.durations = []  # seconds of each run finished by this process
        self.label, self.started = None, None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = None

    # ---- events ----

    def start(self, label):
        with self._lock:
            self.label, self.started = label, self.now()
            if self.tty:
                self._draw()
            else:
                self._line(f"[{self.done + 1}/{self.total}] {label}: started")
        if self.tty and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def finish(self, note=""):
        """The current run finished; note says how it went (counts)."""
        with self._lock:
            seconds = self.now() - self.started
            label, self.label, self.started = self.label, None, None
            self.durations.append(seconds)
            self.done += 1
            left = self.total - self.done
            self._line(f"[{self.done}/{self.total}] {label}: done in {seconds:.1f} s"
                       + (f"; {note}" if note else "")
                       + (f"; {left} left, ETA {clock(self.eta())}" if left else ""))

    def fail(self, error):
        """The current run did not finish: it counts as not done."""
        with self._lock:
            label, self.label, self.started = self.label, None, None
            self._line(f"[{self.done + 1}/{self.total}] {label}: FAILED: {error}")

    def message(self, text):
        with self._lock:
            self._line(text)

    def close(self):
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        with self._lock:
            if self.tty:
                self.stream.write("\r\033[K")
                self.stream.flush()

    # ---- what is shown ----

    def per_run(self):
        """Seconds one run takes: measured here, else the estimate, else None."""
        if self.durations:
            return sum(self.durations) / len(self.durations)
        return self.estimate

    def eta(self):
        """Seconds until every run is done, or None while unknown."""
        per = self.per_run()
        if per is None:
            return None
        left = self.total - self.done
        if self.started is not None:  # the current run is part done
            return max(0.0, left * per - (self.now() - self.started))
        return left * per

    def bar(self, width=None):
        """The one-line bar a terminal shows."""
        width = width or shutil.get_terminal_size((80, 24)).columns
        elapsed = "" if self.started is None else f" {clock(self.now() - self.started)}"
        tail = (f" {self.done}/{self.total} {self.label or ''}{elapsed}"
                f"  ETA {clock(self.eta())}")
        cells = max(10, min(40, width - len(tail) - 3))
        filled = int(cells * self.done / self.total) if self.total else cells
        line = f"[{'#' * filled}{'.' * (cells - filled)}]{tail}"
        return line[:width - 1]

    def _line(self, text):
        """A permanent line; on a terminal the bar is redrawn under it."""
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(f"{self.what}: {text}\n")
        if self.tty and self.label is not None:
            self.stream.write(self.bar())
        self.stream.flush()

    def _draw(self):
        self.stream.write("\r\033[K" + self.bar())
        self.stream.flush()

    def _tick(self):
        while not self._stop.wait(self.tick):
            with self._lock:
                if self.label is not None:
                    self._draw()
