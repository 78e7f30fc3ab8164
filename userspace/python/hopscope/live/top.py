"""`hopscope top`: a running router's packets/s, delays, drops, the tracer's
losses and cost, refreshed every second, from a recorder's snapshot
(`--snapshot FILE`) or from a recorder top runs itself (`-- RECORD_ARGS`).
`--once` prints the view once, as text or `--json`, for scripts."""
import argparse
import json
import math
import signal
import sys
import time

from ..record.hist import DELAY_NAMES
from . import screen, snapshot, table
from .recorder import OwnRecorder, RecorderError
from .view import TOLERANCE_NS, WINDOWS, History, view

STALE_S = 10      # --once: a snapshot not rewritten for this long is not live

EPILOG = """\
keys: s next sender (all, each TOS byte), d next delay shown per sender,
      w next window (1 s, 10 s, 60 s, since the start), q quit.
p50, p99 and max are the upper bounds of histogram buckets (9 % wide): the
delay is at most that.

examples:
  hopscope record -n router -i r-s1,r-s2 -O r-rx --aggregate -o day.hsr \\
      --snapshot /run/hopscope.json &
  hopscope top --snapshot /run/hopscope.json
  hopscope top --snapshot /run/hopscope.json --once --json --window 10
  hopscope top -- -n router -i r-s1,r-s2 -O r-rx     # top runs the recorder
  hopscope top -- -n router -i r-s1 -O r-rx -o keep.hsr
"""


def add_arguments(p):
    p.epilog = EPILOG
    p.add_argument("--snapshot", metavar="FILE",
                   help="the snapshot a running `hopscope record --snapshot FILE` rewrites")
    p.add_argument("--once", action="store_true",
                   help="print the view once (over --window) and exit, no full screen")
    p.add_argument("--json", action="store_true", help="with --once: as one JSON object")
    p.add_argument("--window", default="1", choices=[_name(w) for w in WINDOWS],
                   help="seconds the view covers, or since the run's start (default 1)")
    p.add_argument("--sender", type=_tos, metavar="TOS",
                   help="show this TOS byte's delays (default: all senders)")
    p.add_argument("--delay", default="transit", choices=DELAY_NAMES,
                   help="the delay shown per sender (default transit)")
    p.add_argument("record_args", nargs="*", metavar="-- RECORD_ARGS",
                   help="run `hopscope record --aggregate RECORD_ARGS` (-n, -i, -O, ...) "
                        "and show it; stopped when top ends")


def run(args, parser):
    if bool(args.snapshot) == bool(args.record_args):
        parser.error("give --snapshot FILE, or `-- RECORD_ARGS` for a recorder of its own")
    if args.json and not args.once:
        parser.error("--json goes with --once")
    if not args.once:
        try:
            screen.check_terminal()
        except screen.ScreenError as e:
            parser.error(str(e))
    window = None if args.window == "start" else int(args.window)
    choice = (window, args.sender, args.delay)
    # a hang-up (ssh gone) or kill ends top through its finally: the recorder stops too
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on)
    rec = None
    try:
        if args.record_args:
            rec = OwnRecorder(args.record_args)
        path = rec.snapshot if rec else args.snapshot
        failed = rec.failed if rec else (lambda: None)
        if args.once:
            status = _once(path, choice, args.json, failed)
        else:
            screen.run(lambda: snapshot.read(path), choice, failed)
            status = 0
    except (snapshot.SnapshotError, RecorderError, screen.ScreenError) as e:
        print(f"hopscope top: {e}", file=sys.stderr)
        status = 2 if getattr(e, "status", None) == 2 else 1  # the recorder's usage error
    finally:
        if rec:
            code, err = rec.stop()
            if code:  # its own words, now that the screen is gone
                sys.stderr.write(err)
                print(f"hopscope top: the recorder exited with status {code}", file=sys.stderr)
            else:  # its summary is top's screen; what it warned of is not lost
                sys.stderr.write("".join(x for x in err.splitlines(True) if "WARNING" in x))
    if rec and code:
        return 2 if code == 2 else 1
    return status


def _once(path, choice, as_json, failed):
    """the view over the window: a snapshot now, then one a window later"""
    hist = History()
    hist.add(snapshot.read(path))
    first, window = hist.snaps[0], choice[0]
    end = time.monotonic() + (window or 0) + STALE_S
    # until the newest is a window after the first (or the last the run writes)
    while window is not None and not hist.snaps[-1].final and \
            hist.snaps[-1].monotonic_ns - first.monotonic_ns < window * 10**9 - TOLERANCE_NS:
        gone = failed()
        if gone or time.monotonic() > end:
            raise snapshot.SnapshotError(gone or f"{path} was not rewritten for {window + STALE_S}"
                                                 " s: is its recorder running?")
        time.sleep(0.1)
        hist.add(snapshot.read(path))
    v = view(hist, *choice, now_ns=time.time_ns())
    if as_json:
        print(json.dumps(dict({"format": "hopscope-top", "version": 1}, **_finite(v))))
    else:
        print("\n".join(table.lines(v, width=200)))
    return 0


def _finite(x):
    """JSON has no infinity: a delay beyond the last bucket is null (and its
    row's overflow counts it)"""
    if isinstance(x, float) and math.isinf(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def _name(w):
    return "start" if w is None else str(w)


def _tos(s):
    try:
        v = int(s, 0)
    except ValueError:
        v = -1
    if not 0 <= v <= 255:
        raise argparse.ArgumentTypeError(f"a TOS byte is 0..255, not {s!r}")
    return v


def _exit_on(signum, frame):
    raise SystemExit(128 + signum)
