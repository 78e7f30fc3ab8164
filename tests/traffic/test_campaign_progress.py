"""The campaign's progress display: a bar with the ETA redrawn in place on a
terminal, plain lines anywhere else."""
import io
import time

from hopscope.traffic.progress import Progress, clock


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_clock_format():
    assert clock(None) == "?"
    assert clock(0) == "0:00"
    assert clock(65.4) == "1:05"
    assert clock(3723) == "1:02:03"


def test_plain_lines_when_not_a_terminal():
    out, now = io.StringIO(), Clock()
    p = Progress(3, done=1, stream=out, clock_fn=now)
    p.start("a rep 2")
    now.t += 4
    p.finish("sent 10, received 10")
    p.start("b rep 1")
    p.fail("RuntimeError: no")
    p.close()
    lines = out.getvalue().splitlines()
    assert lines == ["campaign: [2/3] a rep 2: started",
                     "campaign: [2/3] a rep 2: done in 4.0 s; sent 10, received 10; 1 left, ETA 0:04",
                     "campaign: [3/3] b rep 1: started",
                     "campaign: [3/3] b rep 1: FAILED: RuntimeError: no"]
    assert "\r" not in out.getvalue() and "\033" not in out.getvalue()


def test_eta_from_earlier_runs_then_from_this_process():
    now = Clock()
    p = Progress(5, done=1, stream=io.StringIO(), estimate=10.0, clock_fn=now)
    assert p.eta() == 40.0  # 4 runs left at the estimate
    p.start("x")
    now.t += 3
    assert p.eta() == 37.0  # the current run is 3 s in
    p.finish()
    assert p.eta() == 9.0  # measured: 3 s a run, 3 left
    assert Progress(2, stream=io.StringIO()).eta() is None  # nothing to go by yet


def test_bar_on_a_terminal_redrawn_in_place_with_eta():
    out, now = Terminal(), Clock()
    p = Progress(4, done=2, stream=out, estimate=20.0, tick=0.01, clock_fn=now)
    p.start("c rep 1")
    now.t += 5
    deadline = time.monotonic() + 5
    while "0:05" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "c rep 1 0:05" in out.getvalue()  # the ticker redrew the elapsed time
    p.finish("ok")
    p.close()
    text = out.getvalue()
    assert "\r\033[K[" in text
    bar = p.bar(80)
    assert bar.startswith("[") and "3/4" in bar and "ETA 0:05" in bar and len(bar) < 80
    assert "campaign: [3/4] c rep 1: done in 5.0 s; ok; 1 left, ETA 0:05\n" in text
    assert text.endswith("\r\033[K")  # close leaves a clean line
    assert "#" * 10 in p.bar(80)  # 3 of 4 filled
