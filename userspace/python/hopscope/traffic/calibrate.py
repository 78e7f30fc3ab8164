"""`hopscope calibrate -o FILE`: each probe's cost, apart from any experiment.

On the testbed (the default): brings up its own testbed (the router's CPU
shielded), sends a constant low-rate UDP stream with D-ITG from sender1,
records it with every optional stage on, and takes the testbed down. On a
router you name (--netns, --in, --out): records it for --seconds while you
send the traffic (keep it low and constant: the packets should find the
router idle). Either way it writes the calibration as JSON (format in
docs/accuracy.md) and prints it as a table; `hopscope record --calibration
FILE` carries it into later recordings, whose describe and report then show
the calibrated floor beside the run's own.
"""
import os
import subprocess
import sys
import tempfile

from ..analysis.calibration import make
from ..files import write_json
from ..record.load import load
from ..record.reader import RecordFileError
from .result import RunError
from .run import HOPSCOPE, require_root, run_condition
from .scenario.load import ScenarioError, parse_scenario

EXAMPLES = """examples:
  sudo hopscope calibrate -o cal.json
      10 s at 1000 pps of 200 B through a testbed of its own
  sudo hopscope calibrate -o cal.json --netns rtr --in eth1 --out eth2 --seconds 30
      a router you name; send a low constant rate through it meanwhile
  sudo hopscope record -n rtr -i eth1 -O eth2 -d 10 -o run.hsr --calibration cal.json
      a recording that carries it: `hopscope describe run.hsr` shows both floors
"""

SCENARIO = """description = "hopscope calibrate: a constant low rate, every stage"
duration = {seconds}
[testbed]
shield = true
[tracer]
stages = ["t0", "tcin", "fwd", "tceg"]
backend = "{backend}"
[senders.sender1]
generator = "ditg"
size = {size}
rate = {rate}
gaps = "constant"
"""


def add_arguments(p):
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="calibration file to write (JSON)")
    p.add_argument("--seconds", type=float, default=10.0, help="how long to record (default 10)")
    p.add_argument("--rate", type=float, default=1000.0,
                   help="testbed: packets/s sender1 sends (default 1000)")
    p.add_argument("--size", type=int, default=200, help="testbed: UDP payload bytes (default 200)")
    p.add_argument("--backend", choices=("auto", "ebpf", "kmod"), default="auto",
                   help="recorder backend (default auto)")
    p.add_argument("--prefix", default="hs-cal-",
                   help="testbed: namespace prefix of its testbed (default hs-cal-)")
    p.add_argument("--netns", help="a router you name: its network namespace")
    p.add_argument("--in", dest="ins", metavar="IF[,IF]", help="a router you name: inputs")
    p.add_argument("--out", dest="outs", metavar="IF[,IF]", help="a router you name: outputs")
    p.add_argument("--keep", metavar="RUN.hsr", help="keep the recording it was made from here")
    p.epilog = EXAMPLES


def run(args, parser):
    named = [args.netns, args.ins, args.outs]
    if any(named) and not (args.ins and args.outs):
        parser.error("a router you name needs --in and --out (and --netns unless it is this "
                     "namespace)")
    if not 0 < args.seconds <= 3600:
        parser.error("--seconds must be above 0 and at most 3600")
    if not 1 <= args.rate <= 100_000 or not 16 <= args.size <= 1472:
        parser.error("--rate must be 1..100000 pps and --size 16..1472 bytes")
    try:
        require_root()
        with tempfile.TemporaryDirectory(prefix="hopscope-calibrate-") as tmp:
            if args.ins:
                path, traffic = _record_named(args, tmp)
            else:
                path, traffic = _record_testbed(args, tmp)
            df = load(path, strict=True)
            cal = make(df, traffic)
            if args.keep:
                os.replace(path, args.keep)
    except (RunError, RecordFileError, ValueError) as e:
        print(f"hopscope calibrate: {e}", file=sys.stderr)
        return 1
    except ScenarioError as e:  # our own scenario: a rate or size it refuses
        print(f"hopscope calibrate: {e}", file=sys.stderr)
        return 2
    if cal["records"] == 0:
        print("hopscope calibrate: no packet was forwarded through the router: nothing to "
              "calibrate (did traffic flow through --in to --out?)", file=sys.stderr)
        return 1
    write_json(args.output, cal)
    print(table(cal))
    print(f"{args.output}: written")
    return 0


def _record_testbed(args, tmp):
    text = SCENARIO.format(seconds=args.seconds, backend=args.backend, size=args.size,
                           rate=args.rate)
    cond = parse_scenario(text, "<calibrate>").conditions()[0]
    res = run_condition(cond, tmp, prefix=args.prefix)
    # what D-ITG sent: a busy machine may hold it below the rate asked
    traffic = {"where": "testbed", "generator": "ditg", "gaps": "constant",
               "rate_pps": args.rate, "size": args.size, "seconds": args.seconds,
               "sent": sum(res.sent.values()), "received": sum(res.received.values())}
    return os.path.join(tmp, "run.hsr"), traffic


def _record_named(args, tmp):
    path = os.path.join(tmp, "run.hsr")
    argv = [HOPSCOPE, "record", "-q", "--in", args.ins, "--out", args.outs, "--stages", "all",
            "--backend", args.backend, "-d", str(args.seconds), "-o", path]
    argv += ["--netns", args.netns] if args.netns else []
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        raise RunError(f"the recorder failed (exit {r.returncode}): {r.stderr.strip()[-500:]}")
    traffic = {"where": "named router", "netns": args.netns, "in": args.ins, "out": args.outs,
               "seconds": args.seconds}
    return path, traffic


def table(cal):
    """The calibration as text: per stage, per core delay, idle delays."""
    lines = [f"calibration: {cal['records']} packets, backend {cal['backend']}, kernel "
             f"{cal['kernel']}, clocksource {cal['clock'].get('clocksource')}",
             f"{'probe':<8} {'floor ns':>9} {'mean':>7} {'spread':>8} {'p99':>7} {'max':>8} "
             f"{'samples':>8}"]
    for s, c in cal["stages"].items():
        lines.append(f"{s:<8} {c['floor_ns']:>9.0f} {c['mean_ns']:>7.0f} {c['spread_ns']:>8.0f} "
                     f"{c['p99_ns']:>7} {c['max_ns']:>8} {c['samples']:>8}")
    lines.append(f"{'delay':<8} {'floor ns':>9} {'mean':>7} {'spread':>8}   "
                 "probes (core stages only)")
    for d, f in cal["delays"].items():
        lines.append(f"{d:<8} {f['floor_ns']:>9.0f} {f['mean_ns']:>7.0f} {f['spread_ns']:>8.0f}   "
                     + " + ".join(f["stages"]))
    lines.append(f"{'idle':<8} {'p50 ns':>9} {'p99':>8}   packets that found the router idle")
    for d, f in cal["idle"].items():
        lines.append(f"{d:<8} {f['p50_ns']:>9.0f} {f['p99_ns']:>8.0f}   {f['packets']}")
    return "\n".join(lines)

