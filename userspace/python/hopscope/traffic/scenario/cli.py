"""`hopscope scenario check FILE...` and `hopscope scenario run FILE -o DIR`."""
import argparse
import os
import sys

from .load import ScenarioError, load_scenario


def add_arguments(p):
    sub = p.add_subparsers(dest="action", required=True, metavar="check|run")
    c = sub.add_parser("check", help="validate scenario files and list their conditions")
    c.add_argument("files", nargs="+", metavar="FILE")
    add_lossless_arguments(c)
    r = sub.add_parser("run", help="run each condition once (needs root)")
    r.add_argument("file", metavar="FILE")
    r.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="one folder per condition goes here: DIR/CONDITION/")
    r.add_argument("--prefix", default="hs-", metavar="P",
                   help="testbed namespace prefix (HS_PREFIX; default hs-)")
    r.add_argument("--condition", action="append", metavar="NAME",
                   help="run only this condition (repeatable)")
    r.add_argument("--no-record", action="store_true", help="run the traffic without the recorder")
    add_lossless_arguments(r)
    r.add_argument("--duration", type=_seconds, metavar="S",
                   help="every sender sends for S seconds instead of its duration or count "
                        "(a quick check of what the generators reach)")
    p.epilog = ("The format: traffic/README.md. A bad file is refused with file:line: problem\n"
                "and exit status 2, before anything starts.\n\n"
                "examples:\n"
                "  hopscope scenario check traffic/paper/*.toml\n"
                "  hopscope scenario check traffic/paper/type1.toml --lossless "
                "results/paper/type1/throughput.json\n"
                "  sudo hopscope scenario run traffic/examples/quick.toml -o results/quick/")


def add_lossless_arguments(p):
    p.add_argument("--lossless", metavar="FILE",
                   help="run each condition at the total rate found lossless for it in FILE "
                        "(a throughput.json of `hopscope throughput` on this scenario), the "
                        "senders' split kept: the paper's critical conditions on this router")
    p.add_argument("--fraction", type=float, default=1.0, metavar="F",
                   help="with --lossless: F times that rate (default 1)")


def load_for(args, path):
    """The scenario at path, at its lossless rates when --lossless asks."""
    scenario = load_scenario(path)
    if args.lossless:
        return scenario.at_lossless(args.lossless, args.fraction)
    if args.fraction != 1.0:
        raise ScenarioError("--fraction needs --lossless FILE: a fraction of what?")
    return scenario


def run(args, parser):
    if args.action == "check":
        return _check(args)
    try:
        scenario = load_for(args, args.file)
    except ScenarioError as e:
        print(e, file=sys.stderr)
        return 2
    conds = scenario.conditions()
    if args.condition:
        unknown = sorted(set(args.condition) - {c.name for c in conds})
        if unknown:
            print(f"hopscope scenario: no condition {', '.join(unknown)} in {args.file}; it has: "
                  + ", ".join(c.name for c in conds), file=sys.stderr)
            return 2
        conds = [c for c in conds if c.name in args.condition]
    if args.duration:
        conds = [c.with_duration(args.duration) for c in conds]
    from ...report.path import summary as path_summary
    from ..run import RunError, run_condition
    failed = 0
    for i, cond in enumerate(conds, 1):
        out = os.path.join(args.output, cond.name)
        print(f"[{i}/{len(conds)}] {cond.name}: {describe(cond)}", file=sys.stderr)
        try:
            r = run_condition(cond, out, prefix=args.prefix, record=not args.no_record)
        except RunError as e:
            print(f"  FAILED: {e}", file=sys.stderr)
            failed += 1
            continue
        # the truth is the first router's: "router" alone, "r1" on a chain
        first = "router" if r.path is None else r.path.hops[0].router
        for name in r.sent:
            line = f"  {name}: sent {r.sent[name]}, received {r.received[name]}"
            t = (r.truth or {}).get(name) or {}
            if "forwarded" in t:
                line += (f"; {first}: forwarded {t['forwarded']}, dropped {t['dropped']}, "
                         f"untraced {t['untraced']}, never reached it {t['not_recorded']}")
            print(line, file=sys.stderr)
        if r.path is not None:
            for label, text in path_summary(r.path):
                print(f"  {label:<11} {text}", file=sys.stderr)
        print(f"  {out}: {r.seconds:.1f} s", file=sys.stderr)
    return 1 if failed else 0


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"'{text}': give seconds, more than 0")
    return value


def _check(args):
    status = 0
    for path in args.files:
        try:
            s = load_for(args, path)
        except ScenarioError as e:
            print(e, file=sys.stderr)
            status = 2
            continue
        conds = s.conditions()
        secs = sum(c.duration * c.repetitions for c in conds)
        runs = sum(c.repetitions for c in conds)
        print(f"{path}: OK: {_plural(len(conds), 'condition')}, {_plural(runs, 'run')}, "
              f"{secs:.0f} s of traffic")
        for c in conds:
            print(f"  {c.name}: {describe(c)}")
    return status


def _plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def describe(cond):
    """One line: testbed, then each sender's traffic."""
    tb = cond.testbed
    shape = tb["shape"] if isinstance(tb["shape"], str) else \
        ", ".join(f"{k} {v}" for k, v in tb["shape"].items())
    parts = [f"{tb['mode']}" + (f", {tb['routers']} routers" if tb["routers"] > 1 else "")
             + (f", {shape}" if shape != "none" else "")
             + (f", inputs {tb['shape_in']}" if tb["shape_in"] != "none" else "")
             + (", sink" if tb["sink"] else "")
             + (", shield" if tb["shield"] else "")]
    for s in cond.senders:
        size = s.size["value"] if s.size["dist"] == "constant" else \
            f"{s.size['dist']}({', '.join(f'{v:g}' for k, v in s.size.items() if k != 'dist')})"
        gaps = s.gaps["dist"] + (f"({s.gaps['shape']:g})" if "shape" in s.gaps else "")
        amount = f"{s.count} pkt" if s.count else f"{s.duration:g} s"
        parts.append(f"{s.name} {s.generator} TOS {s.tos} {size} B {s.rate:g} pps {gaps} {amount}")
    return "; ".join(parts)
