"""The full-screen `hopscope top`: plain curses (no colours), redrawn a few
times a second from the latest snapshot, keys s/d/w/q; any size (what does
not fit is cut), resizes included. Works over ssh on any terminal curses
knows; one it does not gives ScreenError, which says to use --once."""
import curses
import os
import sys
import time

from . import table
from .snapshot import SnapshotError
from .view import History, turn, view

TICK_MS = 200     # keys answered this fast
READ_S = 0.5      # the snapshot is rewritten every second: read twice as often


class ScreenError(Exception):
    """This terminal cannot show the screen."""


def check_terminal():
    """ScreenError unless stdout is a terminal curses can drive."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ScreenError("not a terminal: use --once (or --once --json) in scripts and pipes")
    try:
        curses.setupterm(os.environ.get("TERM"), sys.stdout.fileno())
    except curses.error as e:
        raise ScreenError(f"cannot use the terminal (TERM={os.environ.get('TERM', '')!r}: "
                          f"{e}): set TERM (e.g. TERM=xterm or vt100), or use --once") from None


def run(read, choice, failed=lambda: None):
    """Until q: read() gives the latest Snapshot (SnapshotError: why not);
    choice (window, sender, delay) to start with; failed() why the data
    stopped (its recorder gone), or None."""
    try:
        curses.wrapper(_loop, read, choice, failed)
    except curses.error as e:
        raise ScreenError(f"the terminal failed: {e}") from None


def _loop(scr, read, choice, failed):
    try:
        curses.curs_set(0)
    except curses.error:
        pass  # a terminal without an invisible cursor: it stays visible
    scr.timeout(TICK_MS)
    hist, problem, due = History(), None, 0.0
    while True:
        if time.monotonic() >= due:
            due = time.monotonic() + READ_S
            try:
                hist.add(read())
                problem = None
            except SnapshotError as e:
                problem = str(e)
            problem = failed() or problem
        _draw(scr, hist, choice, problem)
        key = scr.getch()
        if key in (ord("q"), ord("Q")):
            return
        if hist.snaps and 0 <= key < 256:
            choice = turn(chr(key), *choice, hist.snaps[-1])


def _draw(scr, hist, choice, problem):
    scr.erase()
    height, width = scr.getmaxyx()
    if hist.snaps:
        rows = table.lines(view(hist, *choice, now_ns=time.time_ns()), width - 1)
    else:
        rows = ["waiting for the recorder's first snapshot ..."]
    for y, line in enumerate(rows[:height - 1]):
        scr.addnstr(y, 0, line, width - 1)
    # the last line: what went wrong, else what the keys do
    scr.addnstr(height - 1, 0, problem or table.KEYS, width - 1,
                curses.A_REVERSE if problem else curses.A_NORMAL)
    scr.refresh()
